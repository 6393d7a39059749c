"""``verify`` checks a stored Red 3 match's deals against its revealed shuffle seed (both
databases): every round's deal re-derived, the first that differs named with its round,
player and card."""

from __future__ import annotations

from test_red3_deal_wiring import simulated

from domain.red3.records import parse_red3_record
from domain.red3.shuffle import commitment
from replays.integrity.evidence import create_tables, make_checkpoint, verify_store
from replays.store.application import Ledger
from replays.store.timeline import store_record


def _keys(tmp_path, monkeypatch) -> None:
    from replays.integrity.signing import init_keys

    init_keys(tmp_path / "keys")
    monkeypatch.setenv("RUMMY_LEDGER_KEY_DIR", str(tmp_path / "keys"))


def test_verify_checks_a_red3_match_against_its_seed(database_url, tmp_path, monkeypatch):
    _keys(tmp_path, monkeypatch)
    create_tables(database_url)
    ledger = Ledger(database_url)
    store_record(ledger, parse_red3_record(simulated(0, "R3-V0")))
    # A match whose seed did not deal its cards, stored past the importer (as a forger
    # writing to the database would): its own rules hold, its deals do not.
    forged = simulated(1, "R3-V1")
    forged["shuffle"] = dict(forged["shuffle"], seed=b"x".hex(), commitment=commitment(b"x"))
    store_record(ledger, parse_red3_record(forged))
    make_checkpoint(database_url)

    report = verify_store(database_url)
    deals = [p for p in report.problems if p.kind == "deal"]
    assert [p.game_id for p in deals] == ["R3-V1"], report.problems
    assert "round 1: " in deals[0].message and "but the shuffle deals" in deals[0].message
    assert "2 deal(s) checked against their shuffle seeds" in report.notes


def test_a_red3_commitment_without_its_seed_is_counted_not_checked(
    database_url, tmp_path, monkeypatch
):
    _keys(tmp_path, monkeypatch)
    create_tables(database_url)
    record = simulated(2, "R3-V2")
    record["shuffle"] = {"commitment": record["shuffle"]["commitment"]}
    store_record(Ledger(database_url), parse_red3_record(record))
    make_checkpoint(database_url)
    report = verify_store(database_url)
    assert report.ok, report.problems
    assert "1 game(s) commit to a shuffle whose seed is not revealed yet" in report.notes
