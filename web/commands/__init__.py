"""`rummy-ledger` subcommands, one module per area; each exposes a click command or group."""
