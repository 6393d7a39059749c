"""The rules of the games the ledger records: pure Python, no I/O, no Flask, no SQL."""
