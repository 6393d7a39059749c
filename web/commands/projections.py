"""`rummy-ledger projections`: keep the read-model tables current with the event store.

rummy-ledger projections run            # apply what is new, then stop
rummy-ledger projections run --follow   # a worker: keep applying new events
rummy-ledger projections rebuild        # empty the read models, project everything again
rummy-ledger projections status         # position, head of the store, lag
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
    from replays.projections import runner
    from replays.schema import migrate

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
@click.option("--interval", default=1.0, show_default=True, help="Seconds between polls.")
@click.option("--batch-size", type=click.IntRange(1), help="Notifications per transaction.")
@URL
def run(follow: bool, interval: float, batch_size: int | None, url: str | None) -> None:
    """Apply every event not yet projected (and with --follow, every new one)."""
    projector = _runner(url, batch_size)
    started = time.monotonic()
    if not follow:
        count = projector.catch_up(progress=True)
        click.echo(_applied(count, time.monotonic() - started))
        return
    done = 0
    click.echo("following the event store; Ctrl-C stops", err=True)
    try:
        while True:
            try:
                count = projector.catch_up(progress=True)
            except Exception as error:
                # A worker outlives a dropped connection or a locked database: the failed
                # batch was rolled back whole, so trying again later is always safe.
                click.echo(f"error: {error.__class__.__name__}: {error}; retrying", err=True)
                time.sleep(max(interval, 5.0))
                continue
            if count:
                done += count
                click.echo(f"{count} events applied (position {projector.status().position})")
            else:
                time.sleep(interval)
    except KeyboardInterrupt:
        # The batch in flight was rolled back or committed whole: nothing is half-applied.
        click.echo(_applied(done, time.monotonic() - started))


@command.command("rebuild")
@click.option("--batch-size", type=click.IntRange(1), help="Notifications per transaction.")
@URL
def rebuild(batch_size: int | None, url: str | None) -> None:
    """Empty the read models and project every stored event again (with a progress bar)."""
    projector = _runner(url, batch_size)
    started = time.monotonic()
    count = projector.rebuild(progress=True)
    click.echo(_applied(count, time.monotonic() - started))


@command.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@URL
def status(as_json: bool, url: str | None) -> None:
    """How far the read models have read the event store, and how far behind they are."""
    from replays.projections import projection_status

    try:
        current = projection_status(url)
    except Exception as error:
        raise click.ClickException(
            f"cannot read the projection status ({error.__class__.__name__}); "
            "is the database migrated (rummy-ledger db upgrade)?"
        ) from error
    if as_json:
        click.echo(json.dumps(current.to_dict()))
        return
    when = current.updated_at.isoformat() if current.updated_at else "never"
    click.echo(
        f"{current.name}: position {current.position} of {current.head}, "
        f"lag {current.lag} events ({current.events_applied} applied, last run {when})"
    )
