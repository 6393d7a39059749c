"""The ledger's promise at its edge, drawn at and around every header bound (issue 13):
anything it accepts it can store, project, render, export and import again; anything it
refuses leaves nothing stored and names the field. On SQLite and PostgreSQL."""

from __future__ import annotations

import copy
import json
from decimal import Decimal
from pathlib import Path

import pytest
from api_support import make_app
from auth_support import signed_in
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replays.readmodels.models import GameRow
from replays.readmodels.projections import catch_up
from replays.records.exporter import export_record
from replays.records.importer import REJECTED, import_lines
from replays.store.application import Ledger

DATA = Path(__file__).parent / "data"
BASE = json.loads((DATA / "games.jsonl").read_text().splitlines()[1])  # seed-points-200

digits = st.text("0123456789", min_size=1, max_size=8)


def decimal_text(places: int) -> st.SearchStrategy[str]:
    """Decimal strings at and around ``places`` digits after the point, small and large."""
    return st.builds(
        lambda whole, fraction: whole + ("." + fraction if fraction else ""),
        st.sampled_from(["0", "1", "2", "99999", "100000", "100001", "1000000000"]) | digits,
        st.one_of(
            st.just(""),
            st.text("0123456789", min_size=places, max_size=places),
            st.text("0123456789", min_size=places + 1, max_size=places + 2),
        ),
    )


ID_CHARS = "abcXYZ019._:-"
ids = st.one_of(
    st.text(ID_CHARS, min_size=63, max_size=65).map(lambda s: "T" + s[1:]),
    st.text(ID_CHARS, min_size=1, max_size=6).map(lambda s: "T" + s),
    st.sampled_from(["-x", ".", "", "T/1", "Tü"]),
)
headers = st.fixed_dictionaries(
    {},
    optional={
        "stakes.point_value": decimal_text(6) | st.integers(-1, 10**30),
        "stakes.fee_percent": decimal_text(2),
        "stakes.currency": st.sampled_from(
            ["INR", "USD", "inr", "INRS", "RUPEESRUPEES", "", "I1R"]
        ),
        "table.id": ids,
        "table.decks": st.sampled_from([0, 5, 10**9, -1, True]),
        "table.jokers_per_deck": st.sampled_from([3, 10**30, -1]),
        "started_at": st.sampled_from(
            ["1969-12-31T23:59:59Z", "1970-01-01T00:00:00Z", "2099-12-31T23:59:59Z", "2100-01-01"]
        ),
        "reported.gross": decimal_text(2),
        "reported.fee": decimal_text(2),
        "reported.winner": st.sampled_from(["p1", "p2", ["p1"], {"p1": 1}, 10**30]),
    },
)


def apply(fields: dict, game_id: str) -> dict:
    record = copy.deepcopy(BASE)
    record["game_id"] = game_id
    for path, value in fields.items():
        *parents, last = path.split(".")
        target = record
        for name in parents:
            target = target[name]
        target[last] = value
    return record


@pytest.mark.slow
def test_what_the_ledger_accepts_it_stores_projects_renders_and_exports(database_url):
    app = make_app(database_url, API_FOLLOW_WRITES=False)
    ledger = Ledger(database_url, env={"CREATE_TABLE": "no"})
    client = signed_in(app, "auditor")
    counter = iter(range(10**6))
    seen = {"accepted": 0, "refused": 0}

    @settings(
        max_examples=40,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(headers)
    def check(fields):
        game_id = f"inv-{next(counter)}"
        record = apply(fields, game_id)
        summary = import_lines(ledger, [json.dumps(record)], follow=False)
        if summary.rejected:
            seen["refused"] += 1
            (failure,) = summary.failures
            assert failure.status == REJECTED
            assert not ledger.game_exists(game_id)
            # Every refusal that is about a drawn field names that field.
            named = [path for path in fields if f"field '{path}'" in failure.reason]
            assert named or "move" in failure.reason or "deal" in failure.reason, failure.reason
            return
        seen["accepted"] += 1
        assert summary.imported == 1
        catch_up(database_url)  # raises if the read side cannot hold what was accepted
        assert catch_up(database_url) == 0
        row = _game_row(database_url, game_id)
        assert row.point_value == Decimal(str(record["stakes"]["point_value"]))
        for page in (f"/games/{game_id}", f"/games/{game_id}/replay"):
            assert client.get(page).status_code == 200, page
        again = import_lines(ledger, [export_record(ledger, game_id)], follow=False)
        assert (again.already, again.rejected) == (1, 0), again.failures

    check()
    # Both sides of the bounds were reached, or the test proved nothing.
    assert seen["accepted"] and seen["refused"], seen


def _game_row(url: str, game_id: str) -> GameRow:
    from sqlalchemy.orm import Session

    from replays.store.db import engine_for

    with Session(engine_for(url)) as session:
        return session.get(GameRow, game_id)


# -- in range, every bounded field: always accepted, always held ----------------------------
# Every value inside its bound (docs/record-format.md and docs/red3-format.md, "Bounds") must
# be accepted; and what is accepted must be stored, projected, rendered, exported and
# imported again. The records are dealt from a seeded shuffle, so any deck fits.

ISO_CODES = ["INR", "USD", "EUR", "JPY", "KWD", "AED"]
ID_TEXT = "abcXYZ019._:-"


def id_of(length: st.SearchStrategy[int], lead: str) -> st.SearchStrategy[str]:
    """Ids of the drawn length (up to the 64 allowed), starting with a letter."""
    return length.flatmap(lambda n: st.text(ID_TEXT, min_size=n - 1, max_size=n - 1)).map(
        lambda rest: lead + rest
    )


id_lengths = st.sampled_from([1, 2, 63, 64]) | st.integers(1, 64)


def six_places(low: str, high: str) -> st.SearchStrategy[str]:
    """Rates with at most 6 decimal places, the ends of the bound included."""
    drawn = st.decimals(min_value=Decimal(low), max_value=Decimal(high), places=6)
    return st.sampled_from([low, high]) | drawn.map(str)


@st.composite
def in_range_13_card(draw) -> dict:
    from bound_records import dropped_game

    decks, jokers = draw(st.integers(1, 4)), draw(st.integers(0, 2))
    # A table deals 13 cards a player, then the wild and the open card.
    most = min(6, (decks * (52 + jokers) - 2) // 13)
    count = draw(st.integers(2, most))
    names = draw(st.lists(id_of(id_lengths, "P"), min_size=count, max_size=count, unique=True))
    stakes = {
        "currency": draw(st.sampled_from(ISO_CODES)),
        "point_value": draw(six_places("0.000001", "100000")),
        "fee_percent": draw(st.sampled_from(["0", "100", "100.00"]) | st.just("12.5")),
    }
    raise_kind = draw(st.sampled_from(["none", "step", "schedule"]))
    if raise_kind == "step":
        stakes["raise"] = {"step": draw(six_places("0", "100000")), "max": "100000"}
    elif raise_kind == "schedule":
        size = draw(st.sampled_from([1, 200]) | st.integers(1, 200))
        stakes["raise"] = {"schedule": [draw(six_places("0.000001", "100000"))] * size}
    money = st.sampled_from(["0", "0.00", "1000000000", "1000000000.00"])
    reported = draw(st.none() | st.fixed_dictionaries({}, optional={"gross": money, "fee": money}))
    return dropped_game(
        draw(id_of(id_lengths, "G")),
        names,
        decks=decks,
        jokers=jokers,
        stakes=stakes,
        table_id=draw(id_of(id_lengths, "T")),
        started_at=draw(st.sampled_from(["1970-01-01T00:00:00Z", "2099-12-31T23:59:59Z"])),
        reported=reported,
        with_shuffle=draw(st.booleans()),
    )


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def held(request, tmp_path, monkeypatch):
    from invariant_support import ledgers_on

    yield from ledgers_on(request.param, tmp_path, monkeypatch)


def accepted_and_held(held, records: list[dict]) -> None:
    """Every record is imported (none refused) and then held all the way round."""
    from invariant_support import Entry

    entries = [Entry(json.dumps(r), r["game_id"], f"{r['game_id'][:20]}...") for r in records]
    found = held.run(entries)
    refused = [e.outcome.message[:300] for e in found.refused + found.known]
    assert not refused, refused
    assert not held.check_accepted(found.accepted)


def test_in_range_13_card_records_are_always_accepted_and_held(held):
    on_sqlite = held.url.startswith("sqlite")
    seen: set[str] = set()

    @settings(
        max_examples=30 if on_sqlite else 8,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(record=in_range_13_card())
    def check(record):
        if record["game_id"] in seen:  # the same id drawn twice: already held
            return
        seen.add(record["game_id"])
        accepted_and_held(held, [record])

    check()


def test_the_largest_records_each_bound_allows_are_held(held):
    """At the top of every bound at once: 2,000 moves; 4 packs with 2 jokers a pack and six
    players with 64-character ids; 200 raise steps at the largest rate; the largest money;
    Red 3 with 8 players of 64-character ids, and 20 rounds."""
    from bound_records import dropped_game, long_game, renamed
    from red3_factory import random_record

    from domain.record_schema.common import MOVES_MAX, RAISE_SCHEDULE_MAX
    from domain.red3.record_schema import RED3_PLAYERS_MAX

    longest = long_game("L" * 64, MOVES_MAX)
    names = [f"{i}" + "p" * 63 for i in range(1, 7)]
    widest = dropped_game(
        "W" * 64,
        names,
        decks=4,
        jokers=2,
        table_id="T" * 64,
        stakes={
            "currency": "KWD",
            "point_value": "100000",
            "fee_percent": "100",
            "raise": {"schedule": ["100000.000000"] * RAISE_SCHEDULE_MAX},
        },
        reported={"gross": "1000000000.00", "fee": "1000000000.00", "net_to_winner": "0"},
    )
    crowded = random_record(21, players=RED3_PLAYERS_MAX, rounds=2)
    crowded = renamed(crowded, {p["id"]: f"{p['seat']}" + "r" * 63 for p in crowded["players"]})
    crowded.update(game_id="R" * 64, table={"id": "T" * 64})
    crowded["reported"] = {"totals": {p["id"]: 100_000 for p in crowded["players"]}}
    many_rounds = random_record(22, players=2, rounds=20)
    accepted_and_held(held, [longest, widest, crowded, many_rounds])
    assert len(longest["moves"]) == MOVES_MAX


@st.composite
def in_range_red3(draw) -> dict:
    """A simulated Red 3 match: 2-8 players with ids up to 64 characters, a running match
    of up to 20 rounds or a finished one, reported scores anywhere in their bound."""
    from bound_records import renamed
    from red3_factory import random_record

    count = draw(st.integers(2, 8))
    played = draw(st.integers(1, 2))
    record = random_record(draw(st.integers(30, 10_000)), players=count, rounds=played)
    names = draw(st.lists(id_of(id_lengths, "P"), min_size=count, max_size=count, unique=True))
    record = renamed(
        record, {p["id"]: name for p, name in zip(record["players"], names, strict=True)}
    )
    record["game_id"] = draw(id_of(id_lengths, "R"))
    record["round_count"] = draw(st.sampled_from([played, 20]))
    score = st.sampled_from([-100_000, 0, 100_000]) | st.integers(-100_000, 100_000)
    if draw(st.booleans()):
        record["reported"] = {"totals": {name: draw(score) for name in names}}
        if record["round_count"] == played:
            record["reported"]["winner"] = draw(st.sampled_from(names))
    return record


def test_in_range_red3_records_are_always_accepted_and_held(held):
    seen: set[str] = set()

    @settings(
        max_examples=10 if held.url.startswith("sqlite") else 4,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(record=in_range_red3())
    def check(record):
        if record["game_id"] in seen:
            return
        seen.add(record["game_id"])
        accepted_and_held(held, [record])

    check()
