"""/fairplay: staff see flags with evidence links, players get 403, each flag shown is in the
access log, and an officer's case from a flag records the flag and its evidence."""

from __future__ import annotations

import re

import pytest
from auth_support import csrf_token, signed_in
from fairplay_support import FROM, TO, fairplay_store

from replays.access.accounts import ADMIN, AUDITOR, DISPUTE_OFFICER, PLAYER
from web import create_app


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('fairplay') / 'ledger.sqlite3'}"
    fairplay_store(url)
    return create_app({"DATABASE_URL": url, "TESTING": True})


def flags_on(html: str) -> list[str]:
    return re.findall(r'<section class="fairplay-flag" data-key="([^"]+)"', html)


@pytest.mark.parametrize("role", [DISPUTE_OFFICER, AUDITOR, ADMIN])
def test_staff_see_the_flags_with_evidence_links(app, role):
    client = signed_in(app, role)
    page = client.get(f"/fairplay?from={FROM}&to={TO}")
    html = page.get_data(as_text=True)
    assert page.status_code == 200
    keys = flags_on(html)
    assert any(k.startswith("timing:") for k in keys) and any(
        k.startswith("feeding:") for k in keys
    )
    links = re.findall(r'class="evidence-link" href="(/games/[^"?]+/replay\?move=\d+)"', html)
    assert links
    # The evidence link opens the replay at that move, for staff.
    assert client.get(links[0]).status_code == 200
    assert 'href="/fairplay"' in client.get("/games").get_data(as_text=True)
    officer_forms = html.count('action="/fairplay/case"')
    assert officer_forms == (len(keys) if role == DISPUTE_OFFICER else 0)


@pytest.mark.parametrize("root", ["", "/ledger"])
def test_evidence_links_are_written_as_url_for_writes_them(app, root):
    # The page makes its evidence links from one url_for call: the same text, whatever the
    # game id holds and under an application mounted below a path.
    from flask import url_for

    from web.views.fairplay import _replay_link

    with app.test_request_context(base_url=f"http://localhost{root}"):
        link = _replay_link()
        for game_id in ("g-0001", "game game", "über/é?#%", "game"):
            assert link(game_id, 12) == url_for("replays.replay", game_id=game_id, move=12)


def test_evidence_lines_are_written_as_the_template_wrote_them(app):
    # The flags' evidence lines come from one function, not the template's loop: the same
    # text, escaped the same way, whatever a game id or note holds (an empty list too).
    from replays.fairplay.summary import Evidence
    from web.views.fairplay import _evidence_items, _replay_link

    loop = app.jinja_env.from_string(
        '  <ol class="evidence">\n'
        "    {% for e in evidence %}\n"
        '    <li><a class="evidence-link" href="{{ replay_link(e.game_id, e.step) }}">'
        "{{ e.game_id }}, move {{ e.step }}</a> {{ e.note }}</li>\n"
        "    {% endfor %}\n"
        "  </ol>\n"
    )
    function = app.jinja_env.from_string(
        '  <ol class="evidence">\n    {{- evidence_items(evidence) }}\n  </ol>\n'
    )
    odd = ["g-1", 'a"b<c>&d', "über/é?#%", "it's"]
    lists = [
        [],
        [
            Evidence("feed", "p1", "p2", game_id, step, 1.0, note)
            for game_id, step, note in zip(
                odd,
                [0, 7, 12, 3],
                ["took p1's discard", "<script>x</script>", "a & b", '"q"'],
                strict=True,
            )
        ],
    ]
    with app.test_request_context():
        link = _replay_link()
        for evidence in lists:
            expected = loop.render(evidence=evidence, replay_link=link)
            got = function.render(evidence=evidence, evidence_items=_evidence_items(link))
            assert got == expected
    assert "&lt;script&gt;" in expected and "a &amp; b" in expected


def test_players_get_403_and_no_link(app):
    client = signed_in(app, PLAYER, player="p0001")
    assert client.get(f"/fairplay?from={FROM}&to={TO}").status_code == 403
    assert "/fairplay" not in client.get("/games?player=p0001").get_data(as_text=True)


def test_bad_days_are_a_clear_400(app):
    client = signed_in(app, AUDITOR)
    page = client.get("/fairplay?from=2025-13-01&to=2025-03-31")
    assert page.status_code == 400 and "from must be a day" in page.get_data(as_text=True)


def test_each_flag_shown_is_an_access_log_line(app):
    import sqlalchemy as sa

    from replays.access.access_log import TABLE
    from replays.store.db import engine_for

    client = signed_in(app, AUDITOR)
    keys = flags_on(client.get(f"/fairplay?from={FROM}&to={TO}").get_data(as_text=True))
    with engine_for(app.config["DATABASE_URL"]).connect() as connection:
        views = connection.execute(
            sa.select(TABLE.c.view).where(
                TABLE.c.username == "test-auditor", TABLE.c.page == "fairplay.index"
            )
        ).scalars()
        logged = [v.removeprefix("fairplay:") for v in views]
    assert keys and all(key in logged for key in keys)


def test_an_officer_opens_a_case_from_a_flag(app):
    from replays.disputes.cases import Disputes
    from replays.store.application import Ledger

    client = signed_in(app, DISPUTE_OFFICER)
    html = client.get(f"/fairplay?from={FROM}&to={TO}").get_data(as_text=True)
    key = next(k for k in flags_on(html) if k.startswith("feeding:"))
    answer = client.post(
        "/fairplay/case",
        data={
            "csrf_token": csrf_token(html),
            "key": key,
            "date_from": FROM,
            "date_to": TO,
            "table": "",
        },
    )
    assert answer.status_code == 302 and "/disputes/DC-" in answer.headers["Location"]
    case_id = answer.headers["Location"].rsplit("/", 1)[-1]
    case = Disputes(Ledger(app.config["DATABASE_URL"])).get_case(case_id)
    flag = [entry for entry in case.timeline if entry.kind == "flag"]
    assert len(flag) == 1 and " + ".join(key.split(":", 1)[1].split("+")) in flag[0].text
    assert flag[0].moves and (case.game_id, case.move) == flag[0].moves[0][:2]
    page = client.get(f"/disputes/{case_id}").get_data(as_text=True)
    assert "attached a fair-play flag" in page
    game_id, move, _ = flag[0].moves[0]
    assert f"/games/{game_id}/replay?move={move}" in page
    # A flag that is not in the review opens nothing.
    missing = client.post(
        "/fairplay/case",
        data={
            "csrf_token": csrf_token(html),
            "key": "timing:nobody",
            "date_from": FROM,
            "date_to": TO,
        },
    )
    assert missing.status_code == 404


def test_the_page_says_what_it_shows_and_as_of_when(app):
    import sqlalchemy as sa

    from replays.fairplay.tables import FairplayReview
    from replays.store.db import engine_for

    client = signed_in(app, AUDITOR)
    # No period asked: the calendar month of the last day counted, its review kept by the
    # catch-up and read back.
    html = client.get("/fairplay").get_data(as_text=True)
    assert f'name="from" value="{FROM}"' in html and f'name="to" value="{TO}"' in html
    assert f"Review of {FROM} to {TO}" in html and "and kept: no game of the period" in html
    assert flags_on(html)
    # Another period: worked out for this look, and kept for the next.
    html = client.get("/fairplay?from=2025-03-03&to=2025-03-20").get_data(as_text=True)
    assert "Review of 2025-03-03 to 2025-03-20" in html and "for this look" in html
    with engine_for(app.config["DATABASE_URL"]).connect() as connection:
        kept = connection.execute(
            sa.select(FairplayReview.start, FairplayReview.end, FairplayReview.games)
        ).all()
    periods = {(start, end) for start, end, _ in kept}
    assert {(FROM, TO), ("2025-03-03", "2025-03-20")} <= periods
    assert all(games > 0 for _, _, games in kept)
