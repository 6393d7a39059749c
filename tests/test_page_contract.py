"""The page contract (issue 30): every page type × every variant × every role.

One store per engine holds simulated games of every registered variant (the variants come
from the registry and the simulator plays each through its bot, so a variant added later
is in the matrix by itself, and one the simulator cannot play fails it), with half of them
carrying an operator's wrong figures so that every audit has discrepancies to mark, and the
demo's dispute cases. For each variant one settled game is opened by each role: a player of
the game, a player who is not in it, an auditor, a dispute officer and an admin. The pages:
the games list, the game's summary, its replay at its first, a middle and its last move, its
audit, the player's history and any dispute case on the game. On every page that opens:

- each net shown for a player (``data-net``) is the ledger's: that player's credits minus
  debits for the game, read here with plain SQL;
- every other money figure carries its exact value (``data-money``) and its kind
  (``data-money-kind``; a player's also ``data-player``, a ledger line's ``data-account``),
  checked against the game's ``ledger_entries`` (dispute adjustments aside unless named):
  ``credit``/``debit`` a player's credits/debits (a prize, a split share, a points loser's
  amount), ``gross`` all the debits (a game's gross, a match's prize pool), ``fee`` the
  operator's fee account's credits, ``net_pool`` gross − fee, ``entry_fee`` each player's
  first entry (its ``settlement`` debit), ``rejoin_fee`` one of the player's other debits,
  ``point_value`` the player's in ``player_results``, ``ledger_debit``/``ledger_credit``
  summed per account over the page against that account's lines, ``ledger_debits``/
  ``ledger_credits`` the game's totals, ``adjustment`` a line of the case (``data-case``); a
  split's working: ``split_first`` + ``split_equal`` is the player's ``credit``,
  ``split_rest`` the sum of the equal parts, each equal part ``split_equal_base`` or a paisa
  more, each first part a whole number of ``split_drop_worth``. ``reported`` (the operator's),
  ``stated`` (a figure a discrepancy quotes) and ``recomputed`` (the audit's line beside a
  ledger line that differs) are not the ledger's and are only required to be marked;
- no player's money goes unmarked: the site writes money, and nothing else, with exactly
  two decimals (``money`` in web/templates/_macros.html, ``money_text``), so a figure of that
  shape in the visible text of a row (``tr``, ``li``, ``p``) that names a player of the store,
  outside every element carrying ``data-net`` or ``data-money``, is a player's money the
  checks above cannot see;
- each hand drawn face up in play has its analysis beside it when the variant analyses
  hands (``Variant.analyses_hands``), and a variant that does not says so and draws none;
- no card is written as letters ("9C"): the site writes suit symbols;
- every link on the page opens for the same user (answers below 400);
- a player sees no other seat's cards face up unless that player showed them at the table;
- each discrepancy the variant's audit finds is marked on the audit page (``data-field``);
- each missed chance of the player's that the replay lists as a moment is in the player
  history's "Missed chance" cell for the game, with the same words and move; a variant
  without hand analysis lists none and its cell gives its reason.

That nothing scrolls sideways at 390 px is checked in a real browser
(tests/browser/test_page_contract_in_chromium.py), on the same kind of store.
"""

from __future__ import annotations

import re
from decimal import Decimal
from urllib.parse import parse_qsl, urlsplit

import pytest
import sqlalchemy as sa
from auth_support import signed_in
from pg_support import postgres_schema_url

from domain import variants
from replays.access.accounts import ADMIN, AUDITOR, DISPUTE_OFFICER, PLAYER
from web import create_app

SEED = 30
GAMES = 24  # enough for every variant to have settled games at two tables of its own
PLAYER_IN, PLAYER_OUT = "player in the game", "player not in the game"
ROLES = (PLAYER_IN, PLAYER_OUT, AUDITOR, DISPUTE_OFFICER, ADMIN)
# A move list links every move and the games list every game: two links of each route
# (ids aside) and query shape are followed.
LINKS_PER_ROUTE = 2
LETTER_CARD = re.compile(r"(?<![\w/.-])(?:10|[2-9TJQKA])[CDHS](?![\w/-])")
SHOWING_MOVES = ("declare", "show")


def build_store(url: str) -> None:
    """Simulated games of every registered variant, half with an operator's wrong report."""
    from replays.demo import seed_dispute_cases
    from replays.simulation import Floor, Simulation, store_games
    from replays.store.schema import migrate

    names = tuple(v.name for v in variants.all_variants())
    migrate(url)
    floor = Floor(seed=SEED, variants=names, tables=2 * len(names), players=12, month="2025-03")
    store_games(Simulation(floor, discrepancy_rate=0.5).games(GAMES), url=url)
    seed_dispute_cases(url)


def make_site(url: str):
    build_store(url)
    return create_app({"DATABASE_URL": url, "TESTING": True, "GAMES_PER_PAGE": 500})


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    yield make_site(f"sqlite:///{tmp_path_factory.mktemp('contract') / 'ledger.sqlite3'}")


@pytest.fixture(scope="module")
def postgres_site():
    url, drop = postgres_schema_url()
    try:
        yield make_site(url)
    finally:
        drop()


def rows(app, query: str, **params) -> list:
    from replays.store.db import engine_for

    with engine_for(app.config["DATABASE_URL"]).connect() as connection:
        return connection.execute(sa.text(query), params).all()


def chosen_game(app, variant: str) -> tuple[str, list[str]]:
    """The variant's settled game with a discrepancy (else any settled one) and its players."""
    found = rows(
        app,
        "SELECT game_id, players FROM games WHERE variant = :v AND ended_at IS NOT NULL "
        "ORDER BY discrepancy DESC, game_id",
        v=variant,
    )
    assert found, f"the store holds no settled {variant} game: the simulator cannot play it"
    game_id, players = found[0]
    if isinstance(players, str):
        import json

        players = json.loads(players)
    return game_id, [p["id"] if isinstance(p, dict) else str(p) for p in players]


def outsider(app, players: list[str]) -> str:
    every = set()
    for (listed,) in rows(app, "SELECT DISTINCT player FROM player_results"):
        every.add(listed)
    others = sorted(every - set(players))
    assert others, "every player of the store sits in this game"
    return others[0]


def ledger_net(app, game_id: str, player: str) -> Decimal | None:
    found = rows(
        app,
        "SELECT debit, credit FROM ledger_entries WHERE game_id = :g AND player = :p",
        g=game_id,
        p=player,
    )
    if not found:
        return None
    # Money columns hold paise as integers (replays/readmodels/models.py, Fixed(2)).
    paise = sum(int(credit) - int(debit) for debit, credit in found)
    return Decimal(paise) / 100


def client_for(app, role: str, player: str | None):
    if role in (PLAYER_IN, PLAYER_OUT):
        return signed_in(app, PLAYER, player=player)
    return signed_in(app, role)


def fetch(client, path: str):
    """GET ``path``, following redirects inside the site (a player sent to their seat)."""
    response = client.get(path)
    hops = 0
    while response.status_code in (301, 302, 303) and hops < 3:
        path = response.headers["Location"]
        response = client.get(path)
        hops += 1
    return path, response


def visible_text(html: str) -> str:
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    html = re.sub(r"<svg\b.*?</svg>", " ", html, flags=re.S)
    return re.sub(r"<[^>]+>", " ", html)


def seat_sections(html: str) -> dict[str, str]:
    """Each seat's section of a replay's table, by player."""
    found = {}
    for match in re.finditer(
        r'<section class="seat[^"]*" data-player="([^"]+)"(.*?)</section>', html, re.S
    ):
        found[match.group(1)] = match.group(0)
    return found


def hand_faces(section: str) -> bool:
    """Whether the seat's hand (not its books or its analysis) shows any card face up."""
    hands = re.findall(
        r'<(?:div|figure) class="hand-wrap[^"]*">(.*?)</(?:div|figure)>', section, re.S
    )
    return any("data-card=" in hand for hand in hands)


# -- the checks ----------------------------------------------------------------------------


def check_links(client, path: str, html: str, problems: list[str], answered: dict) -> None:
    """Up to ``LINKS_PER_ROUTE`` links of each route and query shape on the page must open
    for the same user. ``answered`` keeps each link's status for the user's other pages: the
    same address asked again by the same user gets the same answer, so it is fetched once."""
    seen: dict[tuple, int] = {}
    for href in sorted(set(re.findall(r'<a\b[^>]*\bhref="([^"#][^"]*)"', html))):
        href = href.replace("&amp;", "&")
        parts = urlsplit(href)
        if parts.scheme or parts.netloc or not parts.path.startswith("/"):
            continue
        if parts.path.startswith("/static/") or parts.path == "/logout":
            continue
        # One route with other ids (another game, another player) is the same link twice.
        route = re.sub(r"/[^/]*\d[^/]*", "/*", parts.path)
        shape = (route, tuple(sorted(k for k, _ in parse_qsl(parts.query))))
        seen[shape] = seen.get(shape, 0) + 1
        if seen[shape] > LINKS_PER_ROUTE:
            continue
        if href not in answered:
            answered[href] = fetch(client, href)[1].status_code
        if answered[href] >= 400:
            problems.append(f"{path} links to {href}, which answers {answered[href]}")


def check_cards_written(path: str, html: str, problems: list[str]) -> None:
    letters = sorted(set(LETTER_CARD.findall(visible_text(html))))
    if letters:
        problems.append(f"{path} writes cards as letters: {', '.join(letters[:8])}")


def check_nets(app, path: str, html: str, game_id: str, player: str | None, problems) -> None:
    """Every ``data-net`` on the page against the ledger, by its row's game and player."""
    query = dict(parse_qsl(urlsplit(path).query))
    page_player = query.get("player") or (
        path.split("/players/", 1)[1] if "/players/" in path else None
    )
    for row in re.findall(r"<tr\b.*?</tr>", html, re.S):
        net = re.search(r'data-net="([^"]*)"', row)
        if net is None:
            continue
        in_row = re.search(r'data-game="([^"]+)"', row) or re.search(
            r'/games/([^/"?]+)/replay', row
        )
        row_game = in_row.group(1) if in_row and page_player else game_id
        row_player = page_player
        if row_player is None:
            cell = re.search(r'<th scope="row">(.*?)</th>', row, re.S)
            row_player = re.sub(r"<[^>]+>", "", cell.group(1)).strip() if cell else player
        wanted = ledger_net(app, row_game, row_player)
        shown = Decimal(net.group(1)) if net.group(1) else None
        if shown != wanted:
            problems.append(
                f"{path}: {row_player}'s net in {row_game} shows {shown}, the ledger says {wanted}"
            )


# Money as the site writes it (web/templates/_macros.html ``money``, domain.money.money_text).
MONEY_FIGURE = re.compile(r"(?<![\w.,])\d+(?:,\d{3})*\.\d{2}(?![\w])")
MARKED = re.compile(r'<(\w+)\b[^>]*\bdata-(?:net|money)="[^"]*"[^>]*>.*?</\1>', re.S)
MONEY_MARK = re.compile(r'<\w+\b[^>]*\bdata-money="[^"]*"[^>]*>')
PLAYER_ROW = re.compile(r"<(tr|li|p)\b.*?</\1>", re.S)
NOT_THE_LEDGERS = ("reported", "stated", "recomputed")
PAISA = Decimal("0.01")


def every_player(app) -> frozenset[str]:
    return frozenset(
        player for (player,) in rows(app, "SELECT DISTINCT player FROM player_results")
    )


def check_money_marked(app, path: str, html: str, problems: list[str]) -> None:
    """No money figure in a row naming a player outside a ``data-net``/``data-money`` mark."""
    players = every_player(app)
    for row in PLAYER_ROW.finditer(html):
        text = re.sub(r"\s+", " ", visible_text(MARKED.sub(" ", row.group(0)))).strip()
        figures = MONEY_FIGURE.findall(text)
        if not figures:
            continue
        named = [
            p
            for p in re.findall(r"[\w:.-]+", text)
            if p.rpartition(":")[2].rpartition(".")[2] in players
        ]
        if named:
            problems.append(
                f"{path}: unmarked money {', '.join(figures)} in a row naming {named[0]}: {text[:120]}"
            )


def attribute(tag: str, name: str) -> str | None:
    found = re.search(rf'\b{name}="([^"]*)"', tag)
    return found.group(1) if found else None


def row_game(html: str, at: int, game_id: str) -> str:
    """The game of the table row around ``at`` (a games list), else the page's."""
    opened = html.rfind("<tr", 0, at)
    if opened > html.rfind("</tr>", 0, at):
        in_row = attribute(html[opened : html.find(">", opened)], "data-game")
        if in_row:
            return in_row
    return game_id


def ledger_lines(app, game_id: str) -> list[tuple]:
    """The game's lines: (account, player, kind, debit, credit, dispute) in rupees."""
    found = rows(
        app,
        "SELECT account, player, kind, debit, credit, dispute_id FROM ledger_entries "
        "WHERE game_id = :g",
        g=game_id,
    )
    return [
        (a, p, k, Decimal(int(d)) / 100, Decimal(int(c)) / 100, x) for a, p, k, d, c, x in found
    ]


def expected_money(app, lines, kind: str, player, game_id: str, tag: str):
    """The ledger's figure for a mark of ``kind``, or a set of allowed ones."""
    from domain.money import FEE_ACCOUNT, SETTLEMENT_KIND
    from replays.readmodels.reports import ADJUSTMENT_KIND

    posted = [line for line in lines if line[2] != ADJUSTMENT_KIND]
    if kind in ("credit", "debit"):
        column = 4 if kind == "credit" else 3
        return sum((line[column] for line in posted if line[1] == player), Decimal("0.00"))
    if kind == "gross":
        return sum((line[3] for line in posted), Decimal("0.00"))
    if kind == "fee":
        return sum((line[4] for line in posted if line[0] == FEE_ACCOUNT), Decimal("0.00"))
    if kind == "net_pool":
        return expected_money(app, lines, "gross", None, game_id, tag) - expected_money(
            app, lines, "fee", None, game_id, tag
        )
    if kind == "entry_fee":
        return {line[3] for line in posted if line[1] and line[2] == SETTLEMENT_KIND and line[3]}
    if kind == "rejoin_fee":
        return {line[3] for line in posted if line[1] == player and line[2] != SETTLEMENT_KIND}
    if kind == "ledger_debits":
        return sum((line[3] for line in lines), Decimal("0.00"))
    if kind == "ledger_credits":
        return sum((line[4] for line in lines), Decimal("0.00"))
    if kind == "adjustment":
        case = attribute(tag, "data-case")
        return {amount for line in lines if line[5] == case for amount in line[3:5] if amount}
    if kind == "point_value":
        found = rows(
            app,
            "SELECT point_value FROM player_results WHERE game_id = :g AND player = :p",
            g=game_id,
            p=player,
        )
        # A rate column holds millionths of a rupee (replays/readmodels/models.py, Fixed(6)).
        return Decimal(int(found[0][0])) / 1_000_000 if found else None
    raise KeyError(kind)


def check_money(app, path: str, html: str, game_id: str, problems: list[str]) -> None:
    """Every ``data-money`` on the page against the ledger, by its kind (the docstring)."""
    books: dict[str, list] = {}
    per_account: dict[tuple, Decimal] = {}
    split: dict[str, dict[str, set]] = {}
    for mark in MONEY_MARK.finditer(html):
        tag = mark.group(0)
        kind, player = attribute(tag, "data-money-kind"), attribute(tag, "data-player")
        try:
            shown = Decimal(attribute(tag, "data-money"))
        except ArithmeticError:
            problems.append(f"{path}: a {kind} figure marked {tag} is not a number")
            continue
        game = row_game(html, mark.start(), game_id)
        lines = books.setdefault(game, ledger_lines(app, game))
        whose = f"{player}'s " if player else ""
        if kind in NOT_THE_LEDGERS:
            continue
        if kind in ("ledger_debit", "ledger_credit"):
            key = (game, attribute(tag, "data-account"), kind)
            per_account[key] = per_account.get(key, Decimal("0.00")) + shown
            continue
        if kind and kind.startswith("split_"):
            split.setdefault(kind, {}).setdefault(player, set()).add(shown)
            continue
        try:
            wanted = expected_money(app, lines, kind, player, game, tag)
        except KeyError:
            problems.append(f"{path}: money of an unknown kind {kind!r}: {tag}")
            continue
        if shown not in wanted if isinstance(wanted, set) else shown != wanted:
            problems.append(
                f"{path}: {whose}{kind} in {game} shows {shown}, the ledger says {wanted}"
            )
    for (game, account, kind), shown in per_account.items():
        column = 3 if kind == "ledger_debit" else 4
        wanted = sum((line[column] for line in books[game] if line[0] == account), Decimal("0.00"))
        if shown != wanted:
            problems.append(
                f"{path}: {account}'s {kind} lines in {game} show {shown}, the ledger says {wanted}"
            )
    if split:
        check_split(path, split, books.get(game_id) or ledger_lines(app, game_id), problems)


def check_split(path: str, split: dict, lines: list, problems: list[str]) -> None:
    """A split's working (the first and equal parts, the rest, the base, a drop's worth)
    against each sharer's credit in the ledger."""
    from replays.readmodels.reports import ADJUSTMENT_KIND

    firsts, equals = split.get("split_first", {}), split.get("split_equal", {})
    for player in sorted(set(firsts) | set(equals)):
        first, equal = firsts.get(player, {Decimal(0)}), equals.get(player, {Decimal(0)})
        credit = sum(
            (line[4] for line in lines if line[1] == player and line[2] != ADJUSTMENT_KIND),
            Decimal("0.00"),
        )
        if len(first) != 1 or len(equal) != 1 or min(first) + min(equal) != credit:
            problems.append(
                f"{path}: {player}'s split shows first {sorted(first)} + equal {sorted(equal)}, "
                f"the ledger credits {credit}"
            )
    parts = [min(values) for values in equals.values()]
    for rest in split.get("split_rest", {}).get(None, ()):
        if parts and rest != sum(parts):
            problems.append(f"{path}: the split's rest {rest} is not its equal parts {parts}")
    for base in split.get("split_equal_base", {}).get(None, ()):
        if any(part - base not in (0, PAISA) for part in parts):
            problems.append(f"{path}: the equal parts {parts} are not {base} or a paisa more")
    for worth in split.get("split_drop_worth", {}).get(None, ()):
        if any(min(values) % worth for values in firsts.values()):
            problems.append(f"{path}: a split's first part is not whole drops of {worth}")


def check_replay(path, html, variant, viewer: str | None, steps, move: int, problems) -> None:
    sections = seat_sections(html)
    if not variant.analyses_hands:
        if "hand-analysis" in html:
            problems.append(
                f"{path}: {variant.name} draws a hand analysis it says it does not have"
            )
        if "/replay" in path and variant.no_analysis_words not in html and "table-frame" in html:
            problems.append(f"{path}: {variant.name} does not say it has no hand analysis")
    for player, section in sections.items():
        status = re.search(r'data-status="([^"]+)"', section)
        face_up = hand_faces(section)
        if (
            variant.analyses_hands
            and face_up
            and status
            and status.group(1) in ("waiting", "playing")
            and 'class="hand-analysis"' not in section
        ):
            problems.append(f"{path}: {player}'s hand is face up in play without its analysis")
        if viewer is not None and player != viewer and face_up and not showed(steps, move, player):
            problems.append(f"{path}: {viewer} sees {player}'s cards, never shown at the table")


def showed(steps: list[dict], move: int, player: str) -> bool:
    """Whether ``player`` laid their hand face up (declared or showed) in the deal on the
    table after ``move`` steps: only such cards may be seen by another seat."""
    shown = False
    for step in steps[:move]:
        if step.get("type") == "deal":
            shown = False  # a new deal: the last one's shows are off the table
        elif step.get("type") in SHOWING_MOVES and step.get("player") == player:
            shown = True
    return shown


def check_audit(path, html, audit, problems) -> None:
    marked = set()
    for fields in re.findall(r'class="[^"]*\bdiffers\b[^"]*"[^>]*data-field="([^"]*)"', html):
        marked.update(fields.split(" | "))
    for found in audit.discrepancies:
        if found.field not in marked:
            problems.append(f"{path}: the discrepancy {found.source} {found.field} is not marked")


MOMENT = re.compile(
    r'<a href="[^"]*" data-move="(\d+)" class="moment moment-missed_(\w+)">\d+\. (.*?)</a>', re.S
)


def history_cell(html: str, game_id: str) -> str | None:
    row = re.search(rf'<tr data-game="{re.escape(game_id)}".*?</tr>', html, re.S)
    if row is None:
        return None
    cell = re.search(r'<td class="missed-chance"([^>]*)>(.*?)</td>', row.group(0), re.S)
    return cell.group(0) if cell else None


def check_missed_chances(path, history, replay, game_id, player, variant, problems) -> None:
    """The replay's missed-chance moments of ``player`` (their own kinds: none read from
    another hand) against their history's cell for the game."""
    cell = history_cell(history, game_id)
    if cell is None:
        problems.append(f"{path} has no row for {game_id}")
        return
    moments = [
        (int(move), text)
        for move, kind, text in MOMENT.findall(replay)
        if kind != "fed_next" and text.startswith(f"{player} ")
    ]
    if not variant.analyses_hands:
        if moments:
            problems.append(
                f"{game_id}'s replay lists missed chances {variant.name} has no analysis for"
            )
        if variant.no_analysis_words.replace("'", "&#39;") not in cell:
            problems.append(f"{path}: {game_id}'s missed-chance cell does not say why it is empty")
        return
    if "data-analysed" not in cell:
        problems.append(f"{path}: {game_id}'s missed-chance cell was not filled")
        return
    for move, text in moments:
        if f'move={move}&amp;seat={player}" title="{text}">move {move}</a>' not in cell:
            problems.append(
                f"{path}: the replay's missed chance at move {move} ({text}) is not in the history"
            )


# -- the matrix -----------------------------------------------------------------------------


def variant_names() -> list[str]:
    return [variant.name for variant in variants.all_variants()]


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("name", variant_names())
def test_every_page_keeps_the_contract(site, name, role):
    keeps_the_contract(site, name, role)


# PostgreSQL: every variant, as a player of the game and as an auditor (the roles that see
# the most: a seat view with its nets and history, and the full view with the audit); the
# other roles read the same queries (the whole matrix runs on SQLite above).
@pytest.mark.postgres
@pytest.mark.parametrize("role", (PLAYER_IN, AUDITOR))
@pytest.mark.parametrize("name", variant_names())
def test_every_page_keeps_the_contract_on_postgresql(postgres_site, name, role):
    keeps_the_contract(postgres_site, name, role)


def keeps_the_contract(site, name: str, role: str) -> None:
    from replays.store.application import Ledger

    variant = variants.get(name)
    game_id, players = chosen_game(site, name)
    ledger = Ledger(site.config["DATABASE_URL"])
    game = ledger.get_game(game_id)
    steps = variant.timeline(game)
    me = (
        players[0] if role == PLAYER_IN else outsider(site, players) if role == PLAYER_OUT else None
    )
    client = client_for(site, role, me)
    subject = me or players[0]  # whose history and nets the page shows
    total = len(steps)
    moves = sorted({1, total // 2, total})
    pages = [f"/games?player={subject}", f"/games/{game_id}", f"/players/{subject}"]
    pages += [f"/games/{game_id}/replay?move={m}" for m in moves]
    pages.append(f"/games/{game_id}/audit")
    pages += [
        f"/disputes/{case}"
        for (case,) in rows(site, "SELECT case_id FROM dispute_cases WHERE game_id = :g", g=game_id)
    ]
    problems: list[str] = []
    opened = []
    seen: dict[str, str] = {}
    answered: dict[str, int] = {}  # each link's status for this user, asked once
    for page in pages:
        path, response = fetch(client, page)
        if response.status_code != 200:
            continue
        opened.append(page)
        html = response.get_data(as_text=True)
        seen.setdefault(
            "history" if page.startswith("/players/") else "replay" if "/replay" in path else page,
            html,
        )
        check_links(client, path, html, problems, answered)
        check_cards_written(path, html, problems)
        check_nets(site, path, html, game_id, me, problems)
        check_money(site, path, html, game_id, problems)
        check_money_marked(site, path, html, problems)
        if "/replay" in path:
            query = dict(parse_qsl(urlsplit(path).query))
            viewer = query.get("seat") if role in (PLAYER_IN, PLAYER_OUT) else None
            check_replay(path, html, variant, viewer, steps, int(query.get("move", 0)), problems)
        if path.endswith("/audit"):
            check_audit(path, html, variant.audit(game, ledger.events_of(game)), problems)
    if role != PLAYER_OUT and "history" in seen and "replay" in seen:
        check_missed_chances(
            f"/players/{subject}",
            seen["history"],
            seen["replay"],
            game_id,
            subject,
            variant,
            problems,
        )
    # Who may open what is tests/test_access_matrix.py's; here each role must reach its pages.
    if role == PLAYER_OUT:
        assert not [p for p in opened if game_id in p], f"an outsider opened {opened}"
    else:
        assert any("/replay" in p for p in opened), f"{role} opened no replay of {game_id}"
    if role in (AUDITOR, ADMIN):
        assert any(p.endswith("/audit") for p in opened), f"{role} opened no audit"
    assert not problems, "\n".join(problems)


# -- the money checks can fail ----------------------------------------------------------------


def money_variants() -> list[str]:
    return [variant.name for variant in variants.all_variants() if variant.has_money]


def a_tampered_payout_is_reported(site, name: str) -> None:
    """One rupee more on the ledger line paying a player of the game: the pages still show
    the settlement's figure, so the contract names the player, the game and both amounts."""
    game_id, _ = chosen_game(site, name)
    (line, player, credit), *_ = rows(
        site,
        "SELECT id, player, credit FROM ledger_entries WHERE game_id = :g "
        "AND player IS NOT NULL AND credit > 0 ORDER BY id",
        g=game_id,
    )
    from replays.store.db import engine_for

    def set_credit(paise: int) -> None:
        with engine_for(site.config["DATABASE_URL"]).begin() as connection:
            connection.execute(
                sa.text("UPDATE ledger_entries SET credit = :c WHERE id = :i"),
                {"c": paise, "i": line},
            )

    set_credit(int(credit) + 100)
    try:
        with pytest.raises(AssertionError) as failed:
            keeps_the_contract(site, name, AUDITOR)
    finally:
        set_credit(int(credit))
    shown, tampered = Decimal(int(credit)).scaleb(-2), Decimal(int(credit) + 100).scaleb(-2)
    wanted = f"{player}'s credit in {game_id} shows {shown}, the ledger says {tampered}"
    assert wanted in str(failed.value), f"{name}: no {wanted!r} in:\n{failed.value}"


def unmarked_money_is_reported(site, name: str) -> None:
    """The game's summary as served keeps the rule; with the attributes of one player's
    payout taken away (the figure left as a person sees it) the check names it."""
    game_id, _ = chosen_game(site, name)
    path, response = fetch(client_for(site, AUDITOR, None), f"/games/{game_id}")
    html = response.get_data(as_text=True)
    problems: list[str] = []
    check_money_marked(site, path, html, problems)
    assert problems == []
    mark = re.search(r' data-money="([^"]*)" data-money-kind="credit" data-player="([^"]+)"', html)
    assert mark, f"{path} shows no player's payout"
    check_money_marked(site, path, html[: mark.start()] + html[mark.end() :], problems)
    figure, player = format(Decimal(mark.group(1)), ",.2f"), mark.group(2)
    assert [p for p in problems if f"unmarked money {figure} in a row naming " in p], problems
    assert [p for p in problems if player in p], problems


# Each money check can fail: a ledger line that no longer matches the page, and a player's
# money shown without its mark.
BREAKS = (a_tampered_payout_is_reported, unmarked_money_is_reported)


@pytest.mark.parametrize("broken", BREAKS, ids=lambda check: check.__name__)
@pytest.mark.parametrize("name", money_variants())
def test_the_money_checks_can_fail(site, name, broken):
    broken(site, name)


@pytest.mark.postgres
@pytest.mark.parametrize("broken", BREAKS, ids=lambda check: check.__name__)
@pytest.mark.parametrize("name", money_variants())
def test_the_money_checks_can_fail_on_postgresql(postgres_site, name, broken):
    broken(postgres_site, name)
