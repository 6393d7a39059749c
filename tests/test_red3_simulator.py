"""Simulated Red 3 matches: deterministic, legal, settled, and showing what the rules allow."""

import json
from collections import Counter

from click.testing import CliRunner

from domain.red3.bot import reported_block
from domain.red3.records import parse_red3_record
from replays.simulation import Floor, Simulation
from web.cli import main

RUNS = 16


def simulated(seed=5, count=RUNS, rate=0.0):
    run = Simulation(Floor(seed=seed, variants=("red3",)), discrepancy_rate=rate)
    return list(run.games(count))


def test_the_same_seed_gives_the_same_matches():
    assert simulated(count=3) == simulated(count=3)
    assert simulated(seed=6, count=2) != simulated(count=2)


def test_every_simulated_match_is_legal_and_settles_as_reported():
    for record in simulated():
        parsed = parse_red3_record(record)
        assert parsed.to_dict() == {k: v for k, v in record.items()}
        settled = parsed.settle()
        assert settled["complete"]
        reported = record["reported"]
        assert reported["totals"] == settled["totals"]
        assert reported["winner"] == settled["winner"]


def test_the_bots_do_what_the_rules_allow():
    seen = Counter()
    for record in simulated():
        parsed = parse_red3_record(record)
        match = parsed.build()
        seen["players", len(match.players)] += 1
        for score in match.round_scores:
            seen["out by stock" if score.out is None else "went out"] += 1
            seen["red threes held"] += sum(s.red_threes for s in score.players)
        for played in record["rounds"]:
            moves = played["moves"]
            for move in moves:
                if move["type"] == "pick":
                    seen["pile taken" if move["from"] == "pile" else "stock pick"] += 1
                if move["type"] == "discard" and move["card"] in ("3H", "3D"):
                    seen["red three discarded"] += 1
                if move["type"] == "lay_down" and move.get("add"):
                    seen["added to a book"] += 1
            last = moves[-1]
            seen["out laying down" if last["type"] == "lay_down" else "last move a discard"] += 1
    for behaviour in (
        "went out",
        "pile taken",
        "stock pick",
        "red three discarded",
        "added to a book",
        "out laying down",
        "last move a discard",
        "red threes held",
    ):
        assert seen[behaviour] > 0, behaviour
    assert len({key for key in seen if isinstance(key, tuple)}) >= 3  # several table sizes


def test_a_misreporting_operator_gives_the_audit_something_to_find():
    import random

    record = simulated(count=1)[0]
    wrong = [reported_block(record, random.Random(i), 1.0) for i in range(12)]
    right = reported_block(record, random.Random(0), 0.0)
    assert all(w != right for w in wrong)


def test_simulate_out_writes_records_that_import_and_settle(tmp_path, sqlite_url):
    out = tmp_path / "red3.jsonl"
    runner = CliRunner()
    made = runner.invoke(
        main, ["simulate", "--games", "4", "--variant", "red3", "--seed", "2", "--out", str(out)]
    )
    assert made.exit_code == 0, made.output
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 4 and all(line["variant"] == "red3" for line in lines)
    imported = runner.invoke(main, ["import", str(out)])
    assert "4 imported, 0 already recorded, 0 rejected" in imported.stdout, imported.output
    settled = runner.invoke(main, ["settle", "--json", str(out)])
    assert settled.exit_code == 0
    for record, line in zip(lines, settled.stdout.splitlines(), strict=True):
        assert json.loads(line)["totals"] == record["reported"]["totals"]
    audit = runner.invoke(main, ["audit", lines[0]["game_id"]])
    assert audit.exit_code == 0, audit.output
