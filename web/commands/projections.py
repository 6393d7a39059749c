"""`rummy-ledger projections`: keep the read-model tables current with the event store.

rummy-ledger projections run            # apply what is new, then stop
rummy-ledger projections run --follow   # a worker: keep applying new events
rummy-ledger projections rebuild        # project everything again, all or nothing
rummy-ledger projections status         # position, head of the store, lag, failures
rummy-ledger projections retry          # project the games set aside by a failure again
"""

from __future__ import annotations

import json
import time

import click

URL = click.option("--url", help="Database URL (default: RUMMY_LEDGER_DATABASE_URL).")


@click.group("projections")
def command() -> None:
    """Read models (games, results, move timeline, ledger entries) from the events."""


def _runner(url: str | None, batch_size: int | None = None):
    """Migrate (idempotent) and build the runner; one-line errors instead of tracebacks."""
    from replays.readmodels.projections import runner
    from replays.store.schema import migrate

    try:
        migrate(url)
        return runner(url, batch_size=batch_size)
    except Exception as error:
        raise click.ClickException(f"cannot open the ledger database: {error}") from error


def _applied(count: int, seconds: float) -> str:
    rate = f", {count / seconds:,.0f} events/s" if count and seconds > 0 else ""
    return f"{count} events applied in {seconds:.1f} s{rate}"


@command.command("run")
@click.option("--follow", is_flag=True, help="Keep running and apply new events as they come.")
@click.option(
    "--interval",
    default=1.0,
    show_default=True,
    type=click.FloatRange(min=0.0, min_open=True),
    help="Seconds between looks at the store when idle (SQLite); on PostgreSQL the worker "
    "wakes on each commit and this is only a safety net, e.g. 60.",
)
@click.option("--batch-size", type=click.IntRange(1), help="Notifications per transaction.")
@URL
def run(follow: bool, interval: float, batch_size: int | None, url: str | None) -> None:
    """Apply every event not yet projected (and with --follow, every new one)."""
    projector = _runner(url, batch_size)
    started = time.monotonic()
    if not follow:
        count = projector.catch_up(progress=True)
        click.echo(_applied(count, time.monotonic() - started))
        _warn_failures(projector.failures())
        return
    stopping = _stop_on_signals()
    how = "on each commit (LISTEN)" if projector.engine.dialect.name == "postgresql" else "polling"
    click.echo(f"following the event store, woken {how}; SIGTERM or Ctrl-C stops", err=True)

    def applied(count: int) -> None:
        click.echo(f"{count} events applied (position {projector.status().position})")

    def failed(error: Exception) -> None:
        # A worker outlives a dropped connection or a locked database: the failed batch
        # was rolled back whole, so trying again later is always safe.
        click.echo(f"error: {error.__class__.__name__}: {error}; retrying", err=True)

    done = projector.follow(
        interval=interval, stop=stopping.is_set, on_batch=applied, on_error=failed
    )
    # Stopped between batches: every batch is committed whole, and the position with it,
    # so the next start goes on from there.
    click.echo(
        f"stopped at position {projector.status().position}; "
        + _applied(done, time.monotonic() - started)
    )


def _stop_on_signals():
    """An event set by SIGTERM (systemd's stop) or SIGINT: the worker ends its batch first."""
    import signal
    import threading

    stopping = threading.Event()

    def stop(signum, _frame):
        if stopping.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt  # a second Ctrl-C: now (the batch rolls back whole)
        stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    return stopping


def _warn_failures(failures) -> None:
    if failures:
        click.echo(
            f"warning: {len(failures)} failed to project (see `projections status`):", err=True
        )
        for failure in failures:
            click.echo(f"  {failure.describe()}", err=True)


@command.command("rebuild")
@click.option("--batch-size", type=click.IntRange(1), help="Notifications per transaction.")
@click.option(
    "--keep-failed",
    is_flag=True,
    help="Commit the rebuild even if some games fail anew (they are set aside and listed).",
)
@URL
def rebuild(batch_size: int | None, keep_failed: bool, url: str | None) -> None:
    """Project every stored event again into empty read models, in one transaction.

    The old rows stay readable, and unchanged, until the new ones are complete. An event
    that fails anew rolls the rebuild back (exit 1) unless --keep-failed.
    """
    from replays.readmodels.projection_runner import RebuildAbandoned

    projector = _runner(url, batch_size)
    started = time.monotonic()
    try:
        count = projector.rebuild(progress=True, keep_failed=keep_failed)
    except RebuildAbandoned as error:
        raise click.ClickException(str(error)) from error
    click.echo(_applied(count, time.monotonic() - started))
    failures = projector.failures()
    _warn_failures(failures)
    if failures:
        raise SystemExit(1)


@command.command("retry")
@URL
def retry(url: str | None) -> None:
    """Project each game set aside by a failure again, whole (after the cause is fixed).

    Exits 1 while any game still fails.
    """
    projector = _runner(url)
    cleared, failing = projector.retry()
    for failure in cleared:
        click.echo(f"projected: game {failure.game_id or failure.originator_id}")
    _warn_failures(failing)
    rebuild_failures = [f for f in projector.failures() if f.during_rebuild]
    if rebuild_failures:
        click.echo("a rolled-back rebuild failed; run `projections rebuild` again", err=True)
    click.echo(f"{len(cleared)} cleared, {len(failing)} still failing")
    if failing or rebuild_failures:
        raise SystemExit(1)


@command.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@URL
def status(as_json: bool, url: str | None) -> None:
    """How far the read models have read the event store, how far behind they are, and
    which events failed to project (exit 1 when any did)."""
    from replays.readmodels.projections import projection_status

    try:
        current = projection_status(url)
    except Exception as error:
        raise click.ClickException(
            f"cannot read the projection status ({error.__class__.__name__}); "
            "is the database migrated (rummy-ledger db upgrade)?"
        ) from error
    if as_json:
        click.echo(json.dumps(current.to_dict()))
    else:
        when = current.updated_at.isoformat() if current.updated_at else "never"
        click.echo(
            f"{current.name}: position {current.position} of {current.head}, "
            f"lag {current.lag} events ({current.events_applied} applied, last run {when})"
        )
        if current.failures:
            click.echo(f"{len(current.failures)} failed to project:")
        for failure in current.failures:
            click.echo(f"  {failure.describe()} [attempts {failure.attempts}]")
    if current.failures:
        raise SystemExit(1)
