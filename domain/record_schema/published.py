"""The JSON Schema documents generated from the record models, by name.

These are what ``docs/schema/*.json`` hold and ``/api/v1/schemas/<name>.json`` serves; the
ingest API's OpenAPI document takes its request bodies from :func:`openapi_components`.
Nothing here is kept by hand: change a model and regenerate (``rummy-ledger schema --write``).

What JSON Schema cannot say is checked by the readers alone: that a player named anywhere is
seated, that seats and ids are not repeated, that a raise max is not below the starting point
value, that a round is listed at its own number; a time with an offset at the very edges of
1970-2100; and a whole number written as ``5.0`` in a record file (JSON Schema calls it an
integer, the importer refuses it; the API reads it as ``5`` before validating). The rules of
play are the aggregates'.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter
from pydantic.json_schema import GenerateJsonSchema

from domain.record_schema.common import CARD_EXPECTED, CARD_PATTERN
from domain.variant_base import PublishedSchema

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


def published() -> dict[str, PublishedSchema]:
    """Every registered family's documents by name (each family's ``Variant.schemas``;
    Points and Raise share theirs), in registration order."""
    from domain import variants

    found: dict[str, PublishedSchema] = {}
    for variant in variants.all_variants():
        for schema in variant.schemas():
            found.setdefault(schema.name, schema)
    return found


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema document called ``name`` (a key of :func:`published`)."""
    schema = published()[name]
    body = schema.adapter.json_schema(schema_generator=RecordJsonSchema)
    return {
        "$schema": DIALECT,
        "title": schema.title,
        "description": schema.description,
        **_without_title(body),
    }


def _without_title(schema: dict) -> dict:
    return {key: value for key, value in schema.items() if key not in ("title", "description")}


def openapi_components() -> dict[str, Any]:
    """``components.schemas`` for the API's request bodies (and ``Card``, which the
    responses use too), refs pointing within ``#/components/schemas``."""
    keys = [(s.openapi, "validation", s.adapter) for s in published().values() if s.openapi]
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
