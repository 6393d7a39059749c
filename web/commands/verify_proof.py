"""`rummy-ledger verify-proof`: registered from its own module (one command per module);
the command itself lives beside `verify` in :mod:`web.commands.verify`."""

from web.commands.verify import verify_proof_command as command

__all__ = ["command"]
