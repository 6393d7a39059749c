"""The SQL read models the site and reports read: the tables (``models``), the projection
that fills them from the events and its runner, set-aside failures, period reports and their
verification, the hand analysis the replay page shows, and the check that recomputes a
game's rows from its events (``read_model_checks``).
"""
