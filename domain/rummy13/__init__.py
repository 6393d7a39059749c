"""13-card Indian rummy: Points Rummy and Raise Rummy (docs/rules.md §1).

One family, two variants (:mod:`.variant`: ``points`` and ``raise`` differ only in how the
point value moves). What lives here:

- the rules: :mod:`.melds` (groups), :mod:`.solver` (least-score grouping, with the tables
  of :mod:`.suit_tables`), :mod:`.profiles` (rule profiles), :mod:`.raise_schedule`;
- the game: :mod:`.table` (table configuration and deal), :mod:`.game` (the aggregate and
  its events), :mod:`.state` (what the table shows), :mod:`.moves` (record moves onto
  commands), :mod:`.settlement` (who pays what), :mod:`.analysis` (hand analysis for
  replays);
- records: :mod:`.record_schema` (the declared ``rummy-ledger/game@1`` shape),
  :mod:`.api_schema` (the live API's bodies), :mod:`.records` (reading and writing);
- the variant: :mod:`.variant`, :mod:`.audit`, :mod:`.rows` (read-model rows).

Shared with every family, one level up: cards, the verifiable shuffle, errors, money,
game ids and the seat filter.
"""

from domain.rummy13 import native

native.install()  # before anything imports the solver: compiled or pure (see native)
