"""What every family's simulator bot shares: the floor of tables, the player pool and the
month (:mod:`.floor`), and dealing through the verifiable shuffle (:mod:`.dealing`).

Pure: seeded random generators, no I/O. Each family's bot lives in its own package
(``domain/rummy13/bot.py``, ``simulate.py``, ``reported.py``; ``domain/red3/bot.py``) and is
reached through ``Variant.bot``; ``replays.simulation`` runs them and stores the games.
"""
