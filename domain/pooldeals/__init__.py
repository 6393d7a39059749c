"""Pool Rummy (61, 101 and 201 pools) and Deals Rummy (best of 2, 3 or 6): matches of 13-card
deals (docs/rules.md §3 and §4, docs/pool-deals-format.md).

Every deal is a 13-card game played by :class:`domain.rummy13.game.Game` itself, so every
move is checked by the 13-card rules engine; what this family adds is the match around the
deals: running scores and elimination, rejoins and splits (pool), chips and tiebreakers
(deals), and the prize pool's settlement.

- :mod:`.profile`: pool types and deal counts as values; :mod:`.table`: the match's
  configuration and each deal's 13-card table;
- :mod:`.pool`, :mod:`.deals`: the pure rules and money of each format; :mod:`.settlement`
  what they share (the prize pool, payouts, fee, balanced ledger entries);
- :mod:`.match`: the aggregate and its events; :mod:`.snapshot`, :mod:`.shuffle`;
- :mod:`.record_schema`, :mod:`.records`: ``rummy-ledger/pool@1`` and ``rummy-ledger/deals@1``;
- :mod:`.audit`, :mod:`.rows`, :mod:`.variant`: what the rest of the ledger asks of a match.
"""
