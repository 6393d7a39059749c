"""The event store: the ``Ledger`` application (eventsourcing), its recorders and transcodings,
the database engine and migrations, settings, and the followers that keep read models and
seals up to date after each write.
"""
