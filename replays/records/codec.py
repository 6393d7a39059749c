"""Game records (docs/record-format.md, ``rummy-ledger/game@1``) read into typed values and written back.

One module reads and writes records, apart from the rules (the aggregate checks every move).
The *shape* (known fields, card text, decimal strings and every bound, who is at the table)
is declared once in :mod:`domain.rummy13.record_schema`; this module validates with it and
builds the domain's values from the result. A bad record raises :class:`RecordError`, which
names the game, the move index (0-based, the same number as the ingest API's ``seq``) and
the field:

>>> parse_record({"format": "rummy-ledger/game@1", "game_id": "G1"})
Traceback (most recent call last):
...
domain.records.RecordError: G1: field 'variant': missing

Parsing and writing round-trip: ``parse_record(record.to_dict()) == record``, and
:func:`dump_record` gives one deterministic JSON line (the canonical form compared when the
same game is imported twice).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import IO, Any

from domain import variants
from domain.record_schema import common as schema
from domain.records import TOO_DEEP, RecordError, record_object
from domain.rummy13.game import Game
from domain.rummy13.records import GameRecord, explain_game, parse_game_record


def parse_record(obj: Any) -> GameRecord:
    """Read one record (a dict, or its JSON text) into a :class:`GameRecord`."""
    obj = record_object(obj)
    variant = variants.for_record(obj)  # each family parses its own record shape
    if variant is None:  # no registered format: the 13-card parser names the bad field
        return parse_game_record(obj)
    return variant.parse_record(obj)


def read_records(lines: Iterable[str | bytes]) -> Iterator[tuple[int, GameRecord | RecordError]]:
    """Yield ``(line number, record or RecordError)`` for each non-blank JSON line."""
    for number, line in enumerate(lines, start=1):
        parsed = read_record(number, line)
        if parsed is not None:
            yield number, parsed


def read_record(number: int, line: str | bytes) -> GameRecord | RecordError | None:
    """Line ``number`` of a JSON Lines stream as a record, or the RecordError that refuses
    it (None: a blank line). ``import --jobs`` reads each worker's lines with it."""
    if not line.strip():
        return None
    if _line_bytes(line) > schema.LINE_BYTES_MAX:
        return RecordError(
            f"the line is longer than {schema.LINE_LIMIT_TEXT}: "
            "a record line must be at most 1,048,576 bytes",
            line=number,
        )
    try:
        obj = json.loads(line)
    except ValueError as error:
        return RecordError(f"not valid JSON: {error}", line=number)
    except RecursionError:  # a hostile line: arrays in arrays thousands deep
        return RecordError(f"not valid JSON: {TOO_DEEP}", line=number)
    try:
        return parse_record(obj)
    except RecordError as error:
        error.line = number
        return error
    except Exception as error:  # a shape no check foresaw: that record's refusal only
        return RecordError(
            f"could not be read ({type(error).__name__}: {error})",
            game_id=game_id_of(obj),
            line=number,
        )


def _line_bytes(line: str | bytes) -> int:
    if isinstance(line, bytes):
        return len(line)
    # Cheap first: a line of few characters cannot be many bytes (UTF-8: at most 4 each).
    return len(line) if len(line) * 4 <= schema.LINE_BYTES_MAX else len(line.encode())


def bounded_lines(file: IO) -> Iterator[str | bytes]:
    """The lines of ``file``, never holding more than one line's limit in memory: a longer
    line is yielded cut just past the limit (so :func:`read_records` refuses it by number)
    and the rest of it is skipped in pieces."""
    limit = schema.LINE_BYTES_MAX + 1
    while True:
        line = file.readline(limit)
        if not line:
            return
        newline = "\n" if isinstance(line, str) else b"\n"
        if len(line) >= limit and not line.endswith(newline):
            rest = line
            while rest and not rest.endswith(newline):
                rest = file.readline(limit)
        yield line


def game_id_of(obj: Any) -> str | None:
    """The ``game_id`` of raw record JSON if it has a usable one (for error lines)."""
    if isinstance(obj, Mapping) and isinstance(obj.get("game_id"), str):
        return obj["game_id"]
    return None


# -- writing -----------------------------------------------------------------------------


def record_of(game: Game) -> GameRecord:
    """The record of a game rebuilt from its events (what ``export`` writes).

    ``record_of(play_game(r.config, r.deal, r.move_dicts())) == r`` for any record ``r``
    without a ``reported`` block (that one is kept once the game is settled).
    """
    return variants.for_game(game).record_of(game)


def explain(error: Exception, record: GameRecord | None = None) -> str:
    """Why a record was refused, without the game id: ``move 17 (p3 discard 9C): ...``.

    Rule violations name the move by its 0-based index and ``player type card`` (the finish
    card for a declaration); format errors name the field.
    """
    if record is None:
        return explain_game(error, record)
    return variants.for_parsed(record).explain(error, record)
