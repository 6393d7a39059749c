"""Fair-play review: the simulator's cheats are found, honest players are not, and the kept
statistics give the same review as the records they came from (on SQLite and PostgreSQL)."""

from __future__ import annotations

import json
import math
import random
from functools import cache

import pytest
from click.testing import CliRunner

from domain.simulation.cheats import Cheats, CheatsError
from replays.fairplay.facts import GameFacts
from replays.fairplay.signals import _candidates as pair_candidates
from replays.fairplay.signals import _seating as seating_tests
from replays.fairplay.signals import (
    benjamini_hochberg,
    binomial_sf,
    binomial_sf_given_floor,
    empirical_null,
    given_floor,
    poisson_sf,
    reaches_floor,
    review,
)
from replays.fairplay.summary import Summary, summarise
from replays.simulation import Floor, Simulation, table_at
from web.cli import main

VARIANTS = ("points", "raise", "pool", "deals")
WHOLE = ("2000-01-01", "2100-12-31")


@cache
def cheating_month():
    """A small month at high strength: 4 % of 75 players cheat in each way."""
    cheats = Cheats.parse("pair:0.06,peek:0.04,dump:0.06,bot:0.04", strength=0.95)
    floor = Floor(seed=21, players=75, tables=8, variants=VARIANTS, cheats=cheats)
    records = tuple(Simulation(floor).games(360, jobs=2))
    return floor, cheats, records


@cache
def cheating_review():
    return review(summarise(cheating_month()[2]), *WHOLE)


@cache
def honest_month():
    floor = Floor(seed=22, players=75, tables=8, variants=VARIANTS)
    return tuple(Simulation(floor).games(240, jobs=2))


def flagged(result) -> dict[frozenset, set[str]]:
    found: dict[frozenset, set[str]] = {}
    for flag in result.flags:
        found.setdefault(frozenset(flag.players), set()).add(flag.signal)
    return found


# -- statistics -------------------------------------------------------------------------------


def test_tails_and_benjamini_hochberg_against_direct_sums():
    assert binomial_sf(2, 4, 0.5) == pytest.approx(11 / 16)
    assert poisson_sf(1, 2.0) == pytest.approx(1 - math.exp(-2.0))
    assert poisson_sf(3, 0.5) == pytest.approx(1 - math.exp(-0.5) * (1 + 0.5 + 0.125))
    p = [0.001, 0.02, 0.03, 0.2, 0.9]
    q = benjamini_hochberg(p)
    # Step-up: q_(i) = min over j >= i of p_(j) m / j.
    assert q == pytest.approx([0.005, 0.05, 0.05, 0.25, 0.9])
    rng = random.Random(3)
    centre, spread = empirical_null([rng.gauss(2.0, 3.0) for _ in range(4000)], floor=None)
    assert centre == pytest.approx(2.0, abs=0.2) and spread == pytest.approx(3.0, abs=0.25)


def test_adjusted_p_values_and_clamped_tails_are_exactly_the_min_based_floats():
    """The review writes ``min(...)`` as comparisons on its hot paths: the same floats,
    ties included (a kept review must read back byte for byte the same)."""
    rng = random.Random(11)
    p = [rng.choice((0.0, 1e-9, 0.01, 0.5, 1.0)) if rng.random() < 0.3 else rng.random()]
    p += [rng.choice(p) if rng.random() < 0.3 else rng.random() ** 3 for _ in range(3000)]
    order = sorted(range(len(p)), key=p.__getitem__)
    expected, running = [1.0] * len(p), 1.0
    for rank in range(len(p), 0, -1):
        running = min(running, p[order[rank - 1]] * len(p) / rank)
        expected[order[rank - 1]] = running
    assert benjamini_hochberg(p) == expected
    for tail, floor_tail in ((0.2, 0.1), (0.05, 0.1), (0.3, 0.3), (0.0, 0.4)):
        assert given_floor(tail, floor_tail) == min(1.0, tail / floor_tail)
    for k, floor, n, rate in ((4, 2, 9, 0.3), (2, 2, 40, 0.9), (30, 2, 30, 0.99)):
        assert binomial_sf_given_floor(k, floor, n, rate) == given_floor(
            min(1.0, binomial_sf(k, n, rate)), min(1.0, binomial_sf(floor, n, rate))
        )


# -- the simulator's cheats --------------------------------------------------------------------


def test_cheats_are_read_strictly_and_their_truth_stays_out_of_the_records():
    with pytest.raises(CheatsError, match="unknown kind"):
        Cheats.parse("collude:0.1")
    with pytest.raises(CheatsError, match="share"):
        Cheats.parse("pair:lots")
    floor, cheats, records = cheating_month()
    truth = cheats.truth(floor.seed, floor.all_players())
    named = {p for entry in truth["cheaters"] for p in entry["players"]}
    assert {entry["kind"] for entry in truth["cheaters"]} == {"pair", "peek", "dump", "bot"}
    text = json.dumps(records)
    for word in ("cheat", "peek", "truth", "partner"):
        assert word not in text
    # Partners do share tables, the giver just before the taker.
    pair = next(entry["players"] for entry in truth["cheaters"] if entry["kind"] == "pair")
    together = [r for r in records if {p["id"] for p in r["players"]} >= set(pair) and "deal" in r]
    assert together
    order = [p["id"] for p in sorted(together[0]["players"], key=lambda p: p["seat"])]
    assert (order.index(pair[1]) - order.index(pair[0])) % len(order) == 1
    assert named


def test_an_honest_floor_deals_the_games_it_always_dealt():
    plain = list(Simulation(Floor(seed=4)).games(6))
    assert list(Simulation(Floor(seed=4, cheats=None)).games(6)) == plain
    assert list(Simulation(Floor(seed=4, cheats=Cheats.parse("bot:0.2", 1.0))).games(6)) != plain


def test_cheaters_are_flagged_at_high_strength():
    floor, cheats, records = cheating_month()
    result = cheating_review()
    found = flagged(result)
    truth = cheats.truth(floor.seed, floor.all_players())["cheaters"]
    missed = []
    for entry in truth:
        group = frozenset(entry["players"])
        signals = (
            set().union(*(s for k, s in found.items() if group <= k))
            if len(group) == 1
            else found.get(group, set())
        )
        expected = {
            "pair": {"feeding", "seating"},
            "dump": {"dumping", "seating"},
            "peek": {"hidden"},
            "bot": {"timing"},
        }
        if not signals & expected[entry["kind"]]:
            missed.append(entry)
    # Bots, feeding pairs and dumpers are all found; one peeker of the three may slip by at
    # this size (a few hundred choices each).
    assert [m for m in missed if m["kind"] != "peek"] == []
    assert len([m for m in missed if m["kind"] == "peek"]) <= 1
    honest_flagged = result.flagged_players() - {p for e in truth for p in e["players"]}
    assert len(honest_flagged) <= 1
    # Each flag carries evidence: moves in its games, as replay permalinks.
    ids = {r["game_id"] for r in records}
    for flag in result.flags:
        assert flag.evidence, flag.key
        for evidence in flag.to_dict()["evidence"]:
            assert evidence["game_id"] in ids
            assert evidence["url"] == f"/games/{evidence['game_id']}/replay?move={evidence['move']}"


def test_an_honest_month_flags_nobody():
    result = review(summarise(honest_month()), *WHOLE)
    assert result.tested > 200
    assert len(result.flagged_players()) <= 1, [f.key for f in result.flags]


def seated_month(games: int, players: int, cheats: Cheats | None, seed: int):
    """Only the seating of a month as the simulator draws it (each game's table and players
    from its own generator): thousands of games in seconds, a pair's every other count empty."""
    floor = Floor(
        seed=seed, players=players, tables=players // 40, variants=VARIANTS, cheats=cheats
    )
    tables = [table_at(floor, number) for number in range(1, floor.tables + 1)]
    summary = Summary()
    for index in range(games):
        rng = random.Random(f"game:{seed}:{index}")
        table = rng.choice(tables)
        seated = tuple(floor.player_ids(rng, table))
        day = floor.start_time(rng).date().isoformat()
        summary.add_game(GameFacts(f"g{index}", day, table.id, seated, chips=False))
    return floor, summary.period(*WHOLE)


def test_a_tail_given_its_floor_is_the_two_tails_divided_to_the_last_bit():
    """The feeding and folding tests read both tails off one sum of terms: the same floats as
    the two tails summed apart (a review must not change by a rounding)."""
    rng = random.Random(32)
    for _ in range(20_000):
        n, floor = rng.randint(3, 120), rng.randint(1, 3)
        k, p = rng.randint(floor, n), rng.choice([rng.random(), rng.random() ** 4, 0.0, 1.0])
        apart = given_floor(binomial_sf(k, n, p), binomial_sf(floor, n, p))
        assert binomial_sf_given_floor(k, floor, n, p) == apart, (k, floor, n, p)


def test_pairs_met_by_chance_have_seating_p_values_no_smaller_than_uniform():
    """Issue 32: with many players a pair rarely meets, and the pairs tested (three games
    together or more) are the far tail of those that met by chance. Their plain Poisson tails
    were far below uniform (nearly every tested pair under 1 %); given the floor they are not."""
    _, period = seated_month(6000, 600, None, seed=44)
    seating = [flag for flag in review(period, *WHOLE).flags if flag.signal == "seating"]
    assert seating == []
    seated = pair_candidates(period.pairs)[1]
    tested = seating_tests(seated, period.at_tables, period.table_pairs)
    assert len(tested) > 100
    for level in (0.01, 0.05, 0.2):
        assert sum(t.p <= level for t in tested) <= level * len(tested) + 3, level


def test_a_cheating_month_names_its_seated_partners_and_no_pair_met_by_chance():
    """Issue 32: partners who sit together (strength 0.5: three games in four) loosen
    Benjamini–Hochberg's threshold, and the honest pairs seen together four or five times
    where their tables explain 0.3 came through by the dozen. Every partner is still named."""
    cheats = Cheats.parse("pair:0.02,peek:0.02,dump:0.02,bot:0.02", strength=0.5)
    floor, period = seated_month(6000, 600, cheats, seed=41)
    truth = cheats.truth(floor.seed, floor.all_players())["cheaters"]
    partners = {frozenset(entry["players"]) for entry in truth if len(entry["players"]) == 2}
    named = {frozenset(flag.players) for flag in review(period, *WHOLE).flags}
    assert len(partners) == 12 and partners <= named
    assert sorted(sorted(pair) for pair in named - partners) == []


def test_a_feeder_who_drops_for_a_strong_partner_is_flagged_and_nobody_honest_is():
    """Points and Raise at high strength: each pair's feeder drops early when the partner holds
    a strong hand; the folding signal names those feeders and partners, in that order, and
    on the honest month it flags nobody."""
    cheats = Cheats.parse("pair:0.14", strength=1.0)
    floor = Floor(seed=23, players=30, tables=4, variants=("points", "raise"), cheats=cheats)
    records = list(Simulation(floor).games(300, jobs=2))
    result = review(summarise(records), *WHOLE)
    truth = cheats.truth(floor.seed, floor.all_players())["cheaters"]
    pairs = {tuple(entry["players"]) for entry in truth}
    assert len(pairs) == 2
    folding = [flag for flag in result.flags if flag.signal == "folding"]
    assert {flag.players for flag in folding} == pairs
    ids = {record["game_id"] for record in records}
    for flag in folding:
        assert flag.evidence and all(e.game_id in ids for e in flag.evidence)
        for evidence in flag.evidence:
            record = next(r for r in records if r["game_id"] == evidence.game_id)
            # The step is the replay's move number: the feeder's drop.
            move = _steps(record)[evidence.step - 1]
            assert move["type"] == "drop" and move["player"] == flag.players[0]
    honest = review(summarise(honest_month()), *WHOLE)
    assert any(f.signal == "folding" for f in _tested(honest_month()))
    assert [flag.key for flag in honest.flags if flag.signal == "folding"] == []


def test_a_bot_that_follows_the_solver_is_flagged_by_its_discards_and_nobody_honest_is():
    """Bots that take the solver's discard on most turns agree with it where people keep
    their links; the solver-agreement signal names every bot, each flag's evidence moves
    are that bot's discards of the card named, and no honest player is flagged by it (here
    or on the honest month)."""
    cheats = Cheats.parse("bot:0.06", strength=0.9)
    floor = Floor(seed=24, players=50, tables=6, variants=VARIANTS, cheats=cheats)
    records = list(Simulation(floor).games(260, jobs=2))
    result = review(summarise(records), *WHOLE)
    bots = {
        entry["players"][0] for entry in cheats.truth(floor.seed, floor.all_players())["cheaters"]
    }
    assert len(bots) == 3
    solver = [flag for flag in result.flags if flag.signal == "solver"]
    assert {flag.players[0] for flag in solver} == bots
    by_id = {r["game_id"]: r for r in records}
    for flag in solver:
        assert flag.evidence
        for evidence in flag.evidence:
            move = _steps(by_id[evidence.game_id])[evidence.step - 1]
            assert move["type"] == "discard" and move["player"] == flag.players[0]
            assert f"discarded {move['card']}, the solver's choice" in evidence.note
    honest = _tested(honest_month())
    assert any(f.signal == "solver" for f in honest)
    assert [
        f.key for f in review(summarise(honest_month()), *WHOLE).flags if f.signal == "solver"
    ] == []


def test_a_discard_is_weighed_against_the_solver_choice():
    """The discard leaving the least score agrees; a worse one does not, by how much; the
    class is the links of the solver's choice; the kept hand's score is the solver's."""
    from domain.cards import parse_cards
    from domain.rummy13.profiles import get_profile
    from domain.rummy13.solver import min_hand_score
    from replays.fairplay.facts import _Solver

    wild = parse_cards("5D")[0]
    # Best grouping of the 14: 7S 8S 9S and AH 2H 3H (pure), QS QD QC; loose 7C 7D KH KC 4D.
    hand = parse_cards("AH 2H 3H 7C 7D 7S QC QD QS KH KC 9S 8S 4D")
    solver = _Solver(get_profile("rummycircle"))
    weighed = {
        str(card): solver.discard("p1", hand, card, wild) for card in parse_cards("KH 9S 4D")
    }
    assert weighed["KH"].agreed and weighed["KH"].loss == 0
    assert not weighed["4D"].agreed and weighed["4D"].loss == 10 - 4
    # Breaking the spade run leaves the king and the rest: far worse than the solver's choice.
    without_nine = [c for c in hand if str(c) != "9S"]
    assert not weighed["9S"].agreed
    assert weighed["9S"].loss == min_hand_score(without_nine, wild) - (38 - 10)
    # The solver's choice, a king, links with the other king and with the Ace above it.
    assert {w.breaks for w in weighed.values()} == {2}
    kept = list(hand)
    kept.remove(parse_cards("4D")[0])
    assert solver.score("p1", kept, wild) == min_hand_score(kept, wild)


def test_a_wrong_show_the_deal_ends_after_is_walked_as_the_rules_play_it():
    """A simulated Pool game (the issue's month at strength 1.0): p0669 picks the open card
    and shows wrong as the deal's first turn, the next player takes the finish card from the
    open pile, and the deal ends on drops, with no later declaration. The wrong show is
    judged by its groups, as domain/ judges it, not by being the deal's last declaration."""
    from pathlib import Path

    from replays.fairplay.facts import game_facts

    path = Path(__file__).parent / "data" / "fairplay_wrong_show.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    facts = game_facts(record)
    shows = [(e.player, e.step) for e in facts.exits if e.kind == "wrong_show"]
    assert shows == [("p0669", 45)]
    # The finish card went to the open pile: p0883's pick of it faces p0669's card.
    assert any(
        (f.feeder, f.picker, f.picked, f.step) == ("p0669", "p0883", True, 46) for f in facts.feeds
    )


def test_a_game_the_walk_cannot_follow_is_named_by_game_and_move():
    from pathlib import Path

    from replays.fairplay.facts import Unreadable, game_facts

    path = Path(__file__).parent / "data" / "fairplay_wrong_show.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    first = record["deals"][0]["moves"][0]
    # The same open pick twice: the second finds the open pile empty.
    record["deals"][0]["moves"].insert(1, dict(first))
    with pytest.raises(Unreadable) as caught:
        game_facts(record)
    assert str(caught.value).startswith(
        f"game T6-pool-42-014107, move 3: an open pick from an empty pile (pick by "
        f"{first['player']})"
    )


def test_the_walks_card_reading_gives_card_parse_s_cards_or_its_error():
    """The walk reads a record's cards by one lookup of their canonical text; anything else
    (other spellings, bad text, not text) is Card.parse's to read or refuse, word for word,
    and a stock is read from its top (its last card) as before."""
    from domain.cards import ALL_CARDS, Card
    from domain.cards import card_of as _card
    from domain.cards import cards_of as _cards

    def outcome(read, *args, **kwargs):
        try:
            return read(*args, **kwargs)
        except Exception as error:  # the walk names any error by its type and text
            return f"{type(error).__name__}: {error}"

    def parse_all(texts):
        return list(map(Card.parse, texts))

    def parse_stock(texts):
        return list(map(Card.parse, reversed(texts)))

    texts = [str(card) for card in ALL_CARDS]
    assert _cards(texts) == parse_all(texts)
    assert all(a is b for a, b in zip(_cards(texts), parse_all(texts), strict=True))
    assert _cards(texts, top_last=True) == parse_stock(texts)
    odd = [["AS", "10h", " kd "], ["AS", "XX", "1Z"], ["AS", 7, "KD"], "AS KD", None, 5, {"AS": 1}]
    for value in odd:
        assert outcome(_cards, value) == outcome(parse_all, value), value
        assert outcome(_cards, value, top_last=True) == outcome(parse_stock, value), value
    for value in ["AS", "jk", "10h", "XX", None, 7, ["AS"], Card.parse("9C")]:
        assert outcome(_card, value) == outcome(Card.parse, value), value


def test_links_count_as_the_rules_read_them():
    """``links``, checked against the rule read directly (the same rank in another suit, or
    the same suit within two places, the Ace also above the King; jokers link with none)
    for every card against random hands, with and without a limit."""
    from domain.cards import ALL_CARDS, wild_rank
    from domain.rummy13.bot import links

    def linked(card, other, joker):
        if card.rank in (0, joker) or other.rank in (0, joker):
            return False
        if other.rank == card.rank:
            return other.suit != card.suit
        if other.suit != card.suit:
            return False
        low, high = sorted((card.rank, other.rank))
        return high - low <= 2 or (low == 1 and 14 - high <= 2)

    rng = random.Random(5)
    deck = list(ALL_CARDS) * 2
    for _ in range(3000):
        hand = rng.sample(deck, rng.randint(0, 15))
        card, wild = rng.choice(deck), rng.choice(deck)
        joker = wild_rank(wild)
        every = sum(linked(card, other, joker) for other in hand)
        assert links(card, hand, wild) == every
        for most in (1, 2, 3):
            assert links(card, hand, wild, most) == min(every, most)


def test_a_stored_games_players_are_one_object_each_in_its_timings():
    """Equal texts in a record's moves (a stored game's moves each hold their own copies)
    come out of the walk as one object each, so the facts pickle them once."""
    from pathlib import Path

    from replays.fairplay.facts import game_facts

    path = Path(__file__).parent / "data" / "fairplay_wrong_show.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    copied = json.loads(path.read_text(encoding="utf-8"))
    for deal in copied["deals"]:
        for move in deal["moves"]:
            for key in ("player", "type"):
                if key in move:
                    move[key] = "".join(list(move[key]))  # an equal text, not the same object
    facts, again = game_facts(record), game_facts(copied)
    assert again.packed() == facts.packed()
    intervals = again.intervals
    assert len({id(player) for player, *_ in intervals}) == len({p for p, *_ in intervals})
    assert len({id(kind) for _, kind, *_ in intervals}) == len({k for _, k, *_ in intervals})


def _tested(records) -> list:
    """Every test of a review, flagged or not (FDR 1: all of them are returned)."""
    return review(summarise(records), *WHOLE, fdr=1.0).flags


def test_evidence_moves_are_the_moves_named():
    """A feeding flag's evidence move is the picker's pick of the feeder's discard."""
    records = cheating_month()[2]
    result = cheating_review()
    by_id = {r["game_id"]: r for r in records}
    feeding = [f for f in result.flags if f.signal == "feeding"]
    assert feeding
    for flag in feeding:
        feeder, picker = flag.players
        for evidence in flag.evidence:
            record = by_id[evidence.game_id]
            moves = _steps(record)
            move = moves[evidence.step - 1]
            before = moves[evidence.step - 2]
            assert move == {**move, "player": picker, "type": "pick", "from": "open"}
            assert before["player"] == feeder and before["type"] in ("discard", "declare")


def _steps(record: dict) -> list[dict]:
    """The replay's steps: 13-card moves; in a match, each deal's rejoins, the deal, its moves."""
    if "deals" not in record:
        return list(record["moves"])
    steps: list[dict] = []
    for deal in record["deals"]:
        steps += [{"type": "rejoin"}] * len(deal.get("rejoins") or ())
        steps.append({"type": "deal"})
        steps += deal["moves"]
    return steps


def test_cli_reviews_a_records_file(tmp_path):
    records = cheating_month()[2]
    path = tmp_path / "month.jsonl"
    records = records[:60]  # the command's reading and output; the statistics are tested above
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    run = CliRunner().invoke(
        main, ["fairplay", "--records", str(path), "--from", WHOLE[0], "--to", WHOLE[1], "--json"]
    )
    assert run.exit_code == 0, run.output
    data = json.loads(run.output)
    assert data["games"] == len(records) and data["tested"] > 0
    assert {flag["signal"] for flag in data["flags"]} <= {
        "feeding",
        "seating",
        "folding",
        "hidden",
        "dumping",
        "timing",
        "solver",
    }
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"game_id": "x"\n')
    run = CliRunner().invoke(
        main, ["fairplay", "--records", str(bad), "--from", "2025-03-01", "--to", "2025-03-31"]
    )
    assert run.exit_code != 0 and "line 1: not JSON" in run.output and "Traceback" not in run.output


# -- the kept statistics, on both engines --------------------------------------------------------


def test_kept_statistics_review_as_the_records_do(database_url):
    from sqlalchemy import func, select
    from sqlalchemy.orm import Session

    from replays.fairplay import projection
    from replays.fairplay.tables import FairplayGame, FairplayPlayerDay
    from replays.simulation import store_games
    from replays.store.application import Ledger
    from replays.store.db import engine_for
    from replays.store.schema import migrate

    records = cheating_month()[2]
    chosen = [r for r in records if r["started_at"][:10] <= "2025-03-08"][:60]
    early = [r for r in chosen if r["started_at"][:10] <= "2025-03-05"]
    late = [r for r in chosen if r["started_at"][:10] > "2025-03-05"]
    assert early and late
    migrate(database_url)
    store_games(early, database_url)
    ledger = Ledger(database_url, env={"CREATE_TABLE": "no"})
    assert projection.catch_up(ledger, database_url) == len(early)
    assert projection.catch_up(ledger, database_url) == 0  # nothing counted twice
    engine = engine_for(database_url)
    with Session(engine) as session:
        before = {
            (r.day, r.table_id, r.player): r.games
            for r in session.scalars(select(FairplayPlayerDay))
        }
    store_games(late, database_url)
    assert projection.catch_up(ledger, database_url) == len(late)
    with Session(engine) as session:
        assert session.scalar(select(func.count()).select_from(FairplayGame)) == len(chosen)
        after = {
            (r.day, r.table_id, r.player): r.games
            for r in session.scalars(select(FairplayPlayerDay))
        }
        # The new days' games left the earlier days' rows as they were.
        assert {k: v for k, v in after.items() if k[0] <= "2025-03-05"} == before
        kept = projection.load_summary(session, "2025-03-01", "2025-03-31")
    direct = summarise(chosen)
    assert _same(kept, direct)
    from_rows = review(kept, "2025-03-01", "2025-03-31").to_dict()
    from_records = review(direct, "2025-03-01", "2025-03-31").to_dict()
    assert from_rows["flags"], "the month's cheats are flagged from the kept rows too"
    # Floats summed in another order: the same flags and evidence, p-values to 1e-9.
    for flag in from_rows["flags"] + from_records["flags"]:
        flag["p"], flag["q"] = round(math.log10(flag["p"] or 1e-300), 6), round(flag["q"], 9)
    assert from_rows == from_records


def _same(kept, direct) -> bool:
    assert kept.players.keys() == direct.players.keys()
    for key, row in direct.players.items():
        mine = kept.players[key]
        assert (mine.games, mine.choices, mine.faced, mine.useful, mine.exits) == (
            row.games,
            row.choices,
            row.faced,
            row.useful,
            row.exits,
        )
        assert (mine.discards, mine.agreed) == (row.discards, row.agreed), key
        assert mine.choice_sum == pytest.approx(row.choice_sum)
    assert dict(kept.pairs) == dict(direct.pairs)
    assert dict(kept.tables) == dict(direct.tables)
    return True


def test_period_sums_done_in_the_database_review_as_the_records_do(database_url):
    """``load_period`` adds the days up in SQL (what the page and the command review): the
    same period figures and the same review as adding the records' summary up in Python, for
    a month, a few days of it, and one table."""
    from sqlalchemy.orm import Session

    from replays.fairplay import projection
    from replays.simulation import store_games
    from replays.store.application import Ledger
    from replays.store.db import engine_for
    from replays.store.schema import migrate

    records = cheating_month()[2]
    chosen = [r for r in records if r["started_at"][:10] <= "2025-03-08"][:80]
    migrate(database_url)
    store_games(chosen, database_url)
    assert projection.catch_up(Ledger(database_url, env={"CREATE_TABLE": "no"}), database_url)
    direct = summarise(chosen)
    one_table = sorted({where for _, where in direct.tables})[0]
    periods = [
        ("2025-03-01", "2025-03-31", None),
        ("2025-03-03", "2025-03-06", None),
        ("2025-03-01", "2025-03-31", one_table),
    ]
    with Session(engine_for(database_url)) as session:
        for start, end, table in periods:
            mine = projection.load_period(session, start, end, table)
            theirs = direct.period(start, end, table)
            assert mine.players.keys() == theirs.players.keys() and mine.players
            for player, row in theirs.players.items():
                got = mine.players[player]
                assert (got.games, got.choices, got.faced, got.useful, got.exits) == (
                    row.games,
                    row.choices,
                    row.faced,
                    row.useful,
                    row.exits,
                )
                assert (got.discards, got.agreed) == (row.discards, row.agreed), player
                assert (got.choice_sum, got.choice_var) == pytest.approx(
                    (row.choice_sum, row.choice_var)
                )
                for kind, cell in row.timing.items():
                    assert got.timing[kind] == pytest.approx(cell), (player, kind)
                assert (got.partners, got.fed, got.given, got.strong, got.strong_drops) == (
                    row.partners,
                    row.fed,
                    row.given,
                    row.strong,
                    row.strong_drops,
                ), player
            # Only the pairs a review tests come back: of the month's noted pairs, those
            # that reach a floor, the same sums as every pair's added up in Python. The
            # games together of the others a flag shows are asked for by the review.
            assert all(mine.pairs[key] == theirs.pairs[key] for key in mine.pairs)
            tested = {key for key, row in theirs.pairs.items() if reaches_floor(row)}
            assert tested and mine.pairs.keys() == tested and mine.together_of is not None
            together = [k for k, row in theirs.pairs.items() if row.together and k not in tested]
            assert together, "pairs with games together that reach no floor are left out"
            assert dict(mine.picker_base) == pytest.approx(dict(theirs.picker_base))
            assert dict(mine.feeder_base) == pytest.approx(dict(theirs.feeder_base))
            assert {p: dict(t) for p, t in mine.at_tables.items()} == {
                p: dict(t) for p, t in theirs.at_tables.items()
            }
            assert dict(mine.table_games) == dict(theirs.table_games)
            assert dict(mine.table_pairs) == dict(theirs.table_pairs)
            assert mine.feed_base.keys() == {k for k, v in mine.pairs.items() if v.faced}
            assert mine.feed_base == pytest.approx({k: theirs.feed_base[k] for k in mine.feed_base})
            from_sql = review(mine, start, end, table=table)
            projection.fill_evidence(session, from_sql, table)
            from_records = review(theirs, start, end, table=table)
            if table is None and end == "2025-03-31":
                assert from_sql.flags, "the month's cheats are flagged from the sums too"
            rows, direct_rows = from_sql.to_dict(), from_records.to_dict()
            for flag in rows["flags"] + direct_rows["flags"]:
                flag["p"] = round(math.log10(flag["p"] or 1e-300), 6)
                flag["q"] = round(flag["q"], 9)
            assert rows == direct_rows


def test_simulate_writes_the_truth_apart_from_the_records(tmp_path):
    out, truth = tmp_path / "games.jsonl", tmp_path / "truth.json"
    args = ["simulate", "-n", "8", "--player-pool", "20", "--out", str(out)]
    run = CliRunner().invoke(
        main,
        [*args, "--cheaters", "bot:0.1,pair:0.1", "--cheat-strength", "0.8", "--truth", str(truth)],
    )
    assert run.exit_code == 0, run.output
    facts = json.loads(truth.read_text())
    assert facts["strength"] == 0.8 and {c["kind"] for c in facts["cheaters"]} == {"bot", "pair"}
    assert "cheat" not in out.read_text()
    bad = CliRunner().invoke(main, [*args, "--cheaters", "collude:0.1"])
    assert bad.exit_code == 2 and "unknown kind of cheat 'collude'" in bad.output
    assert "Traceback" not in bad.output
