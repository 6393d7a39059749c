"""Red 3 Rummy, the ledger's second game: books, scoring and the match aggregate.

It reuses :mod:`domain.cards` and the shared error and event conventions; its own rule
choices live in :mod:`domain.red3.profile` and are explained in docs/red3-rules.md.
"""
