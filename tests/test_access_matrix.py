"""Who may open what: every page and API route against every role, allowed or denied.

The roles: nobody signed in, a player (``p1``), an auditor, a dispute officer, an admin.
Each row of :data:`MATRIX` is one request and the answer each role must get:

- a status code (200, 400, 401, 403, 404), or
- ``"login"``: a redirect to the login page; any other text: a redirect whose ``Location``
  contains that text (a player sent to their own games or their own seat).

A player is ``p1``, who sat in T7-000123 (with p2 and p3) but not in T9-000777; the rows
named "another player's game" and "another player's seat" are the ones the issue asks for.
``test_every_route_is_in_the_matrix`` keeps the matrix complete as routes are added.
"""

from __future__ import annotations

import re

import pytest
from auth_support import PASSWORD, ensure_account, log_in, signed_in
from web_support import load_games

from replays.access.accounts import ADMIN, AUDITOR, DISPUTE_OFFICER, PLAYER
from web import create_app

ANON, PLAYER_P1 = "anonymous", "player"
ROLES = (ANON, PLAYER_P1, AUDITOR, DISPUTE_OFFICER, ADMIN)
OWN, OTHER = "T7-000123", "T9-000777"


def expect(anonymous, player, auditor, officer, admin) -> dict:
    return dict(zip(ROLES, (anonymous, player, auditor, officer, admin), strict=True))


# (label, method, path, form data or None, answers). Paths may name {case_*} placeholders.
MATRIX = [
    ("health check", "GET", "/healthz", None, expect(200, 200, 200, 200, 200)),
    ("readiness check", "GET", "/readyz", None, expect(200, 200, 200, 200, 200)),
    # Staff, or an address in RUMMY_LEDGER_METRICS_ALLOW (none here): tests/test_ops_endpoints.py
    ("metrics", "GET", "/metrics", None, expect(403, 403, 200, 200, 200)),
    ("login page", "GET", "/login", None, expect(200, "/games", "/games", "/games", "/games")),
    ("static file", "GET", "/static/css/site.css", None, expect(200, 200, 200, 200, 200)),
    ("home", "GET", "/", None, expect("login", "player=p1", 200, 200, 200)),
    ("games list", "GET", "/games", None, expect("login", "player=p1", 200, 200, 200)),
    ("own games list", "GET", "/games?player=p1", None, expect("login", 200, 200, 200, 200)),
    (
        "another player's games list",
        "GET",
        "/games?player=a1",
        None,
        expect("login", "player=p1", 200, 200, 200),
    ),
    ("own game summary", "GET", f"/games/{OWN}", None, expect("login", 200, 200, 200, 200)),
    (
        "another player's game summary",
        "GET",
        f"/games/{OTHER}",
        None,
        expect("login", 404, 200, 200, 200),
    ),
    (
        "own game replay, full view",
        "GET",
        f"/games/{OWN}/replay?move=2",
        None,
        expect("login", "seat=p1", 200, 200, 200),
    ),
    (
        "own game replay, own seat",
        "GET",
        f"/games/{OWN}/replay?move=2&seat=p1",
        None,
        expect("login", 200, 200, 200, 200),
    ),
    (
        "own game replay, another player's seat",
        "GET",
        f"/games/{OWN}/replay?move=2&seat=p2",
        None,
        expect("login", 403, 200, 200, 200),
    ),
    (
        "another player's game replay",
        "GET",
        f"/games/{OTHER}/replay?move=2&seat=a1",
        None,
        expect("login", 404, 200, 200, 200),
    ),
    (
        "another player's game replay in 'my' seat",
        "GET",
        f"/games/{OTHER}/replay?seat=p1",
        None,
        expect("login", 404, 400, 400, 400),
    ),
    (
        "table fragment, full view",
        "GET",
        f"/games/{OWN}/replay/table?move=2",
        None,
        expect(401, "seat=p1", 200, 200, 200),
    ),
    (
        "table fragment, own seat",
        "GET",
        f"/games/{OWN}/replay/table?move=2&seat=p1",
        None,
        expect(401, 200, 200, 200, 200),
    ),
    (
        "table fragment, another player's seat",
        "GET",
        f"/games/{OWN}/replay/table?move=2&seat=p3",
        None,
        expect(401, 403, 200, 200, 200),
    ),
    (
        "table image, own seat",
        "GET",
        f"/games/{OWN}/replay/table.svg?move=2&seat=p1",
        None,
        expect(401, 200, 200, 200, 200),
    ),
    (
        "table image, another player's game",
        "GET",
        f"/games/{OTHER}/replay/table.svg?move=2",
        None,
        expect(401, 404, 200, 200, 200),
    ),
    ("audit page", "GET", f"/games/{OWN}/audit", None, expect("login", 403, 200, 200, 200)),
    ("audit JSON", "GET", f"/games/{OWN}/audit.json", None, expect("login", 403, 200, 200, 200)),
    ("audit CSV", "GET", f"/games/{OWN}/audit.csv", None, expect("login", 403, 200, 200, 200)),
    ("own history", "GET", "/players/p1", None, expect("login", 200, 200, 200, 200)),
    (
        "another player's history",
        "GET",
        "/players/p2",
        None,
        expect("login", 403, 200, 200, 200),
    ),
    ("case list", "GET", "/disputes", None, expect("login", 200, 200, 200, 200)),
    ("closed cases", "GET", "/disputes?status=closed", None, expect("login", 200, 200, 200, 200)),
    ("open-case form", "GET", "/disputes/new", None, expect("login", 200, 403, 200, 403)),
    (
        "open a case on an own game",
        "POST",
        "/disputes/new",
        {"game": OWN, "move": "2", "description": "matrix"},
        expect(401, "/disputes/DC-", 403, "/disputes/DC-", 403),
    ),
    (
        "open a case on another player's game",
        "POST",
        "/disputes/new",
        {"game": OTHER, "move": "2", "description": "matrix"},
        expect(401, 400, 403, "/disputes/DC-", 403),
    ),
    (
        "officer's case",
        "GET",
        "/disputes/{case_officer}",
        None,
        expect("login", 404, 200, 200, 200),
    ),
    ("p1's own case", "GET", "/disputes/{case_p1}", None, expect("login", 200, 200, 200, 200)),
    (
        "another player's case",
        "GET",
        "/disputes/{case_p2}",
        None,
        expect("login", 404, 200, 200, 200),
    ),
    (
        "add a note",
        "POST",
        "/disputes/{case_notes}/notes",
        {"text": "matrix note"},
        expect(401, 403, 403, "/disputes/DC-", 403),
    ),
    (
        "add evidence",
        "POST",
        "/disputes/{case_notes}/evidence",
        {"link": "https://evidence.example/1.png", "label": "screenshot"},
        expect(401, 403, 403, "/disputes/DC-", 403),
    ),
    (
        "close a case",
        "POST",
        "/disputes/{case_close}/close",
        {"decision": "rejected", "reason": "matrix"},
        expect(401, 403, 403, "/disputes/DC-", 403),
    ),
    ("period report", "GET", "/reports", None, expect("login", 403, 200, 403, 200)),
    (
        "period report for a period",
        "GET",
        "/reports?from=2025-01-01&to=2025-12-31&table=T7",
        None,
        expect("login", 403, 200, 403, 200),
    ),
    (
        "period report's integrity answer",
        "GET",
        "/reports/integrity?from=2025-01-01&to=2025-12-31",
        None,
        expect(401, 403, 200, 403, 200),
    ),
    ("period report JSON", "GET", "/reports.json", None, expect("login", 403, 200, 403, 200)),
    ("period report CSV", "GET", "/reports.csv", None, expect("login", 403, 200, 403, 200)),
    ("fair-play review", "GET", "/fairplay", None, expect("login", 403, 200, 200, 200)),
    (
        "open a case from a fair-play flag",
        "POST",
        "/fairplay/case",
        {"key": "timing:nobody", "date_from": "2025-01-01", "date_to": "2025-12-31", "table": ""},
        expect(401, 403, 403, 404, 403),
    ),
    ("access log", "GET", "/admin/access-log", None, expect("login", 403, 403, 403, 200)),
    ("access log CSV", "GET", "/admin/access-log.csv", None, expect("login", 403, 403, 403, 200)),
    ("admin home", "GET", "/admin", None, expect("login", 403, 403, 403, "/admin/access-log")),
    ("users", "GET", "/admin/users", None, expect("login", 403, 403, 403, 200)),
    (
        "add a user",
        "POST",
        "/admin/users",
        {"username": "matrix-{role}", "role": "auditor", "password": "matrix-password-1"},
        expect(401, 403, 403, 403, "/admin/users"),
    ),
    (
        "disable a user",
        "POST",
        "/admin/users/victim/disable",
        {},
        expect(401, 403, 403, 403, "/admin/users"),
    ),
    (
        "enable a user",
        "POST",
        "/admin/users/victim/enable",
        {},
        expect(401, 403, 403, 403, "/admin/users"),
    ),
    ("sign out", "POST", "/logout", {}, expect(401, "login", "login", "login", "login")),
    ("unknown page", "GET", "/no/such/page", None, expect("login", 404, 404, 404, 404)),
    # The ingest API: an operator token, never a site session.
    ("API without a token", "GET", f"/api/v1/games/{OWN}", None, expect(401, 401, 401, 401, 401)),
    (
        "API post without a token",
        "POST",
        "/api/v1/games",
        {},
        expect(401, 401, 401, 401, 401),
    ),
    ("API description", "GET", "/api/v1/openapi.json", None, expect(200, 200, 200, 200, 200)),
    ("API schemas", "GET", "/api/v1/schemas/", None, expect(200, 200, 200, 200, 200)),
    ("API schema", "GET", "/api/v1/schemas/game.json", None, expect(200, 200, 200, 200, 200)),
]

ROUTES_COVERED = {
    "healthz": "/healthz",
    "readyz": "/readyz",
    "metrics": "/metrics",
    "auth.login": "/login",
    "auth.logout": "/logout",
    "static": "/static/",
    "games.index": "/games",
    "games.game": f"/games/{OWN}",
    "replays.replay": "/replay?",
    "replays.table_fragment": "/replay/table?",
    "replays.table_image": "/replay/table.svg",
    "audit.audit": "/audit",
    "audit.audit_json": "/audit.json",
    "audit.audit_csv": "/audit.csv",
    "players.player": "/players/",
    "disputes.index": "/disputes",
    "disputes.new": "/disputes/new",
    "disputes.case": "/disputes/{case_",
    "disputes.add_note": "/notes",
    "disputes.add_evidence": "/evidence",
    "disputes.close": "/close",
    "admin.index": "/admin",
    "fairplay.index": "/fairplay",
    "fairplay.open_case": "/fairplay/case",
    "reports.index": "/reports?",
    "reports.report_json": "/reports.json",
    "reports.integrity_part": "/reports/integrity",
    "reports.report_csv": "/reports.csv",
    "admin.access_log_page": "/admin/access-log",
    "admin.access_log_csv": "/admin/access-log.csv",
    "admin.users": "/admin/users",
    "admin.add_user": "/admin/users",
    "admin.disable_user": "/disable",
    "admin.enable_user": "/enable",
    "api.game": "/api/v1/games/",
    "api.start_game": "/api/v1/games",
    "api.openapi": "/api/v1/openapi.json",
    "api.schemas": "/api/v1/schemas/",
    "api.schema": "/api/v1/schemas/game.json",
}
# Covered by the API's own tests (tests/test_api*.py): token required, as "API ..." rows show.
API_ROUTES_ELSEWHERE = {"api.post_move", "api.settle"}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    from replays.disputes.cases import Disputes
    from replays.store.application import Ledger

    url = f"sqlite:///{tmp_path_factory.mktemp('matrix') / 'ledger.sqlite3'}"
    load_games(url)
    app = create_app({"DATABASE_URL": url, "TESTING": True})
    ensure_account(url, "auditor", player=None)
    ensure_account(url, "admin")
    from replays.access import accounts

    accounts.add_user("victim", "auditor", "victim-password-1", url=url)
    officer = accounts.find_user(ensure_account(url, DISPUTE_OFFICER), url=url)
    p1 = accounts.find_user(ensure_account(url, PLAYER, player="p1"), url=url)
    p2 = accounts.find_user(ensure_account(url, PLAYER, player="p2"), url=url)
    disputes = Disputes(Ledger(url))
    cases = {
        "case_officer": disputes.open_case(officer, OWN, 1, "officer's own look").case_id,
        "case_p1": disputes.open_case(p1, OWN, 2, "p1 says the pick was wrong").case_id,
        "case_p2": disputes.open_case(p2, OWN, 3, "p2 disputes the drop").case_id,
        "case_notes": disputes.open_case(officer, OWN, 4, "for notes").case_id,
        "case_close": disputes.open_case(officer, OWN, 5, "to be closed").case_id,
    }
    return app, cases


_SESSIONS: dict[tuple[int, str], str] = {}


def client_for(app, role: str):
    """A fresh client per test, carrying the session of one real sign-in per role (signing
    in costs a password hash check, so it is done once)."""
    client = app.test_client()
    if role == ANON:
        return client
    key = (id(app), role)
    if key not in _SESSIONS:
        first = signed_in(app, PLAYER, player="p1") if role == PLAYER_P1 else signed_in(app, role)
        _SESSIONS[key] = first.get_cookie("session").value
    client.set_cookie("session", _SESSIONS[key])
    return client


def own_account_client(app, role: str):
    """Signed in with an account of its own (made for this one test)."""
    from replays.access import accounts

    name = f"own-{role.replace('_', '-')}"
    url = app.config["DATABASE_URL"]
    if accounts.find_user(name, url=url) is None:
        real_role, player = (PLAYER, "p1") if role == PLAYER_P1 else (role, None)
        accounts.add_user(name, real_role, PASSWORD, player=player, url=url)
    client = app.test_client()
    assert log_in(client, name).status_code == 302
    return client


TOKEN = re.compile(r'name="csrf_token"[^>]*value="([^"]+)"')


def csrf_for(client) -> str:
    page = client.get("/login")
    if page.status_code == 302:  # signed in: any page carries the sign-out form's token
        page = client.get("/disputes")
    found = TOKEN.search(page.get_data(as_text=True))
    return found.group(1) if found else ""


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(
    ("label", "method", "path", "data", "answers"), MATRIX, ids=[row[0] for row in MATRIX]
)
def test_access(site, role, label, method, path, data, answers):
    app, cases = site
    if label == "sign out" and role != ANON:
        client = own_account_client(app, role)  # signing out ends the account's sessions
    else:
        client = client_for(app, role)
    path = path.format(**cases)
    if method == "GET":
        response = client.get(path)
    else:
        form = {key: value.format(role=role) for key, value in (data or {}).items()}
        form["csrf_token"] = csrf_for(client)
        response = client.post(path, data=form)
    wanted = answers[role]
    status, location = response.status_code, response.headers.get("Location", "")
    body = response.get_data(as_text=True)
    assert "Traceback" not in body
    if isinstance(wanted, int):
        assert status == wanted, f"{label} as {role}: {status} {location} {body[:300]}"
    elif wanted == "login":
        assert status == 302 and "/login" in location, f"{label} as {role}: {status} {location}"
    else:
        assert status == 302 and wanted in location, f"{label} as {role}: {status} {location}"


def test_every_route_is_in_the_matrix(site):
    app, _ = site
    endpoints = {rule.endpoint for rule in app.url_map.iter_rules()}
    missing = endpoints - set(ROUTES_COVERED) - API_ROUTES_ELSEWHERE
    assert not missing, f"routes with no row in the access matrix: {sorted(missing)}"
    paths = " ".join(row[2] for row in MATRIX)
    for endpoint, fragment in ROUTES_COVERED.items():
        assert fragment in paths, f"{endpoint}: no matrix row requests {fragment}"


def test_every_route_declares_who_may_use_it(site):
    """No page is open to players just because nobody listed it (the default is staff)."""
    from web.auth import POLICY, PUBLIC_ENDPOINTS

    app, _ = site
    for rule in app.url_map.iter_rules():
        endpoint = rule.endpoint
        if endpoint in PUBLIC_ENDPOINTS or endpoint.startswith("api."):
            continue
        view = app.view_functions[endpoint]
        assert endpoint in POLICY or hasattr(view, "allowed_roles"), endpoint


# -- what a player's view leaves out ----------------------------------------------------------


def seat_cards(html: str, player: str) -> list[str]:
    section = re.search(
        rf'<section class="seat[^"]*" data-player="{player}".*?</section>', html, re.S
    )
    assert section, f"no seat section for {player}"
    return re.findall(r'data-card="([^"]+)"', section.group(0))


def test_a_player_sees_only_their_own_cards_during_play(site):
    app, _ = site
    player = client_for(app, PLAYER_P1)
    auditor = client_for(app, AUDITOR)
    path = f"/games/{OWN}/replay?move=2"
    mine = player.get(path + "&seat=p1").get_data(as_text=True)
    full = auditor.get(path).get_data(as_text=True)
    assert seat_cards(full, "p2") and seat_cards(full, "p3")
    assert seat_cards(mine, "p1") == seat_cards(full, "p1")
    assert seat_cards(mine, "p2") == [] and seat_cards(mine, "p3") == []
    fragment = player.get(f"/games/{OWN}/replay/table?move=2&seat=p1").get_data(as_text=True)
    assert seat_cards(fragment, "p2") == []


def test_a_players_summary_keeps_a_dropped_hand_face_down(site):
    """At the end the table revealed the winner's and the shown hands, never a drop's."""
    app, _ = site
    mine = client_for(app, PLAYER_P1).get(f"/games/{OWN}").get_data(as_text=True)
    full = client_for(app, AUDITOR).get(f"/games/{OWN}").get_data(as_text=True)

    def final_hand(html: str, player: str) -> list[str]:
        found = re.search(
            rf'<article class="final-hand" data-player="{player}">.*?</article>', html, re.S
        )
        assert found, f"no final hand for {player}"
        return re.findall(r'data-card="([^"]+)"', found.group(0))

    assert final_hand(full, "p2"), "the auditor sees the dropped hand"
    assert final_hand(mine, "p2") == []
    assert final_hand(mine, "p1") == final_hand(full, "p1")


def test_a_player_is_offered_only_what_they_may_open(site):
    app, _ = site
    player = client_for(app, PLAYER_P1)
    replay = player.get(f"/games/{OWN}/replay?move=2&seat=p1").get_data(as_text=True)
    assert "Full table" not in replay and "p2’s view" not in replay and "p1’s view" in replay
    assert f"/games/{OWN}/audit" not in replay
    assert f"/disputes/new?game={OWN}&amp;move=2" in replay
    listing = player.get("/games?player=p1").get_data(as_text=True)
    assert "/audit" not in listing and 'href="/players/p2"' not in listing
    auditor = client_for(app, AUDITOR).get(f"/games/{OWN}/replay?move=2").get_data(as_text=True)
    assert "Full table" in auditor and f"/games/{OWN}/audit" in auditor
    assert "/disputes/new" not in auditor  # auditors read cases; officers and players open them
