"""The `rummy-ledger` command line: a click group whose subcommands live in `web/commands/`."""

from __future__ import annotations

import importlib

import click

# Each module in web/commands/ exposes `command` (a click command or group).
COMMAND_MODULES = [
    "hand",
    "db",
    "projections",
    "report",
    "tokens",
    "serve",
    "settle",
    "import_records",
    "keys",
    "seal",
    "checkpoint",
    "verify",
    "verify_proof",
    "proof",
    "export",
    "audit",
    "simulate",
    "demo",
    "users",
]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Rummy Ledger: an event-sourced ledger and replay system for rummy games."""


for _name in COMMAND_MODULES:
    main.add_command(importlib.import_module(f"web.commands.{_name}").command)
