"""The record schema: every record format and API body the ledger reads, declared once.

Pydantic models (strict values, no unknown fields) hold each field's type and bound and the
checks tying fields together; the readers in ``replays/`` validate with them and build the
domain's values from the result, and the JSON Schema published in ``docs/schema/`` and in
the ingest API's OpenAPI document is generated from them (``rummy-ledger schema``). Rules of
play are not here: the aggregates check those.

- :mod:`.common`: the constrained values (ids, currency, decimal strings, counts, times,
  cards, list lengths) and :func:`~.common.problems`, a refusal as ``(field path, reason)``;
- :mod:`.published`: the JSON Schema documents, by name, gathered from every registered
  family's ``Variant.schemas``.

Each family declares its own shapes on top of :mod:`.common`: ``domain.rummy13.record_schema``
(``rummy-ledger/game@1``) and ``domain.rummy13.api_schema`` (the live API's bodies),
``domain.red3.record_schema`` (``rummy-ledger/red3@1`` and its live bodies).

Pure: no I/O. Importing it costs pydantic's start-up, so only the readers import it.
"""
