"""What every record format shares: the error that names game, move and field, reading a
record object, checking its ``game_id``, turning a schema refusal into that error, and
writing a record back as one JSON line.

Each family reads its own records on top of these (:mod:`domain.rummy13.records`,
:mod:`domain.red3.records`); which family a record belongs to is the variant registry's
question (:mod:`replays.records.codec`).

>>> str(RecordError("not a card", game_id="G1", move=4, field="card"))
"G1: move 4, field 'card': not a card"
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

from pydantic import BaseModel, ValidationError

from domain.cards import Card
from domain.record_schema import common as schema
from domain.timestamps import format_time

TOO_DEEP = "nested too deeply to be a game record"


class RecordError(ValueError):
    """A record that does not follow docs/record-format.md; says which game, move and field.

    ``str(error)`` is ``"GAME: move 4, field 'card': reason"``; :attr:`detail` is the same
    without the game id (the ``settle`` output carries the game id in its own key).
    """

    def __init__(
        self,
        reason: str,
        *,
        game_id: str | None = None,
        move: int | None = None,
        field: str | None = None,
        line: int | None = None,
    ):
        self.reason = reason
        self.game_id = game_id
        self.move = move
        self.field = field
        self.line = line
        super().__init__(str(self))

    @property
    def detail(self) -> str:
        where = []
        if self.line is not None and self.game_id is None:
            where.append(f"line {self.line}")
        if self.move is not None:
            where.append(f"move {self.move}")
        if self.field is not None:
            where.append(f"field '{self.field}'")
        return ", ".join(where) + ": " + self.reason if where else self.reason

    def __str__(self) -> str:
        return f"{self.game_id}: {self.detail}" if self.game_id else self.detail


# The header checks every record shape shares (13-card games and Red 3 matches alike).
def record_object(obj: Any) -> Mapping:
    """A record as a mapping: JSON text is decoded, anything but an object is refused."""
    if isinstance(obj, str | bytes):
        try:
            obj = json.loads(obj)
        except ValueError as error:
            raise RecordError(f"not valid JSON: {error}") from None
        except RecursionError:
            raise RecordError(f"not valid JSON: {TOO_DEEP}") from None
    if not isinstance(obj, Mapping):
        raise RecordError("a record must be a JSON object")
    return obj


def parse_with_game_id(obj: Mapping, parse: Callable[[Mapping, str], Any]) -> Any:
    """Check ``game_id``, then ``parse(obj, game_id)``; any error it raises names the game."""
    game_id = obj.get("game_id")
    if not isinstance(game_id, str) or not _ID.match(game_id):
        raise RecordError(
            "missing"
            if game_id is None
            else f"{schema.short(game_id)} is not {schema.ID_EXPECTED}",
            field="game_id",
        )
    try:
        return parse(obj, game_id)
    except RecordError as error:
        error.game_id = game_id
        error.args = (str(error),)
        raise


_ID = re.compile(schema.ID_PATTERN)


def validated(model: type[BaseModel], obj: Any, what: str, *, moves_apart: bool = False) -> Any:
    """``obj`` validated by ``model`` (domain/record_schema); its first refusal is a
    :class:`RecordError` naming the field (``moves_apart``: a 13-card move by its index)."""
    try:
        return model.model_validate(obj)
    except ValidationError as error:
        raise refusal(error, obj, what, moves_apart=moves_apart) from None


_MOVE_PATH = re.compile(r"^moves\[(\d+)\]\.?(.*)$")


def refusal(
    error: ValidationError,
    obj: Any,
    what: str,
    *,
    move: int | None = None,
    prefix: str | None = None,
    moves_apart: bool = False,
) -> RecordError:
    """The first refusal of ``error`` as a :class:`RecordError`: ``field`` is the dotted path
    (under ``prefix``). A 13-card move is named by its index, as the rules' errors name it:
    ``move`` for a single move, or ``moves_apart`` to take it out of a whole record's path
    (``move 3, field 'card'`` rather than ``field 'moves[3].card'``)."""
    problem = schema.problems(error, obj, what)[0]
    path = problem.path
    if prefix:
        path = f"{prefix}.{path}" if path and not path.startswith("[") else prefix + path
    if moves_apart:
        found = _MOVE_PATH.match(path)
        if found:
            move, path = int(found.group(1)), found.group(2)
    return RecordError(problem.reason, move=move, field=path or None)


def dump_record(record: Any, **extra: Any) -> str:
    """One JSON line; ``extra`` fields (such as ``settlement`` on export) go at the end."""
    obj = record.to_dict() if hasattr(record, "to_dict") else dict(record)
    obj.update(extra)
    return json.dumps(obj, ensure_ascii=False, separators=(", ", ": "), default=_json_default)


def _json_default(value: Any) -> Any:
    if isinstance(value, Decimal | Card):
        return str(value)
    if isinstance(value, datetime):
        return format_time(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")
