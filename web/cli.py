"""The `rummy-ledger` command line: a click group whose subcommands live in `web/commands/`.

A subcommand's module is imported only when that subcommand runs: importing all of them
pulls in Flask, SQLAlchemy and eventsourcing (about 0.7 s), which `rummy-ledger --help`
and `rummy-ledger hand` never use. So the group lists each command with its one-line help
here; tests/test_startup.py checks that this text matches the command's own docstring.
"""

from __future__ import annotations

import importlib

import click

# name: (module in web/commands/ exposing `command`, the first sentence of its docstring,
# which `rummy-ledger --help` shortens to fit as click would).
COMMANDS: dict[str, tuple[str, str]] = {
    "audit": (
        "audit",
        "Recompute GAME_ID's settlement from its stored events and compare it with the "
        "recorded settlement and the operator's reported figures.",
    ),
    "checkpoint": (
        "checkpoint",
        "Sign and store a tree head (size, root, time) over every sealed event.",
    ),
    "db": (
        "db",
        "Database schema: every table, the event store's included, comes from migrations.",
    ),
    "demo": (
        "demo",
        "Migrate the database, fill it with simulated games if it has none, and serve the site.",
    ),
    "export": (
        "export",
        "Write the records of GAME_IDS (or --all) as JSON Lines, one game a line.",
    ),
    "fairplay": (
        "fairplay",
        "Fair-play review of a period: colluding pairs, hidden-card knowledge, chip dumping and bot-like play, with evidence moves.",
    ),
    "hand": ("hand", "Evaluate a 13-card hand: best grouping, score and whether it can declare."),
    "import": (
        "import_records",
        "Import the game records of FILE (JSON Lines, docs/record-format.md) into the ledger.",
    ),
    "keys": (
        "keys",
        "The Ed25519 key that signs checkpoints (RUMMY_LEDGER_KEY_DIR, default ./keys).",
    ),
    "projections": (
        "projections",
        "Read models (games, results, move timeline, ledger entries) from the events.",
    ),
    "proof": (
        "proof",
        "Write proofs for auditors (checked offline with `rummy-ledger verify-proof`).",
    ),
    "report": (
        "report",
        "Period report: totals per table, per day and per player; every game whose ledger does "
        "not balance or whose settlement differs from a recomputation is listed.",
    ),
    "schema": (
        "schema",
        "Generate the record and API JSON Schemas (docs/schema/) and the OpenAPI request bodies "
        "from the models the ledger validates with.",
    ),
    "seal": ("seal", "Seal stored events that no save sealed."),
    "serve": (
        "serve",
        "Serve the website (games, replays, audits, player histories) and the ingest API.",
    ),
    "settle": (
        "settle",
        "Replay each record of FILE (JSON Lines, `-` for stdin) and print its settlement.",
    ),
    "simulate": (
        "simulate",
        "Bots play GAMES games, stored in the ledger (or written with --out).",
    ),
    "tokens": ("tokens", "Operator API tokens (the live ingest API needs one per request)."),
    "users": (
        "users",
        "Site accounts: players (one player id each), auditors, dispute officers, admins.",
    ),
    "verify": (
        "verify",
        "Recompute chains and the Merkle tree from the stored events and compare them with the "
        "seals and checkpoints; check seeded deals against their shuffles and snapshots against "
        "their events.",
    ),
    "verify-proof": (
        "verify_proof",
        "Check an inclusion or consistency proof offline: only the proof, the checkpoint(s) and "
        "the public key are needed, never the ledger's database.",
    ),
}


def load_command(name: str) -> click.Command:
    """The click command ``name``, importing its module (and whatever that needs) now."""
    return importlib.import_module(f"web.commands.{COMMANDS[name][0]}").command


class LazyGroup(click.Group):
    """A group that imports a subcommand's module only when that subcommand is looked up to
    run (or for its own help); the group's help lists every command from :data:`COMMANDS`."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            self.commands[cmd_name] = load_command(cmd_name)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        if not names:
            return
        # The same layout as click.Group.format_commands, without importing each command.
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            loaded = self.commands.get(name)
            if loaded is not None:
                if loaded.hidden:
                    continue
                rows.append((name, loaded.get_short_help_str(limit)))
            else:
                # A bare command with the same help shortens it exactly as click does.
                listed = click.Command(name, help=COMMANDS[name][1])
                rows.append((name, listed.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Rummy Ledger: an event-sourced ledger and replay system for rummy games."""
