"""Dispute cases: the aggregate's rules, the use cases on both engines (read model, adjustment
ledger entries, reports, rebuild, tamper evidence), who may take each step, and the pages."""

from __future__ import annotations

import doctest
import re
import threading
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
import sqlalchemy as sa
from auth_support import csrf_token, signed_in
from web_support import load_games

import domain.dispute
import replays.disputes.cases
from domain.dispute import ADJUSTMENT_ACCOUNT, DisputeCase, DisputeError, adjustment_entries
from replays.access import accounts
from replays.disputes.projection import DisputeCaseRow
from replays.readmodels.models import LedgerEntryRow
from replays.store.db import session_factory
from web import create_app

GAME = "T7-000123"  # p1 wins; p2 drops; p3 shows
AT = "2025-03-05T10:00:00Z"


def new_case(**changes) -> DisputeCase:
    fields = dict(
        game=GAME,
        move=3,
        moves=7,
        players=("p1", "p2", "p3"),
        currency="INR",
        description="p2 says the drop was recorded on the wrong turn",
        opened_by="p2",
        opener_role="player",
        at=AT,
    )
    fields.update(changes)
    return DisputeCase.open(fields.pop("case_id", "DC-TEST1"), **fields)


def test_documented_examples_hold():
    for module in (domain.dispute, replays.disputes.cases):
        assert doctest.testmod(module).failed == 0, module.__name__


# -- the aggregate -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"move": 8}, "move", "game T7-000123 has 7 moves: there is no move 8"),
        ({"move": -1}, "move", "there is no move -1"),
        ({"move": "3"}, "move", "is not a whole number"),
        ({"move": True}, "move", "is not a whole number"),
        ({"description": "   "}, "description", "must not be empty"),
        ({"description": "x" * 4001}, "description", "at most 4000"),
        ({"description": "bad\x00byte"}, "description", "control characters"),
        ({"case_id": "no spaces allowed"}, "case_id", "is not a case id"),
        ({"players": ()}, "game", "has no players"),
        ({"at": "yesterday"}, "at", "is not an ISO-8601 time"),
    ],
)
def test_opening_refuses_bad_input(changes, field, words):
    with pytest.raises(DisputeError) as raised:
        new_case(**changes)
    assert raised.value.field == field and words in str(raised.value)


@pytest.mark.parametrize(
    ("decision", "options", "field", "words"),
    [
        ("settled", {}, "decision", "is not a decision"),
        ("adjusted", {"credited": "p2"}, "amount", "give the amount, like 12.50"),
        ("adjusted", {"amount": "12.345", "credited": "p2"}, "amount", "more than two decimals"),
        ("adjusted", {"amount": 12.5, "credited": "p2"}, "amount", "not a float"),
        ("adjusted", {"amount": "0", "credited": "p2"}, "amount", "must be more than 0"),
        ("adjusted", {"amount": "-5", "credited": "p2"}, "amount", "must be more than 0"),
        ("adjusted", {"amount": "NaN", "credited": "p2"}, "amount", "is not an amount"),
        ("adjusted", {"amount": "1e12", "credited": "p2"}, "amount", "is more than"),
        ("adjusted", {"amount": "5"}, "credited", "name the player credited or the player"),
        ("adjusted", {"amount": "5", "credited": "p9"}, "credited", "'p9' did not play"),
        ("adjusted", {"amount": "5", "debited": "zz"}, "debited", "'zz' did not play"),
        (
            "adjusted",
            {"amount": "5", "credited": "p2", "debited": "p2"},
            "debited",
            "both credited and debited",
        ),
        ("upheld", {"amount": "5"}, "amount", "only an adjusted decision moves money"),
        ("rejected", {"credited": "p1"}, "credited", "only an adjusted decision moves money"),
    ],
)
def test_closing_refuses_bad_decisions_and_records_nothing(decision, options, field, words):
    case = new_case()
    before = len(case.collect_events())
    with pytest.raises(DisputeError) as raised:
        case.close(decision, by="officer", reason="checked the log", at=AT, **options)
    assert raised.value.field == field and words in str(raised.value)
    assert case.collect_events() == [] and before == 1  # only the opening was ever pending
    assert case.status == "open"


def test_reason_and_evidence_links_are_checked():
    case = new_case()
    with pytest.raises(DisputeError, match="reason: must not be empty"):
        case.close("rejected", by="officer", reason="", at=AT)
    for link in ("javascript:alert(1)", "ftp://files.example/x", "https://", "not a link"):
        with pytest.raises(DisputeError) as raised:
            case.add_evidence(link, by="officer", at=AT)
        assert raised.value.field == "link"
    case.add_evidence("https://files.example/hand.png", by="officer", at=AT, label="hand")
    assert case.timeline[-1].link == "https://files.example/hand.png"


def test_a_closed_case_takes_no_more_steps():
    case = new_case()
    case.close("upheld", by="officer", reason="the log agrees", at=AT)
    for step in (
        lambda: case.add_note("late", by="officer", at=AT),
        lambda: case.add_evidence("https://x.example/1", by="officer", at=AT),
        lambda: case.close("rejected", by="officer", reason="changed my mind", at=AT),
    ):
        with pytest.raises(DisputeError, match="is closed \\(upheld\\)"):
            step()
    assert [e.kind for e in case.timeline] == ["opened", "closed"]


def test_adjustments_balance_and_name_the_house_when_one_side_is_missing():
    assert adjustment_entries(None, None, None) == ()
    for credited, debited in (("p2", "p1"), ("p2", None), (None, "p1")):
        entries = adjustment_entries("7.25", credited, debited)
        assert sum(e.debit for e in entries) == sum(e.credit for e in entries) == Decimal("7.25")
    assert adjustment_entries("1.00", "p2", None)[0].account == ADJUSTMENT_ACCOUNT
    assert adjustment_entries("1.00", None, "p1")[1].account == ADJUSTMENT_ACCOUNT


def test_the_case_is_its_events(tmp_path):
    from replays.store.application import Ledger

    ledger = Ledger(f"sqlite:///{tmp_path / 'case.sqlite3'}")
    case = new_case()
    case.add_note("asked the operator for the table log", by="officer", at=AT)
    case.close("adjusted", by="officer", reason="drop on the wrong turn", amount="5",
               credited="p2", debited="p1", at="2025-03-06T09:00:00Z")  # fmt: skip
    ledger.save(case)
    stored = ledger.recorder.select_events(case.id)
    assert [s.topic for s in stored] == [
        "rummy_ledger:DisputeCase.CaseOpened",
        "rummy_ledger:DisputeCase.NoteAdded",
        "rummy_ledger:DisputeCase.CaseClosed",
    ]
    # Tamper evidence names a chain by the first "game_id" in its first event: not the game's.
    assert b'"game_id"' not in stored[0].state
    again = ledger.repository.get(case.id)
    assert again.timeline == case.timeline
    assert (again.status, again.amount, again.credited) == ("closed", Decimal("5.00"), "p2")


# -- the use cases on a real ledger (SQLite and PostgreSQL) --------------------------------


@pytest.fixture
def ledger_with_games(database_url):
    from replays.store.application import Ledger

    load_games(database_url)
    staff = {
        role: accounts.add_user(
            f"{role.replace('_', '-')}-1", role, "password-123", url=database_url
        )
        for role in ("auditor", "dispute_officer", "admin")
    }
    players = {
        p: accounts.add_user(f"player-{p}", "player", "password-123", player=p, url=database_url)
        for p in ("p1", "p2", "a1")
    }
    return Ledger(database_url), staff, players


def adjustment_rows(url: str) -> list[tuple]:
    with session_factory(url)() as session:
        rows = session.scalars(
            sa.select(LedgerEntryRow)
            .where(LedgerEntryRow.kind == "adjustment")
            .order_by(LedgerEntryRow.dispute_id, LedgerEntryRow.line)
        )
        return [(r.dispute_id, r.game_id, r.account, r.player, r.debit, r.credit) for r in rows]


def case_rows(url: str) -> list[tuple]:
    with session_factory(url)() as session:
        rows = session.scalars(sa.select(DisputeCaseRow).order_by(DisputeCaseRow.case_id))
        return [
            (r.case_id, r.game_id, r.move, r.status, r.notes, r.evidence, r.decision, r.amount)
            for r in rows
        ]


def test_a_case_from_opening_to_an_adjustment(ledger_with_games, database_url):
    from replays.disputes.cases import Disputes, list_cases
    from replays.integrity.evidence import verify_store
    from replays.readmodels.projections import rebuild
    from replays.readmodels.reports import PeriodFilter, period_report

    ledger, staff, players = ledger_with_games
    officer = staff["dispute_officer"]
    disputes = Disputes(ledger)
    case = disputes.open_case(players["p2"], GAME, 3, "my drop was recorded a turn early")
    disputes.add_note(officer, case.case_id, "asked the table for its log")
    disputes.add_evidence(officer, case.case_id, "https://logs.example/T7/3", label="table log")
    with session_factory(database_url)() as session:
        (row,) = list_cases(session)
        assert (row.case_id, row.status, row.notes, row.evidence) == (case.case_id, "open", 1, 1)
        assert (row.opened_by, row.opener_role) == ("p2", "player")

    disputes.close_case(
        officer, case.case_id, "adjusted", reason="early drop", amount="5.00",
        credited="p2", debited="p1",
    )  # fmt: skip
    assert case_rows(database_url) == [
        (case.case_id, GAME, 3, "closed", 1, 1, "adjusted", Decimal("5.00"))
    ]
    entries = adjustment_rows(database_url)
    assert entries == [
        (case.case_id, GAME, "player:p1", "p1", Decimal("5.00"), Decimal("0.00")),
        (case.case_id, GAME, "player:p2", "p2", Decimal("0.00"), Decimal("5.00")),
    ]

    report = period_report(
        session_factory(database_url)(), PeriodFilter(date(2025, 3, 1), date(2025, 3, 1))
    )
    (adjustment,) = report.adjustments
    assert (adjustment.dispute_id, adjustment.amount) == (case.case_id, Decimal("5.00"))
    assert (adjustment.debited, adjustment.credited) == ("player:p1", "player:p2")
    assert report.reconciliation.balanced
    p2 = next(line for line in report.by_player if line.player == "p2")
    assert p2.received == Decimal("5.00")

    # The rows come from the events alone, and the case's events are sealed like a game's.
    before = (case_rows(database_url), entries)
    rebuild(database_url)
    assert (case_rows(database_url), adjustment_rows(database_url)) == before
    verified = verify_store(database_url)
    assert verified.ok, verified.problems
    assert verified.sealed == ledger.recorder.max_notification_id()


def test_who_may_take_each_step(ledger_with_games):
    from replays.disputes.cases import CaseNotFound, Disputes, GameUnknown, NotAllowed

    ledger, staff, players = ledger_with_games
    disputes = Disputes(ledger, after_write=lambda: None)
    with pytest.raises(GameUnknown):  # p2 did not sit in T9-000777: told as for no game
        disputes.open_case(players["p2"], "T9-000777", 1, "not my game")
    with pytest.raises(GameUnknown):
        disputes.open_case(staff["dispute_officer"], "NO-SUCH-GAME", 1, "no game")
    for role in ("auditor", "admin"):
        with pytest.raises(NotAllowed):
            disputes.open_case(staff[role], GAME, 1, "staff who do not work cases")
    case = disputes.open_case(players["p1"], GAME, 2, "p1's case")
    for actor in (players["p1"], players["p2"], staff["auditor"], staff["admin"]):
        with pytest.raises((NotAllowed, CaseNotFound)):
            disputes.add_note(actor, case.case_id, "not an officer")
        with pytest.raises((NotAllowed, CaseNotFound)):
            disputes.close_case(actor, case.case_id, "upheld", reason="not an officer")
    assert disputes.read_case(players["p1"], case.case_id).case_id == case.case_id
    with pytest.raises(CaseNotFound):
        disputes.read_case(players["p2"], case.case_id)  # another player's case
    for role in ("auditor", "dispute_officer", "admin"):
        assert disputes.read_case(staff[role], case.case_id).description == "p1's case"
    with pytest.raises(CaseNotFound):
        disputes.get_case("DC-NOPE")
    with pytest.raises(CaseNotFound):
        disputes.get_case("../../etc/passwd")
    assert [e.kind for e in disputes.get_case(case.case_id).timeline] == ["opened"]


def test_officers_working_one_case_at_once_lose_no_step(ledger_with_games):
    from replays.disputes.cases import Disputes

    ledger, staff, _players = ledger_with_games
    disputes = Disputes(ledger, after_write=lambda: None)
    case = disputes.open_case(staff["dispute_officer"], GAME, 4, "busy case")
    errors = []

    def work(n: int) -> None:
        try:
            for k in range(3):
                disputes.add_note(staff["dispute_officer"], case.case_id, f"note {n}.{k}")
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    notes = [e.text for e in disputes.get_case(case.case_id).timeline if e.kind == "note"]
    assert sorted(notes) == sorted(f"note {n}.{k}" for n in range(3) for k in range(3))


# -- the pages ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('disputes') / 'ledger.sqlite3'}"
    load_games(url)
    return create_app({"DATABASE_URL": url, "TESTING": True})


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).replace("&#39;", "'")


def post_form(client, page: str, action: str, data: dict):
    token = csrf_token(client.get(page).get_data(as_text=True))
    return client.post(action, data={"csrf_token": token, **data})


def test_a_player_opens_a_case_and_an_officer_closes_it_on_the_site(site):
    player = signed_in(site, "player", player="p2")
    response = post_form(
        player,
        f"/disputes/new?game={GAME}&move=3",
        "/disputes/new",
        {"game": GAME, "move": "3", "description": "the drop came a turn early"},
    )
    assert response.status_code == 302
    case_url = response.headers["Location"]
    case_id = case_url.rsplit("/", 1)[1]
    page = player.get(case_url).get_data(as_text=True)
    # The replay beside the timeline opens at the contested move, in the player's own seat.
    assert f"/games/{GAME}/replay/table.svg?move=3&amp;seat=p2" in page
    assert "the drop came a turn early" in text_of(page)
    assert "Close with a decision" not in page  # a player reads, officers work

    officer = signed_in(site, "dispute_officer")
    page = officer.get(case_url).get_data(as_text=True)
    assert (
        f"/games/{GAME}/replay/table.svg?move=3" in page
        and "seat=" not in page.split("case-table")[1].split("</figure>")[0]
    )
    assert "p2 drops (contested)" in text_of(page)
    from replays.store.db import engine_for

    with engine_for(site.config["DATABASE_URL"]).connect() as connection:
        logged = connection.execute(
            sa.text("SELECT username, game_id, move, view, page FROM access_log ORDER BY id")
        ).all()
    assert tuple(logged[-1]) == ("test-dispute-officer", GAME, 3, "full", "disputes.case")
    assert (
        post_form(officer, case_url, f"{case_url}/notes", {"text": "checking"}).status_code == 302
    )
    refused = post_form(
        officer, case_url, f"{case_url}/close", {"decision": "adjusted", "reason": "early drop"}
    )
    assert refused.status_code == 400
    assert "give the amount, like 12.50" in text_of(refused.get_data(as_text=True))
    closed = post_form(
        officer,
        case_url,
        f"{case_url}/close",
        {"decision": "adjusted", "reason": "early drop", "amount": "3.50", "credited": "p2"},
    )
    assert closed.status_code == 302
    words = text_of(officer.get(case_url).get_data(as_text=True))
    assert "closed the case: adjusted" in words and "3.50 INR" in words
    assert "p2 credited" in words and "the house pays" in words
    listing = text_of(officer.get("/disputes?status=closed").get_data(as_text=True))
    assert case_id in listing and "closed: adjusted" in listing
    assert case_id not in text_of(officer.get("/disputes").get_data(as_text=True))


def test_the_list_shows_open_cases_oldest_first_with_their_age(site):
    from replays.disputes.cases import Disputes
    from replays.store.application import Ledger

    url = site.config["DATABASE_URL"]
    officer_name = "age-officer"
    officer = accounts.add_user(officer_name, "dispute_officer", "password-123", url=url)
    disputes = Disputes(Ledger(url))
    old = disputes.open_case(
        officer, GAME, 1, "old case", at=datetime.now(UTC) - timedelta(days=3, hours=2)
    )
    new = disputes.open_case(officer, GAME, 2, "new case", at=datetime.now(UTC))
    client = signed_in(site, "auditor")
    words = text_of(client.get("/disputes").get_data(as_text=True))
    assert words.index(old.case_id) < words.index(new.case_id)
    assert re.search(rf"{old.case_id} .*? 3 days ", words)
    assert re.search(rf"{new.case_id} .*? just now ", words)


def test_forms_need_their_csrf_token_and_say_what_is_wrong(site):
    officer = signed_in(site, "dispute_officer")
    missing = officer.post("/disputes/new", data={"game": GAME, "move": "1", "description": "x"})
    assert missing.status_code == 400 and "CSRF" in missing.get_data(as_text=True)
    bad = post_form(
        officer, "/disputes/new", "/disputes/new", {"game": GAME, "move": "99", "description": "x"}
    )
    assert bad.status_code == 400
    assert "game T7-000123 has 7 moves: there is no move 99" in text_of(bad.get_data(as_text=True))
    empty = post_form(officer, "/disputes/new", "/disputes/new", {"game": "", "move": "x"})
    words = text_of(empty.get_data(as_text=True))
    assert "Name the game." in words and "Say what is disputed." in words
    assert "Traceback" not in words


# -- every game type: the same case page ---------------------------------------------------------
#
# The promise: a case page treats every game type as it treats Points. Each type's page shows
# the moves around the contested one, numbered and worded as its replay viewer's move list,
# and the hands as that part of the game was scored; the form, the page and its links take
# one move range, the replay viewer's, and no table image on a case page is a broken one.

TYPES = ("points", "raise", "red3", "pool", "deals")


@pytest.fixture(scope="module")
def every_type(tmp_path_factory):
    """Simulated games of every registered variant, each type with settled games."""
    from domain import variants
    from replays.simulation import Floor, Simulation, store_games
    from replays.store.schema import migrate

    url = f"sqlite:///{tmp_path_factory.mktemp('disputes-types') / 'ledger.sqlite3'}"
    names = tuple(v.name for v in variants.all_variants())
    assert set(TYPES) <= set(names)
    migrate(url)
    floor = Floor(seed=30, variants=names, tables=len(names), players=10, month="2025-03")
    store_games(Simulation(floor).games(14), url=url)
    return create_app({"DATABASE_URL": url, "TESTING": True, "REPLAY_CACHE": False})


def settled_game(app, variant: str):
    from replays.store.application import Ledger
    from replays.store.db import engine_for

    with engine_for(app.config["DATABASE_URL"]).connect() as connection:
        game_id = connection.execute(
            sa.text(
                "SELECT game_id FROM games WHERE variant = :v AND ended_at IS NOT NULL "
                "ORDER BY game_id"
            ),
            {"v": variant},
        ).scalar()
    assert game_id, f"no settled {variant} game"
    return game_id, Ledger(app.config["DATABASE_URL"]).get_game(game_id)


def replay_last_move(client, game_id: str, seat: str = "") -> int:
    """The replay viewer's last move, as its refusal of a move past the end says it."""
    refused = client.get(f"/games/{game_id}/replay?move=999999&seat={seat}")
    assert refused.status_code == 400
    return int(re.search(r"has (\d+) moves", refused.get_data(as_text=True)).group(1))


def replay_move_words(client, game_id: str, move: int, seat: str = "") -> dict[int, str]:
    """Each move of the replay viewer's move list in its words, by number."""
    html = client.get(f"/games/{game_id}/replay?move={move}&seat={seat}").get_data(as_text=True)
    found = re.findall(
        r'data-move="(\d+)"[^>]*><span class="n">\d+</span><span>([^<]*)</span>', html
    )
    return {int(number): words for number, words in found}


def open_case_at(client, game_id: str, move: int):
    return post_form(
        client,
        "/disputes/new",
        "/disputes/new",
        {"game": game_id, "move": str(move), "description": "is this move right?"},
    )


# What each type's "hands as scored" must list at the contested move: every player its scoring
# counted, with the figure it charged them (the game's settlement; Red 3 the contested move's
# round; Pool and Deals the contested move's deal), and the part of the game the moves name.
def _thirteen_card(game, contested):
    settlement = game.table_state().settlement
    scored = {player: line.points for player, line in settlement.players.items()}
    return {**scored, settlement.winner: 0}, None


def _red3(game, contested):
    number = game.steps[contested]["round"]
    score = game.round_scores[number - 1]
    return {line.player: line.score for line in score.players}, f"round {number}"


def _match(game, contested):
    number = max(1, sum(1 for step in game.steps[:contested] if step["type"] == "deal"))
    result = game.results[number - 1]
    return {**result["points"], result["winner"]: 0}, f"deal {number}"


SCORED = {"points": _thirteen_card, "raise": _thirteen_card, "red3": _red3}
SCORED |= {"pool": _match, "deals": _match}


@pytest.mark.parametrize("variant", TYPES)
def test_every_type_shows_the_moves_around_and_the_hands_as_scored(every_type, variant):
    from web.audit_marks import figure_text

    officer = signed_in(every_type, "dispute_officer")
    game_id, game = settled_game(every_type, variant)
    last = replay_last_move(officer, game_id)
    contested = last // 2
    opened = open_case_at(officer, game_id, contested)
    assert opened.status_code == 302, text_of(opened.get_data(as_text=True))
    page = officer.get(opened.headers["Location"]).get_data(as_text=True)

    # The moves around it: numbered and worded as the replay viewer lists them, the contested
    # one marked, each labelled with its deal or round where the game has them.
    assert "Moves around it" in page
    listed = page.split('class="case-moves"')[1].split("</ol>")[0]
    items = re.findall(
        r'<li value="(\d+)"[^>]*>(?:<span class="move-part">([^<]*) ·</span> )?'
        r"<a [^>]*>([^<]*)</a>",
        listed,
    )
    replayed = replay_move_words(officer, game_id, contested)
    assert len(items) >= 2 and str(contested) in [number for number, _, _ in items]
    expected, part = SCORED[variant](game, contested)
    for number, label, words in items:
        assert words == replayed[int(number)], (number, words)
        assert abs(int(number) - contested) <= 4
        if part is not None and variant != "red3":
            assert label == part  # a match lists the contested deal's moves
        elif part is not None:
            assert label.startswith("round ")
    assert re.search(rf'<li value="{contested}" class="contested"[^>]*>.*?\(contested\)', listed)

    # The hands as scored: the players that part of the game scored, each with its figure.
    assert "The hands as scored" in page
    hands = page.split('id="hands-heading"')[1]
    figures = {}
    # A 13-card hand (a game's, or a deal's) says its points or penalty; a Red 3 round's line
    # ends in its score.
    for player, body in re.findall(
        r'<article class="final-hand" data-player="([^"]+)">(.*?)</article>', hands, re.S
    ):
        figures[player] = re.search(r"(?:Points|Penalty) <strong>([^<]*)</strong>", body).group(1)
    for player, body in re.findall(r'<tr data-player="([^"]+)">(.*?)</tr>', hands, re.S):
        figures[player] = re.findall(r"<strong>([^<]*)</strong>", body)[-1]
    assert figures == {player: figure_text(value) for player, value in expected.items()}


@pytest.mark.parametrize("variant", TYPES)
def test_the_case_form_page_and_links_take_the_replays_move_range(every_type, variant):
    officer = signed_in(every_type, "dispute_officer")
    game_id, _game = settled_game(every_type, variant)
    last = replay_last_move(officer, game_id)

    refused = open_case_at(officer, game_id, last + 1)
    assert refused.status_code == 400
    words = text_of(refused.get_data(as_text=True))
    assert f"game {game_id} has {last} moves: there is no move {last + 1}" in words

    for move in (0, last):
        opened = open_case_at(officer, game_id, move)
        assert opened.status_code == 302, text_of(opened.get_data(as_text=True))
        page = officer.get(opened.headers["Location"]).get_data(as_text=True)
        images = re.findall(r'<img src="([^"]+)"', page)
        assert images, "the case page shows the table"
        for src in images:
            image = officer.get(src.replace("&amp;", "&"))
            assert image.status_code == 200 and image.mimetype == "image/svg+xml", (src, move)
        replays = set(re.findall(r'href="(/games/[^"]+/replay\?[^"]+)"', page))
        assert f"/games/{game_id}/replay?move={move}" in replays
        for href in replays:
            assert officer.get(href.replace("&amp;", "&")).status_code == 200, href
        steps = re.findall(r'href="(/disputes/DC-[^"?]+\?move=\d+)"', page)
        for href in set(steps):
            assert officer.get(href).status_code == 200, href


@pytest.mark.parametrize("variant", TYPES)
def test_a_case_opened_past_the_end_shows_the_last_move(every_type, variant):
    # Cases opened before the move range was one rule (Red 3 took one move past its replay).
    from replays.store.application import Ledger

    officer = signed_in(every_type, "dispute_officer")
    game_id, game = settled_game(every_type, variant)
    last = replay_last_move(officer, game_id)
    from domain import variants

    case = DisputeCase.open(
        f"DC-PAST{TYPES.index(variant)}",
        game=game_id,
        move=last + 1,
        moves=last + 1,
        players=variants.get(variant).players(game),
        currency="XXX",
        description="opened one move past the end",
        opened_by="test-dispute-officer",
        opener_role="dispute_officer",
        at=AT,
    )
    Ledger(every_type.config["DATABASE_URL"]).save(case)
    page = officer.get(f"/disputes/{case.case_id}").get_data(as_text=True)
    assert f"its replay ends at move {last}, shown here" in text_of(page)
    src = re.search(r'<img src="([^"]+)"', page).group(1).replace("&amp;", "&")
    assert f"move={last}" in src and officer.get(src).status_code == 200
    assert f"/games/{game_id}/replay?move={last}" in page
    assert f"move={last + 1}" not in page


@pytest.mark.parametrize("variant", TYPES)
def test_a_players_case_page_is_their_seats_view_for_every_type(every_type, variant):
    from domain import variants

    game_id, game = settled_game(every_type, variant)
    me = variants.get(variant).players(game)[0]
    player = signed_in(every_type, "player", player=me)
    last = replay_last_move(player, game_id, me)
    opened = open_case_at(player, game_id, last // 2)
    assert opened.status_code == 302, text_of(opened.get_data(as_text=True))
    page = player.get(opened.headers["Location"]).get_data(as_text=True)
    assert "Moves around it" in page and "The hands as scored" in page
    for src in re.findall(r'<img src="([^"]+)"', page):
        assert f"seat={me}" in src
        assert player.get(src.replace("&amp;", "&")).status_code == 200, src
    # The moves read as the seat's replay reads them: others' stock draws stay hidden.
    replayed = replay_move_words(player, game_id, last // 2, me)
    listed = page.split('class="case-moves"')[1].split("</ol>")[0]
    items = re.findall(r'<li value="(\d+)".*?<a [^>]*>([^<]*)</a>', listed)
    assert items and all(words == replayed[int(number)] for number, words in items)
