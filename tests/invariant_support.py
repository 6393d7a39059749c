"""The ledger's promise at its edge, as a harness the fuzz and invariant tests share.

Anything ``rummy-ledger import`` accepts it can store, project (no ``projection_failures``
row), render (the game page and the replay page answer 200), export and import again into
a fresh store with an identical export. Anything it refuses stores nothing (no events, no
seals, no read rows), the refusal names the game and where, and the good records around it
in the same file are stored all the same.

Records go through the CLI's own code path: a JSON Lines file opened as ``import`` opens it,
read by :func:`replays.records.importer.import_lines`.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy as sa

from replays.records.importer import ALREADY, CONFLICT, IMPORTED, REJECTED, import_lines
from replays.store.db import engine_for

# A refusal says where: a field, a move (of a round), the deal or the shuffle.
LOCATION = re.compile(r"field '[^']+'|move \d+|round \d+|\bdeal\b|shuffle")
# The importer's safety nets for exceptions no check foresaw: a refusal, but a bug.
CRASH_MARKS = ("could not be read (", "could not be played (", "Traceback")
INDEX = re.compile(r"\[\d+\]")
READ_TABLES = ("games", "moves", "player_results", "ledger_entries", "integrity_seals")
GOOD_COUNTER = itertools.count(1)


@dataclass
class Entry:
    """One line of an import file: a good neighbour or a record under test."""

    line: str
    game_id: object  # the record's ``game_id`` as written (any JSON value)
    label: str  # what was done to it, for failure messages
    good: bool = False
    outcome: object = None


@dataclass
class Found:
    """What one batch did with the records under test."""

    accepted: list[Entry] = field(default_factory=list)
    refused: list[Entry] = field(default_factory=list)
    known: list[Entry] = field(default_factory=list)  # already recorded / conflict
    problems: list[str] = field(default_factory=list)  # refusals that break a promise


def ledgers_on(engine: str, tmp_path: Path, monkeypatch):
    """Yield a :class:`LedgerUnderTest` on ``engine`` ("sqlite" or "postgresql"), its
    re-import store on the same engine; PostgreSQL schemas are dropped afterwards."""
    if engine == "sqlite":
        url = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
        monkeypatch.setenv("RUMMY_LEDGER_DATABASE_URL", url)
        yield LedgerUnderTest(url, f"sqlite:///{tmp_path / 'again.sqlite3'}", tmp_path)
        return
    from pg_support import postgres_schema_url

    url, drop = postgres_schema_url()
    again, drop_again = postgres_schema_url()
    monkeypatch.setenv("RUMMY_LEDGER_DATABASE_URL", url)
    try:
        yield LedgerUnderTest(url, again, tmp_path)
    finally:
        engine_for(url).dispose()
        engine_for(again).dispose()
        drop()
        drop_again()


def good_neighbour(record: dict) -> Entry:
    """A good record under a fresh id: it must be stored whatever its neighbours are."""
    game_id = f"GOOD-{next(GOOD_COUNTER):05d}"
    return Entry(json.dumps({**record, "game_id": game_id}), game_id, "good", good=True)


class LedgerUnderTest:
    """One store (SQLite or PostgreSQL) with its web app, plus a second store to re-import
    exports into."""

    def __init__(self, url: str, again_url: str, workdir: Path):
        from api_support import make_app
        from auth_support import signed_in

        from replays.store.application import Ledger
        from replays.store.schema import migrate

        self.url = url
        self.app = make_app(url, API_FOLLOW_WRITES=False)
        self.client = signed_in(self.app, "auditor")
        self.ledger = Ledger(url, env={"CREATE_TABLE": "no"})
        migrate(again_url)
        self.again = Ledger(again_url, env={"CREATE_TABLE": "no"})
        self.workdir = workdir
        self.files = itertools.count(1)

    # -- importing -------------------------------------------------------------------------
    def import_file(self, entries: list[Entry]) -> None:
        """Write ``entries`` to a file and import it as ``rummy-ledger import FILE`` does."""
        path = self.workdir / f"batch-{next(self.files)}.jsonl"
        path.write_text("\n".join(e.line for e in entries) + "\n", encoding="utf-8")
        outcomes = {}
        with open(path, encoding="utf-8") as file:
            import_lines(
                self.ledger,
                file,
                on_outcome=lambda o: outcomes.setdefault(o.line, o),
                follow=False,
            )
        for number, entry in enumerate(entries, start=1):
            entry.outcome = outcomes.get(number)

    def run(self, entries: list[Entry]) -> Found:
        """Import ``entries``; check every promise about what was stored and refused."""
        stored_before = set(self.ledger.list_game_ids())
        self.import_file(entries)
        found = Found()
        for entry in entries:
            assert entry.outcome is not None, f"{entry.label}: no outcome reported"
            status = entry.outcome.status
            if entry.good:
                assert status == IMPORTED, f"a good neighbour was lost: {entry.outcome.message}"
            elif status == IMPORTED:
                found.accepted.append(entry)
            elif status == REJECTED:
                found.problems += self.refusal_problems(entry)
                found.refused.append(entry)
            else:
                assert status in (ALREADY, CONFLICT) and entry.game_id in stored_before, (
                    f"{entry.label}: {entry.outcome.message}"
                )
                found.known.append(entry)
        expected = (
            stored_before
            | {e.game_id for e in entries if e.good}
            | {e.game_id for e in found.accepted}
        )
        self.check_inventory(expected)
        return found

    def refusal_problems(self, entry: Entry) -> list[str]:
        """What is wrong with a refusal (nothing, when it names the game and where, shows no
        unforeseen exception and stored nothing)."""
        message = entry.outcome.message
        name = entry.game_id if entry.outcome.game_id else f"line {entry.outcome.line}"
        problems = []
        if not message.startswith(f"{name}: "):
            problems.append("the refusal does not start with the game's name")
        if any(mark in message for mark in CRASH_MARKS):
            problems.append("an unforeseen exception")
        elif not LOCATION.search(message.removeprefix(f"{name}: ")):
            problems.append("the refusal says not where (field, move, round or deal)")
        if isinstance(entry.game_id, str) and entry.game_id and self._has_events(entry.game_id):
            problems.append("refused, yet events were stored")
        return [f"{entry.label}: {problem}: {message[:300]}" for problem in problems]

    def _has_events(self, game_id: str) -> bool:
        try:
            return self.ledger.game_exists(game_id)
        except (ValueError, TypeError):  # an id that could never be stored
            return False

    def check_inventory(self, expected: set) -> None:
        """Exactly the expected games are stored; every seal and read row belongs to one."""
        assert set(self.ledger.list_game_ids()) == expected
        with engine_for(self.url).connect() as connection:
            events = connection.execute(sa.text("SELECT count(*) FROM ledger_events")).scalar()
            seals = connection.execute(sa.text("SELECT count(*) FROM integrity_seals")).scalar()
            assert seals == events, f"{events} events but {seals} seals"
            for table in READ_TABLES:
                rows = connection.execute(sa.text(f"SELECT DISTINCT game_id FROM {table}"))
                stray = {row[0] for row in rows} - expected - {None}
                assert not stray, f"{table} holds rows of games never stored: {stray}"

    # -- the accepted side -----------------------------------------------------------------
    def check_accepted(self, entries: list[Entry], *, per_shape: bool = False) -> list[str]:
        """Project every accepted record, then render, export and re-import each (with
        ``per_shape``, one of each shape: ``moves[3].at`` removed stands for
        ``moves[9].at`` removed); what went wrong."""
        from replays.readmodels.projections import catch_up

        if not entries:
            return []
        try:
            catch_up(self.url)
        except Exception as error:  # the read side must hold what was accepted
            return [f"the projection raised on accepted records: {error!r}"]
        with engine_for(self.url).connect() as connection:
            failures = connection.execute(
                sa.text("SELECT game_id, error FROM projection_failures")
            ).all()
        labels = {entry.game_id: entry.label for entry in entries}
        problems = [f"{labels.get(g, g)}: projection failure: {error}" for g, error in failures]
        if per_shape:
            entries = list({INDEX.sub("[*]", entry.label): entry for entry in entries}.values())
        for entry in entries:
            try:
                self.check_one(entry)
            except Exception as error:  # an assertion, or anything the pages/export raised
                problems.append(f"{entry.label}: accepted, then {type(error).__name__}: {error}")
        # Projected now: still no read row or seal of a game that was never stored.
        self.check_inventory(set(self.ledger.list_game_ids()))
        return problems

    def check_one(self, entry: Entry) -> None:
        from replays.records.exporter import export_record

        game_id = entry.game_id
        with engine_for(self.url).connect() as connection:
            row = connection.execute(
                sa.text("SELECT status FROM games WHERE game_id = :g"), {"g": game_id}
            ).first()
        assert row is not None, f"{entry.label}: accepted but not projected"
        for page in (f"/games/{game_id}", f"/games/{game_id}/replay"):
            answer = self.client.get(page, follow_redirects=True)
            assert answer.status_code == 200, f"{entry.label}: {page} answered {answer.status}"
        exported = export_record(self.ledger, game_id)
        exported.encode("utf-8")  # the export command writes UTF-8: it must be writable
        again = import_lines(self.again, [exported], follow=False)
        assert again.imported == 1, f"{entry.label}: its export is refused: {again.failures}"
        assert export_record(self.again, game_id) == exported, f"{entry.label}: export drifts"
