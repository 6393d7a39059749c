"""Fair-play review: colluding pairs, hidden-card knowledge, chip dumping and bot-like play,
found in the games' own moves (docs/fair-play.md, docs/dispute-officer-guide.md).

- :mod:`.facts`: one game's record walked move by move into what the signals count
  (pure: the 13-card solver and card links from ``domain/``, no I/O).
- :mod:`.summary`: those counts added up per day, player and pair: the sufficient statistics
  the projection keeps, and that add across days.
- :mod:`.signals`: a period's statistics, each with its null estimated from the same
  period's population, a p-value, Benjamini–Hochberg across everything tested, and the
  evidence moves of each flag.
- :mod:`.tables`, :mod:`.projection`: the read-model tables and the catch-up that fills them
  from stored games, one day's games at a time.
"""
