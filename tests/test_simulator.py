"""The simulator: deterministic, legal games that show every behaviour the ledger records.

Every game is checked the way an operator's record is: through the importer and the game
aggregate (on SQLite and PostgreSQL), and through the in-memory ``settle`` path.
"""

from __future__ import annotations

import json
from collections import Counter
from decimal import Decimal
from functools import cache

import pytest
from click.testing import CliRunner

from domain.cards import Card, parse_cards
from domain.rummy13.bot import Bot, Temper, links
from domain.rummy13.profiles import get_profile
from domain.rummy13.reported import MISTAKES, misreport, settle
from domain.shuffle import verify_deal
from replays.records.codec import parse_record
from replays.simulation import Floor, Simulation, Tally, store_games
from replays.store.application import Ledger
from web.cli import main

BATCH_SEED = 11
BATCH_SIZE = 240


@cache
def batch() -> tuple[dict, ...]:
    """One fixed batch, shared by the behaviour tests (simulated once per test process)."""
    return tuple(Simulation(Floor(seed=BATCH_SEED)).games(BATCH_SIZE))


@cache
def settlements() -> dict[str, dict]:
    return {record["game_id"]: settle(record) for record in batch()}


# -- determinism ---------------------------------------------------------------------------


def test_same_seed_same_games():
    first = list(Simulation(Floor(seed=3)).games(12))
    second = list(Simulation(Floor(seed=3)).games(12))
    assert first == second
    assert list(Simulation(Floor(seed=4)).games(12)) != first


def test_a_game_does_not_depend_on_its_batch_or_the_worker_count():
    run = Simulation(Floor(seed=3))
    whole = list(run.games(10))
    assert list(run.games(4, start=6)) == whole[6:]
    assert list(run.games(10, jobs=2)) == whole


def test_game_ids_are_unique_and_name_table_seed_and_index():
    ids = [record["game_id"] for record in batch()]
    assert len(set(ids)) == len(ids)
    assert ids[7].endswith(f"-{BATCH_SEED}-000007")


def test_runs_of_different_variants_with_one_seed_import_into_one_database(database_url):
    # Regression: both runs used to name game i of seed 7 alike, so the second import
    # reported every one of its games as a conflict.
    points = list(Simulation(Floor(seed=7, variants=("points",))).games(6))
    raises = list(Simulation(Floor(seed=7, variants=("raise",))).games(6))
    assert {r["variant"] for r in points} == {"points"}
    assert {r["variant"] for r in raises} == {"raise"}
    assert not {r["game_id"] for r in points} & {r["game_id"] for r in raises}
    first = store_games(points, database_url)
    second = store_games(raises, database_url)
    assert (first.stored, first.rejected) == (6, [])
    assert (second.stored, second.already, second.rejected) == (6, 0, [])
    assert len(Ledger(database_url).list_game_ids()) == 12


# -- every game legal ------------------------------------------------------------------------


def test_every_game_stores_through_the_importer_and_settles_as_reported(database_url):
    records = list(Simulation(Floor(seed=21)).games(30))
    summary = store_games(records, database_url)
    assert summary.rejected == []
    assert summary.stored == len(records)
    ledger = Ledger(database_url)
    for record in records:
        game = ledger.get_game(record["game_id"])
        assert game.phase == "settled", record["game_id"]
        settled = game.settlement.summary()
        reported = record["reported"]
        assert settled["winner"] == reported["winner"]
        assert {p: line["points"] for p, line in settled["players"].items()} == reported["points"]
        for field in ("gross", "fee", "net_to_winner"):
            assert settled[field] == reported[field]
        assert game.settlement.balanced
    # Storing the same run again records nothing new.
    again = store_games(records, database_url)
    assert (again.stored, again.already, again.rejected) == (0, len(records), [])


def test_every_deal_comes_from_its_committed_shuffle():
    for record in batch()[:60]:
        config = parse_record(record).config
        mismatch = verify_deal(
            record["deal"],
            record["shuffle"],
            config.players,
            dealer=config.dealer_player,
            decks=config.decks,
            jokers_per_deck=config.jokers_per_deck,
            moves=record["moves"],
        )
        assert mismatch is None, (record["game_id"], str(mismatch))


def test_times_run_through_the_month_in_move_order():
    starts = []
    for record in batch():
        assert record["started_at"].startswith("2025-03-")
        starts.append(record["started_at"][:10])
        times = [record["started_at"]] + [move["at"] for move in record["moves"]]
        assert times == sorted(times), record["game_id"]
    assert len(set(starts)) >= 20  # spread across the month, not bunched on one day


# -- the behaviours the ledger must record ---------------------------------------------------


def test_batch_shows_every_kind_of_exit():
    results = Counter(
        line["result"] for s in settlements().values() for line in s["players"].values()
    )
    for result in ("lost", "first_drop", "middle_drop", "auto_drop", "wrong_show"):
        assert results[result] > 0, results
    # Drops and wrong shows are habits of some players, not of every game.
    assert results["wrong_show"] < BATCH_SIZE * 0.1
    assert results["first_drop"] < results["lost"]


def test_misses_happen_alone_and_three_in_a_row():
    single = auto = 0
    for record in batch():
        streak: Counter = Counter()
        for move in record["moves"]:
            player = move.get("player")
            if move["type"] == "miss":
                streak[player] += 1
                auto += streak[player] == 3
            elif move["type"] == "pick":
                single += streak[player] == 1
                streak[player] = 0
    assert single > 0 and auto > 0


def test_long_two_player_games_run_through_the_stock_and_reshuffle():
    reshuffled = [
        record
        for record in batch()
        if len(record["players"]) == 2 and any(m["type"] == "reshuffle" for m in record["moves"])
    ]
    assert reshuffled
    longest = max(len(record["moves"]) for record in reshuffled)
    assert longest > len(reshuffled[0]["deal"]["stock"])


def test_valid_declarations_win_and_losers_show():
    declared = shows = 0
    for record in batch():
        winner = settlements()[record["game_id"]]["winner"]
        declares = [m for m in record["moves"] if m["type"] == "declare"]
        if declares and declares[-1]["player"] == winner:
            declared += 1
            shows += sum(m["type"] == "show" for m in record["moves"])
    assert declared > BATCH_SIZE / 2
    assert shows > declared


def test_tally_counts_what_the_settlements_say():
    tally = Tally()
    for record in batch():
        tally.add(record)
    results = Counter(
        line["result"] for s in settlements().values() for line in s["players"].values()
    )
    assert tally.games == BATCH_SIZE
    for name in ("first_drop", "middle_drop", "auto_drop", "wrong_show"):
        assert tally.counts[name] == results[name], name


# Moves per 13-card game that 95 % of simulated games stay within. A real table's game ends
# within about ten turns a seat (someone declares, the rest fold): six seats of ten turns,
# a pick and a discard each, are 120 moves; fewer seats play fewer. At most this share of
# games may run through the stock into a reshuffle: real tables rarely see one.
LONGEST_USUAL_GAME = 120
RESHUFFLED_SHARE = 0.05


def test_simulated_games_last_as_long_as_real_ones_and_rarely_reshuffle():
    tally = Tally()
    for record in Simulation(Floor(seed=29)).games(200):
        tally.add(record)
    assert len(tally.lengths) > 150  # most of the 200 are 13-card games
    assert tally.percentile(0.95) < LONGEST_USUAL_GAME, tally.distribution_lines()
    reshuffled = len(tally.lengths) - tally.reshuffles[0]
    assert reshuffled <= RESHUFFLED_SHARE * len(tally.lengths), tally.distribution_lines()
    # Rare is not never: long head-to-head games still run through the stock.
    assert reshuffled > 0
    lines = "\n".join(tally.lines())
    assert "moves per game: median" in lines and "reshuffles per game: none in" in lines


# -- the operator's reported block -------------------------------------------------------------


def test_discrepancy_rate_makes_some_reports_wrong():
    clean = list(Simulation(Floor(seed=5)).games(20))
    wrong = list(Simulation(Floor(seed=5), discrepancy_rate=1.0).games(20))
    for good, bad in zip(clean, wrong, strict=True):
        assert good["moves"] == bad["moves"]
        assert good["reported"] == _reported_from(settle(good))
        assert bad["reported"] != good["reported"]


@pytest.mark.parametrize("mistake", MISTAKES)
def test_each_mistake_changes_a_figure(mistake):
    record = batch()[0]
    honest = _reported_from(settle(record))
    reported = json.loads(json.dumps(honest))
    misreport(reported, mistake, record)
    assert reported != honest
    for field in ("gross", "fee", "net_to_winner"):
        assert Decimal(reported[field]) == Decimal(reported[field]).quantize(Decimal("0.01"))


def _reported_from(settlement: dict) -> dict:
    return {
        "winner": settlement["winner"],
        "points": {p: line["points"] for p, line in settlement["players"].items()},
        "gross": settlement["gross"],
        "fee": settlement["fee"],
        "net_to_winner": settlement["net_to_winner"],
    }


# -- the bots' judgement -------------------------------------------------------------------


def _bot(hand: str, wild: str = "2C", **temper) -> Bot:
    settings = dict(
        lookahead=3, careless=0.0, caution=0.0, miss_rate=0.0, away_rate=0.0, rashness=0.0
    )
    settings.update(temper)
    import random

    return Bot(
        "p1",
        parse_cards(hand),
        Card.parse(wild),
        get_profile(),
        Temper(**settings),
        random.Random(0),
    )


def test_links_count_set_and_sequence_partners_not_jokers_or_twins():
    wild = Card.parse("2C")
    assert links(Card.parse("QS"), parse_cards("KS AS JS QH 2D JK QS"), wild) == 4
    assert links(Card.parse("2H"), parse_cards("3H 4H"), wild) == 0  # a joker links to nothing


def test_bot_takes_the_open_card_that_completes_a_pure_sequence():
    bot = _bot("5H 6H 9S 9D 9C JC QC KD 3S 8D TD AS 4C")
    assert bot.picks_open(Card.parse("7H"), may_take=True)
    finish = bot.take(Card.parse("7H"), from_open=True)
    assert Card.parse("7H") in bot.hand
    assert finish.card in parse_cards("KD 3S 8D TD AS 4C")


def test_bot_leaves_an_open_card_that_links_to_nothing():
    bot = _bot("5H 6H 9S 9D 9C JC QC KD 3S 8D TD AS 4C")
    assert not bot.picks_open(Card.parse("7S"), may_take=False)
    assert not bot.picks_open(Card.parse("QH"), may_take=True)


def test_bot_keeps_melds_and_discards_a_high_loose_card():
    bot = _bot("5H 6H 7H 9S 9D 9C JC QC KC 3S 8D KD AS")
    finish = bot.take(Card.parse("4H"))
    assert finish.groups is None
    assert finish.card in parse_cards("KD AS 8D")
    assert all(card in bot.hand for card in parse_cards("5H 6H 7H 9S 9D 9C JC QC KC"))


def test_bot_never_discards_a_joker():
    bot = _bot("5H 6H 7H 9S 9D 9C JC QC KC 3S 8D KD AS")
    assert bot.take(Card.parse("JK")).card != Card.parse("JK")
    assert bot.take(Card.parse("2D")).card != Card.parse("2D")  # 2s are wild here


def test_bot_declares_a_finished_hand():
    bot = _bot("5H 6H 7H 9S 9D 9C JC QC KC 3S 4S 5S AS")
    finish = bot.take(Card.parse("JK"))
    assert finish.valid and finish.card == Card.parse("AS")
    assert sorted(str(c) for group in finish.groups for c in group) == sorted(map(str, bot.hand))


def test_rash_bot_declares_a_nearly_finished_hand_as_a_wrong_show():
    bot = _bot("5H 6H 7H 9S 9D 9C JC QC KC 3S 4S 8D AS", rashness=1.0)
    finish = bot.take(Card.parse("5S"))  # 8D stays loose: 8 points from finished
    assert bot.score == 8
    assert finish.groups is not None and not finish.valid
    assert Counter(c for group in finish.groups for c in group) == Counter(bot.hand)


def test_cautious_bot_drops_a_weak_first_hand_but_keeps_a_good_one():
    weak = _bot("2S 5H 9C QD KS 8H 3C JC 8S 4D TH 6S AD", wild="7C", caution=1.0)
    assert any(weak.drops(0) for _ in range(10))
    good = _bot("5H 6H 7H 9S 9D 9C JC QC KC 3S 4S 8D AS", caution=1.0)
    assert not any(good.drops(0) for _ in range(10))


# -- the command line ------------------------------------------------------------------------


def test_simulate_out_writes_records_that_import_and_settle_identically(tmp_path, sqlite_url):
    out = tmp_path / "games.jsonl"
    runner = CliRunner()
    result = runner.invoke(main, ["simulate", "--games", "12", "--seed", "8", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "wrote 12 records" in result.output
    lines = out.read_text().splitlines()
    assert [json.loads(line) for line in lines] == list(Simulation(Floor(seed=8)).games(12))

    settled = runner.invoke(main, ["settle", str(out), "--json"])
    assert settled.exit_code == 0, settled.output
    by_settle = {s["game_id"]: s for s in map(json.loads, settled.stdout.splitlines())}

    from replays.store.schema import migrate

    migrate(sqlite_url)
    imported = runner.invoke(main, ["import", str(out)])
    assert imported.exit_code == 0, imported.output
    ledger = Ledger(sqlite_url)
    for line in lines:
        record = json.loads(line)
        stored = ledger.get_game(record["game_id"]).settlement.summary()
        assert stored == by_settle[record["game_id"]]
        assert _reported_from(stored) == record["reported"]


def test_simulate_stores_games_and_says_what_happened(sqlite_url):
    from replays.store.schema import migrate

    migrate(sqlite_url)
    result = CliRunner().invoke(
        main, ["simulate", "-n", "6", "--seed", "2", "--players", "2", "--variant", "raise"]
    )
    assert result.exit_code == 0, result.output
    assert "stored 6 games (0 already recorded)" in result.output
    assert "6 games (raise 6)" in result.output
    ledger = Ledger(sqlite_url)
    ids = ledger.list_game_ids()
    assert len(ids) == 6
    assert {len(ledger.get_game(g).config.players) for g in ids} == {2}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--players", "7"], "seats 2 to 6 players"),
        (["--players", "two"], "give a count (4) or a range (2-6)"),
        (["--month", "March"], "month must look like 2025-03"),
    ],
)
def test_simulate_bad_options_say_what_is_wrong(args, message, tmp_path):
    result = CliRunner().invoke(main, ["simulate", "--out", str(tmp_path / "x.jsonl"), *args])
    assert result.exit_code != 0
    assert message in result.output
    assert "Traceback" not in result.output


def test_same_games_in_fresh_processes_whatever_the_hash_seed(tmp_path):
    """Nothing may hang on set or dict order of str-keyed values (Python salts str hashes)."""
    import os
    import subprocess
    import sys

    outputs = []
    for hash_seed in ("1", "2"):
        out = tmp_path / f"games-{hash_seed}.jsonl"
        subprocess.run(
            [
                sys.executable,
                "-c",
                "from web.cli import main; main()",
                "simulate",
                "-n",
                "8",
                "--seed",
                "5",
                "--out",
                str(out),
            ],
            check=True,
            capture_output=True,
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
        )
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]


def test_simulate_refuses_a_database_that_is_not_migrated(sqlite_url):
    result = CliRunner().invoke(main, ["simulate", "-n", "2"])
    assert result.exit_code == 1
    assert "run `rummy-ledger db upgrade` first" in result.output
    assert "Traceback" not in result.output
