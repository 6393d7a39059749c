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

from replays.application import Ledger
from replays.exporter import export_record
from replays.importer import REJECTED, import_lines
from replays.models import GameRow
from replays.projections import catch_up

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

    from replays.db import engine_for

    with Session(engine_for(url)) as session:
        return session.get(GameRow, game_id)
