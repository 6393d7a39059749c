"""The record schema: every record format and API body the ledger reads, declared once.

Pydantic models (strict values, no unknown fields) hold each field's type and bound and the
checks tying fields together; the readers in ``replays/`` validate with them and build the
domain's values from the result, and the JSON Schema published in ``docs/schema/`` and in
the ingest API's OpenAPI document is generated from them (``rummy-ledger schema``). Rules of
play are not here: the aggregates check those.

- :mod:`.common`: the constrained values (ids, currency, decimal strings, counts, times,
  cards, list lengths) and :func:`~.common.problems`, a refusal as ``(field path, reason)``;
- :mod:`.game13`: the 13-card record, ``rummy-ledger/game@1``;
- ``domain.red3.record_schema``: the Red 3 match record, ``rummy-ledger/red3@1``;
- :mod:`.api`: the bodies of ``POST /api/v1/games``, ``.../moves`` and ``.../settle``;
- :mod:`.published`: the JSON Schema documents, by name.

Pure: no I/O. Importing it costs pydantic's start-up, so only the readers import it.
"""
