"""`rummy-ledger simulate`: bots play games, stored through the ledger or written as records."""

from __future__ import annotations

import time

import click

from domain import variants

VARIANT_NAMES = variants.names()  # every registered game type (domain.variants)


def parse_seats(text: str) -> tuple[int, ...]:
    """``"4"`` or ``"2-6"`` as the seat counts tables may have.

    >>> parse_seats("2-4")
    (2, 3, 4)
    """
    try:
        low, _, high = text.partition("-")
        low, high = int(low), int(high or low)
    except ValueError:
        raise click.BadParameter(f"{text!r}: give a count (4) or a range (2-6)") from None
    if not 2 <= low <= high <= 6:
        raise click.BadParameter(f"{text!r}: a 13-card table seats 2 to 6 players")
    return tuple(range(low, high + 1))


@click.command("simulate")
@click.option(
    "--games",
    "-n",
    type=click.IntRange(min=1),
    default=100,
    show_default=True,
    help="How many games to play.",
)
@click.option(
    "--variant",
    "variants",
    type=click.Choice(VARIANT_NAMES),
    multiple=True,
    help="Variant(s) the tables play (repeatable). Default: points and raise.",
)
@click.option(
    "--players",
    "seats",
    default="2-6",
    show_default=True,
    help="Seats per table: a count (4) or a range (2-6).",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="The same seed gives the same games.",
)
@click.option(
    "--start",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Index of the first game (to add more games to an earlier run).",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Write docs/record-format.md records as JSON Lines here ('-': stdout) instead of storing.",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Worker processes for playing (0: one per CPU). Records are the same.",
)
@click.option(
    "--discrepancy-rate",
    type=click.FloatRange(0, 1),
    default=0.0,
    show_default=True,
    help="Share of games whose reported settlement carries an operator's mistake.",
)
@click.option(
    "--month",
    default="2025-03",
    show_default=True,
    help="The month (YYYY-MM) the tables play through.",
)
@click.option(
    "--tables",
    type=click.IntRange(min=1),
    default=24,
    show_default=True,
    help="Tables on the floor.",
)
@click.option(
    "--player-pool",
    type=click.IntRange(min=6),
    default=500,
    show_default=True,
    help="Distinct pseudonymous players who come to the tables.",
)
@click.option(
    "--cheaters",
    default="",
    help="Cheating players among the honest, as kind:share of the players "
    "(pair, peek, dump, bot), e.g. pair:0.02,peek:0.02. Default: none.",
)
@click.option(
    "--cheat-strength",
    type=click.FloatRange(0, 1),
    default=0.5,
    show_default=True,
    help="How often a cheat acts when it can (0..1).",
)
@click.option(
    "--truth",
    type=click.Path(dir_okay=False),
    help="Write who cheats, how and with whom here (JSON); never into the records.",
)
def command(
    games,
    variants,
    seats,
    seed,
    start,
    out,
    jobs,
    discrepancy_rate,
    month,
    tables,
    player_pool,
    cheaters,
    cheat_strength,
    truth,
) -> None:
    """Bots play GAMES games, stored in the ledger (or written with --out).

    Bots keep melds, discard high loose cards, drop weak hands, miss turns (sometimes three
    in a row), now and then declare too early, and play long two-player games through the
    stock. Deterministic for a seed; a progress bar on a terminal.
    """
    from domain.simulation.cheats import Cheats, CheatsError
    from replays.simulation import Floor, Simulation, Tally, UnknownVariant, check_variants

    try:
        cheats = Cheats.parse(cheaters, cheat_strength) if cheaters else None
    except CheatsError as error:
        raise click.BadParameter(str(error), param_hint="--cheaters") from None
    if truth and cheats is None:
        raise click.BadParameter("give --cheaters too: an honest run has no truth to write")
    try:
        check_variants(variants or None)
        floor = Floor(
            seed=seed,
            variants=tuple(variants) if variants else Floor.variants,
            seats=parse_seats(seats),
            tables=tables,
            players=player_pool,
            month=month,
            cheats=cheats,
        )
    except (UnknownVariant, ValueError) as error:
        raise click.ClickException(str(error)) from None
    if not out:
        _check_migrated()
    if truth:
        import json
        from pathlib import Path

        facts = cheats.truth(seed, floor.all_players())
        Path(truth).write_text(json.dumps(facts, indent=1) + "\n")
    run = Simulation(floor, discrepancy_rate=discrepancy_rate)
    tally = Tally()
    stored = None
    began = time.perf_counter()
    records = run.games(games, start=start, jobs=jobs or _cpus(), progress=True)
    if out:
        from replays.simulation import write_records

        written = write_records(records, out, tally=tally)
        where = "stdout" if out == "-" else out
        summary = [f"wrote {written} records to {where}"]
    else:
        from replays.simulation import store_games

        stored = store_games(records, tally=tally, warn=lambda line: click.echo(line, err=True))
        summary = stored.lines()
    elapsed = time.perf_counter() - began
    summary += tally.lines()
    summary.append(f"{elapsed:.1f} s, {games / elapsed:.1f} games/s")
    for line in summary:
        click.echo(line, err=out == "-")
    if stored is not None and stored.rejected:
        # A simulated game the ledger rejects is a bug in the bots or the rules: say so.
        raise SystemExit(1)


def _check_migrated() -> None:
    """Games go only into a database whose schema is up to date (read models included)."""
    from sqlalchemy.engine import make_url

    from replays.store.schema import current_revision, head_revision
    from replays.store.settings import database_url

    url = database_url()
    where = make_url(url).render_as_string(hide_password=True)
    try:
        current, head = current_revision(url), head_revision()
    except Exception as error:  # Alembic's own refusal of a second version row, say
        raise click.ClickException(
            f"cannot read the schema revision of the database {where}: {error}"
        ) from None
    if current != head:
        raise click.ClickException(
            f"the database {where} is at schema revision {current or 'none'}, not {head}: "
            "run `rummy-ledger db upgrade` first (or `rummy-ledger demo`, which does)"
        )


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
