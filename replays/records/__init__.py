"""Game records in and out: reading and writing the record formats (``codec``; each family
with a reader of its own has a module beside it), import, export, settling in memory, and the
audit of a stored game's figures against what was recorded and reported.
"""
