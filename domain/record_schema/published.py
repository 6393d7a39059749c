"""The JSON Schema documents generated from the record models, by name.

These are what ``docs/schema/*.json`` hold and ``/api/v1/schemas/<name>.json`` serves; the
ingest API's OpenAPI document takes its request bodies from :func:`openapi_components`.
Nothing here is kept by hand: change a model and regenerate (``rummy-ledger schema --write``).

What JSON Schema cannot say is checked by the readers alone: that a player named anywhere is
seated, that seats and ids are not repeated, that a raise max is not below the starting point
value, that a round is listed at its own number; a time with an offset at the very edges of
1970-2100; and a whole number written as ``5.0`` (JSON Schema calls it an integer, the
readers refuse it). The rules of play are the aggregates'.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter
from pydantic.json_schema import GenerateJsonSchema

from domain.record_schema.api import MOVE_BODY, GameHeader, SettleRequest
from domain.record_schema.common import CARD_EXPECTED, CARD_PATTERN
from domain.record_schema.game13 import GameRecord
from domain.red3.record_schema import RED3_STEP_BODY, Red3GameHeader, Red3Record

DIALECT = "https://json-schema.org/draft/2020-12/schema"


class RecordJsonSchema(GenerateJsonSchema):
    """Pydantic's generator, but an object keyed by ids says that every key must be an id:
    ``patternProperties`` alone would let any other key through unchecked."""

    def dict_schema(self, schema):
        out = super().dict_schema(schema)
        patterns = out.get("patternProperties")
        if patterns and len(patterns) == 1 and "additionalProperties" not in out:
            ((pattern, values),) = patterns.items()
            del out["patternProperties"]
            out["propertyNames"] = {"pattern": pattern}
            out["additionalProperties"] = values
        return out


# name: (what validates it, title, description)
SCHEMAS: dict[str, tuple[TypeAdapter, str, str]] = {
    "game": (
        TypeAdapter(GameRecord),
        "rummy-ledger/game@1",
        "One 13-card game record (Points or Raise Rummy), docs/record-format.md.",
    ),
    "red3": (
        TypeAdapter(Red3Record),
        "rummy-ledger/red3@1",
        "One Red 3 Rummy match record, docs/red3-format.md.",
    ),
    "api-game": (
        TypeAdapter(GameHeader),
        "POST /api/v1/games",
        "A game record's header and deal, without moves or figures (docs/operator-api.md).",
    ),
    "api-move": (
        MOVE_BODY,
        "POST /api/v1/games/{game_id}/moves",
        "One move of a game record and its 0-based index, seq (docs/operator-api.md).",
    ),
    "api-red3-game": (
        TypeAdapter(Red3GameHeader),
        "POST /api/v1/games (Red 3)",
        "A Red 3 match record's header, without rounds (docs/operator-api.md).",
    ),
    "api-red3-step": (
        RED3_STEP_BODY,
        "POST /api/v1/games/{game_id}/moves (Red 3)",
        "One step of a Red 3 match, a round's deal or a move, and its seq (docs/operator-api.md).",
    ),
    "api-settle": (
        TypeAdapter(SettleRequest),
        "POST /api/v1/games/{game_id}/settle",
        "Optionally, the operator's reported figures (docs/operator-api.md).",
    ),
}


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema document called ``name`` (a key of :data:`SCHEMAS`)."""
    adapter, title, description = SCHEMAS[name]
    body = adapter.json_schema(schema_generator=RecordJsonSchema)
    return {"$schema": DIALECT, "title": title, "description": description, **_without_title(body)}


def _without_title(schema: dict) -> dict:
    return {key: value for key, value in schema.items() if key not in ("title", "description")}


# The request bodies of /api/v1/openapi.json, by the names its paths refer to.
OPENAPI_BODIES = {
    "GameHeader": "api-game",
    "Move": "api-move",
    "SettleRequest": "api-settle",
    "Red3GameHeader": "api-red3-game",
    "Red3Step": "api-red3-step",
}


def openapi_components() -> dict[str, Any]:
    """``components.schemas`` for the API's request bodies (and ``Card``, which the
    responses use too), refs pointing within ``#/components/schemas``."""
    keys = [(name, "validation", SCHEMAS[body][0]) for name, body in OPENAPI_BODIES.items()]
    tops, defs = TypeAdapter.json_schemas(
        keys, ref_template="#/components/schemas/{model}", schema_generator=RecordJsonSchema
    )
    components: dict[str, Any] = dict(defs.get("$defs", {}))
    for (name, _mode), schema in tops.items():
        if "$ref" in schema:  # a model: its definition is already among the defs
            target = schema["$ref"].rsplit("/", 1)[1]
            if target != name:
                components[name] = components.pop(target)
        else:
            components[name] = schema
    components["Card"] = {
        "type": "string",
        "pattern": CARD_PATTERN,
        "description": f"Card text: {CARD_EXPECTED}; written back as AS, TH, JK.",
        "examples": ["AS", "TH", "7C", "JK"],
    }
    return dict(sorted(components.items()))
