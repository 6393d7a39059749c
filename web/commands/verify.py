"""`rummy-ledger verify` (the store against its seals and checkpoints) and
`rummy-ledger verify-proof` (a proof file, offline: no database needed)."""

from __future__ import annotations

import json
import os

import click
import sqlalchemy as sa

from replays.integrity import evidence as integrity
from replays.integrity import proofs, signing


def _checkpoints(paths: tuple[str, ...]) -> list[signing.Checkpoint]:
    try:
        return [signing.Checkpoint.load(path) for path in paths]
    except signing.SigningError as error:
        raise click.ClickException(str(error)) from None


def _public_key(path: str | None, required: bool):
    try:
        return signing.load_public_key(path)
    except signing.SigningError as error:
        if required or path:
            raise click.ClickException(str(error)) from None
        return None


@click.command("verify")
@click.option(
    "--game", "game_id", help="Only this game (its events, chain, deal, and checkpoint inclusion)."
)
@click.option(
    "--checkpoint",
    "checkpoint_files",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="A checkpoint file kept outside the system (repeatable).",
)
@click.option(
    "--key",
    "key_path",
    type=click.Path(),
    help="Public key (PEM, hex or key directory); default: the key directory.",
)
@click.option(
    "--snapshots/--no-snapshots",
    default=True,
    help="Also rebuild each game to check its stored snapshots (the slowest part; on by default).",
)
@click.option(
    "--read-models",
    "read_models_only",
    is_flag=True,
    help="Only the read models (games, player_results, moves, ledger_entries) against the "
    "events; plain `verify` checks them too.",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Processes replaying the games for the read models and snapshots (0: one per CPU).",
)
@click.option(
    "--since",
    "since_file",
    type=click.Path(dir_okay=False),
    help="Your own previous checkpoint: verify only what is new since it (needs --state; "
    "--checkpoint, once, is the new tree head).",
)
@click.option(
    "--state",
    "state_dir",
    type=click.Path(file_okay=False),
    help="The state directory you keep between --since runs (created on the first run).",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable report.")
def command(
    game_id: str | None,
    checkpoint_files: tuple[str, ...],
    key_path: str | None,
    snapshots: bool,
    read_models_only: bool,
    jobs: int,
    since_file: str | None,
    state_dir: str | None,
    as_json: bool,
) -> None:
    """Recompute chains and the Merkle tree from the stored events and compare them with
    the seals and checkpoints; check seeded deals against their shuffles, and snapshots and
    the read models (games, results, moves, ledger entries) against their events. Exit status 0 only when everything matches; otherwise every
    problem is listed with its game and event number."""
    from replays.store.settings import reading_database_url

    if since_file or state_dir:
        _since(
            since_file, state_dir, checkpoint_files, key_path, game_id, read_models_only, as_json
        )
        return
    checkpoints = _checkpoints(checkpoint_files)
    public_key = _public_key(key_path, required=bool(checkpoint_files))
    # A read replica when RUMMY_LEDGER_READ_DATABASE_URL is set: verify only reads (each
    # comparison of events with read rows inside one snapshot of one server), and the
    # memos it would remember are skipped on a read-only standby.
    url = reading_database_url()
    schema = _schema_current(url)
    try:
        if read_models_only:
            report = integrity.verify_read_models(url, game_id=game_id, progress=not as_json)
        else:
            report = integrity.verify_store(
                url,
                game_id=game_id,
                checkpoints=checkpoints,
                public_key=public_key,
                progress=not as_json,
                check_snapshots=snapshots,
                jobs=jobs or os.cpu_count() or 1,
            )
    except integrity.IntegrityError as error:
        raise click.ClickException(str(error)) from None
    except sa.exc.DBAPIError as error:
        raise click.ClickException(f"cannot read the ledger database: {error.orig}") from None
    _schema_finding(report, schema)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
    else:
        _print(report, game_id)
    raise SystemExit(0 if report.ok else 1)


def _schema_current(url: str) -> str | None:
    """Refuse, with what to do, a database whose tables are older (or newer) than this
    rummy-ledger's: every owned column is read, so a missing one would otherwise end the run
    with a bare database error. A store without Alembic's version table is taken as it is.

    A version row this rummy-ledger cannot read (a second row, a revision none of its
    migrations has, bytes) says nothing about the tables either way: verify distrusts
    stored values, so it goes on when the tables have every column it reads, and returns
    the row as a finding; when columns are missing it refuses, naming both."""
    from replays.store.decoding import shorten
    from replays.store.schema import (
        VERSION_TABLE,
        head_revision,
        known_revisions,
        missing_columns,
        stored_revisions,
    )

    try:
        with integrity.engine(url).connect() as connection:
            stored = stored_revisions(connection)
            wanted = head_revision()
            if not stored or stored == [wanted]:
                return None
            (found,) = stored if len(stored) == 1 else (None,)
            if isinstance(found, str) and found in known_revisions():
                raise click.ClickException(
                    f"the ledger database's tables are at schema revision {found}, and this "
                    f"rummy-ledger reads revision {wanted}: run `rummy-ledger db upgrade` "
                    "first (on a read replica, on its primary), then verify again"
                )
            missing = missing_columns(connection)
    except sa.exc.DBAPIError as error:
        raise click.ClickException(f"cannot read the ledger database: {error.orig}") from None
    values = ", ".join(shorten(value) for value in stored)
    why = (
        f"{len(stored)} rows where Alembic keeps one"
        if len(stored) > 1
        else f"not a schema revision of this rummy-ledger (it reads revision {wanted})"
    )
    problem = f"{VERSION_TABLE}: version_num holds {values}, {why}: the schema version is unknown"
    if missing:
        shown = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
        raise click.ClickException(
            f"{problem}, and the tables lack columns this rummy-ledger reads ({shown}): "
            f"put the store's own revision back in {VERSION_TABLE}, run `rummy-ledger db "
            "upgrade`, then verify again"
        )
    return f"{problem}; the tables have every column verify reads and were verified as they are"


def _schema_finding(report: integrity.Report, problem: str | None) -> None:
    if problem is not None:
        report.problems.insert(0, integrity.Problem(integrity.UNREADABLE, problem))


def _since(since_file, state_dir, checkpoint_files, key_path, game_id, read_models_only, as_json):
    """`verify --since OLD.json --state DIR [--checkpoint NEW.json]`
    (replays.integrity.incremental)."""
    from replays.integrity.incremental import verify_since
    from replays.integrity.state_dir import StateError

    if not (since_file and state_dir):
        raise click.UsageError("--since and --state go together: give both")
    if game_id or read_models_only:
        raise click.UsageError("--since verifies the whole store: not with --game or --read-models")
    if len(checkpoint_files) > 1:
        raise click.UsageError("with --since, --checkpoint names the one new tree head")
    from replays.store.settings import database_url

    schema = _schema_current(database_url())
    (old,) = _checkpoints((since_file,))
    new = _checkpoints(checkpoint_files)[0] if checkpoint_files else None
    public_key = _public_key(key_path, required=True)
    try:
        report, coverage = verify_since(
            None, old, state_dir, new=new, public_key=public_key, progress=not as_json
        )
    except (integrity.IntegrityError, StateError) as error:
        raise click.ClickException(str(error)) from None
    except sa.exc.DBAPIError as error:
        raise click.ClickException(f"cannot read the ledger database: {error.orig}") from None
    _schema_finding(report, schema)
    if as_json:
        data = report.to_dict()
        data["since"] = {
            "first_run": coverage.first_run,
            "replayed": coverage.replayed,
            "compared_by_digest": coverage.compared,
            "proven_by_consistency": coverage.proven,
            "old_size": coverage.old_size,
            "new_size": coverage.new_size,
            "seconds": round(coverage.seconds, 3),
            "state_written": coverage.state_written,
            "stages_seconds": coverage.stages,
        }
        click.echo(json.dumps(data, indent=2))
    else:
        _print(report, None)
        click.echo(f"covered: {coverage.summary()}")
        if coverage.state_written:
            click.echo(
                f"state written to {state_dir}; the next run: rummy-ledger verify --since "
                f"{os.path.join(state_dir, 'checkpoint.json')} --state {state_dir}"
            )
        else:
            click.echo(f"state in {state_dir} left as it was (the run found problems)")
    raise SystemExit(0 if report.ok else 1)


def _print(report: integrity.Report, game_id: str | None) -> None:
    scope = f"game {game_id}" if game_id else f"{report.games} game(s)"
    for problem in report.problems:
        click.echo(f"FAIL {problem}")
    for note in report.notes:
        click.echo(f"note: {note}")
    checked = ", ".join(str(size) for size in sorted(set(report.checkpoints))) or "none"
    summary = f"{scope}, {report.events} event(s), {report.sealed} sealed; checkpoints checked (sizes): {checked}"
    if report.ok:
        click.echo(f"verified: {summary}")
    else:
        click.echo(f"NOT verified: {len(report.problems)} problem(s); {summary}")


@click.command("verify-proof")
@click.argument("proof_file", type=click.Path(dir_okay=False))
@click.option(
    "--key",
    "key_path",
    required=True,
    type=click.Path(),
    help="The ledger's public key (PEM or 64 hex digits).",
)
@click.option(
    "--checkpoint",
    "checkpoint_files",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="Your own copy of the checkpoint(s) the proof refers to.",
)
def verify_proof_command(proof_file: str, key_path: str, checkpoint_files: tuple[str, ...]) -> None:
    """Check an inclusion or consistency proof offline: only the proof, the checkpoint(s)
    and the public key are needed, never the ledger's database."""
    public_key = _public_key(key_path, required=True)
    checkpoints = _checkpoints(checkpoint_files)
    try:
        with open(proof_file) as handle:
            document = json.load(handle)
    except FileNotFoundError:
        raise click.ClickException(f"no proof file at {proof_file}") from None
    except (ValueError, UnicodeDecodeError) as error:
        raise click.ClickException(f"{proof_file} is not JSON: {error}") from None
    result = proofs.verify_proof(document, public_key, checkpoints)
    for line in result.checked:
        click.echo(f"ok   {line}")
    if not result.ok:
        click.echo(f"FAIL {result.failure}")
        raise SystemExit(1)
    click.echo("proof verified")
