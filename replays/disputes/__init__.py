"""Dispute cases: opening a case at a move, notes and decisions as immutable events
(``cases``), and their read-model rows (``projection``).
"""
