"""Pool and Deals matches are played once on import, and the projection's audit columns come
from what the write computed (the outcome hash ``Settled`` carries), not from a second play
of the match (issue 16, "work done once"); they still agree with the recomputation that
``audit`` and ``verify`` make."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa
from saved_rows import projected

from domain import variants
from domain.pooldeals import rows as match_rows
from domain.pooldeals.match import Match
from domain.pooldeals.outcome import match_outcome, outcome_hash
from domain.simulation.floor import Floor
from replays.readmodels import projections
from replays.readmodels.models import GameRow
from replays.records import importer
from replays.records.codec import parse_record
from replays.simulation import Simulation
from replays.store.application import Ledger
from replays.store.db import engine_for
from replays.store.schema import migrate


@pytest.fixture
def ledger(database_url):
    migrate(database_url)
    return Ledger(database_url, env={"CREATE_TABLE": "no"})


def _matches(count: int, *, seed: int = 7, discrepancy_rate: float = 0.3) -> list[dict]:
    floor = Floor(seed=seed, variants=("pool", "deals"), tables=4, players=30)
    return list(Simulation(floor, discrepancy_rate).games(count))


def _no_second_play(monkeypatch) -> list[str]:
    """Make any recomputation of a match's audit from here on fail the test loudly."""
    called: list[str] = []

    def refuse(match):
        called.append(match.game_id)
        raise AssertionError(f"match {match.game_id} played again for its audit")

    monkeypatch.setattr(match_rows, "audit_match", refuse)
    return called


def _rows(url: str) -> dict[str, tuple]:
    with engine_for(url).connect() as connection:
        found = connection.execute(
            sa.select(
                GameRow.game_id,
                GameRow.discrepancy,
                GameRow.discrepancy_note,
                GameRow.recomputed_hash,
                GameRow.settlement_hash,
            )
        ).all()
    return {row[0]: tuple(row[1:]) for row in found}


def test_the_settled_event_carries_the_hash_of_the_outcome_the_rules_computed(ledger):
    raw = _matches(1)[0]
    match = importer.build_game(parse_record(raw))
    assert match.computed_hash == outcome_hash(match_outcome(match))
    importer.import_lines(ledger, [json.dumps(raw)], follow=False)
    stored = ledger.get_game(raw["game_id"])
    assert isinstance(stored, Match)
    assert stored.computed_hash == match.computed_hash
    assert stored.settlement == match.settlement


def test_an_import_writes_the_audit_columns_without_playing_a_match_again(
    ledger, database_url, monkeypatch
):
    raws = _matches(12)
    called = _no_second_play(monkeypatch)
    lines = [json.dumps(raw) for raw in raws]
    summary = importer.import_lines(ledger, lines)
    assert summary.imported == len(raws)
    assert called == []
    monkeypatch.undo()
    rows = _rows(database_url)
    assert set(rows) == {raw["game_id"] for raw in raws}
    flagged = 0
    for raw in raws:
        match = ledger.get_game(raw["game_id"])
        recomputed = match_rows.audit_row(match)
        discrepancy, note, recomputed_hash, _ = rows[raw["game_id"]]
        assert (discrepancy, note, recomputed_hash) == (
            recomputed["discrepancy"],
            recomputed["discrepancy_note"],
            recomputed["recomputed_hash"],
        ), raw["game_id"]
        flagged += discrepancy
    assert 0 < flagged < len(raws)  # misreported matches are still found


def test_written_and_recomputed_audit_columns_agree_on_simulated_matches(ledger):
    raws = _matches(30, seed=11)
    importer.import_lines(ledger, [json.dumps(raw) for raw in raws], follow=False)
    for raw in raws:
        match = ledger.get_game(raw["game_id"])
        written = variants.for_game(match).written_audit_columns(match, ())
        assert written == match_rows.audit_row(match), raw["game_id"]


@pytest.mark.parametrize("change", ["no hash", "deal points"])
def test_without_a_matching_hash_the_projection_plays_the_match_again(ledger, database_url, change):
    """A Settled event stored before it carried the hash, or a match whose recorded figures
    no longer hash to it, is recomputed: the written figures cannot be taken as the
    computation."""
    raw = _matches(1, discrepancy_rate=0.0)[0]
    importer.import_lines(ledger, [json.dumps(raw)], follow=False)
    events = sa.table("ledger_events", sa.column("id"), sa.column("topic"), sa.column("state"))
    topic = (
        "rummy_ledger.pooldeals:Match.Settled"
        if change == "no hash"
        else "rummy_ledger.pooldeals:Match.DealScored"
    )
    with engine_for(database_url).begin() as connection:
        row = connection.execute(
            sa.select(events.c.id, events.c.state)
            .where(events.c.topic == topic)
            .order_by(events.c.id)
            .limit(1)
        ).one()
        state = json.loads(bytes(row.state))
        if change == "no hash":
            del state["computed_hash"]
        else:
            loser = next(p for p, points in state["points"].items() if points)
            state["points"][loser] += 1
        connection.execute(
            events.update().where(events.c.id == row.id).values(state=json.dumps(state).encode())
        )
    projections.catch_up(database_url, ledger=ledger)
    discrepancy, note, recomputed_hash, settlement_hash = _rows(database_url)[raw["game_id"]]
    if change == "no hash":
        assert discrepancy is False
        assert recomputed_hash == settlement_hash
    else:
        assert discrepancy is True
        assert "recorded deal 1 points" in note


def test_a_match_is_played_once_on_import_with_the_same_refusals(monkeypatch):
    raw = next(r for r in _matches(6) if (r.get("shuffle") or {}).get("seed"))
    plays = []
    start = Match.start.__func__

    def counted(cls, *args, **kwargs):
        plays.append(1)
        return start(cls, *args, **kwargs)

    monkeypatch.setattr(Match, "start", classmethod(counted))
    importer.build_game(parse_record(raw))
    assert len(plays) == 1
    # A deal that is not the seed's is refused as before: checked once the match is played.
    bad = json.loads(json.dumps(raw))
    stock = bad["deals"][0]["deal"]["stock"]
    last = next(i for i in range(len(stock) - 2, -1, -1) if stock[i] != stock[-1])
    stock[last], stock[-1] = stock[-1], stock[last]  # cards nobody drew: the moves still hold
    with pytest.raises(Exception) as refused:
        importer.build_game(parse_record(bad))
    assert "deal 1" in str(refused.value)
    assert "does not come from its shuffle seed" in str(refused.value)


def test_a_record_breaking_a_rule_and_its_seed_is_refused_as_check_deals_then_build_did():
    raw = next(r for r in _matches(6) if (r.get("shuffle") or {}).get("seed"))
    bad = json.loads(json.dumps(raw))
    hands = bad["deals"][0]["deal"]["hands"]
    first, second = list(hands)[:2]
    other = next(i for i, card in enumerate(hands[second]) if card != hands[first][0])
    hands[first][0], hands[second][other] = hands[second][other], hands[first][0]
    record = parse_record(bad)
    variant = variants.for_parsed(record)
    with pytest.raises(Exception) as before:
        variant.check_deals(record)
        variant.build(record)
    with pytest.raises(Exception) as now:
        importer.build_game(record)
    assert (type(now.value), str(now.value)) == (type(before.value), str(before.value))


def test_a_saved_matchs_rows_are_the_replays_without_playing_its_moves_again(ledger):
    """The rows of matches just saved whole come from the match as it ends, its moves
    counted (``Variant.saved_move_rows``): equal, row for row, to applying every event."""
    raws = _matches(24, seed=23)
    pairs = []
    for raw in raws:
        match = importer.build_game(parse_record(raw))
        pairs.append((match, list(match.pending_events)))
    counted = projections.GameProjection(ledger)
    replayed = projections.GameProjection(ledger, light=False)
    fast, slow = projected(counted, pairs), projected(replayed, pairs)
    assert len(fast["moves"]) == sum(len(m.moves) for m, _ in pairs) > 0
    assert fast["entries"] and fast["results"]
    assert fast == slow


def test_a_saved_match_is_not_played_again_for_its_rows(ledger, monkeypatch):
    raw = _matches(1)[0]
    match = importer.build_game(parse_record(raw))
    events = list(match.pending_events)
    applied: list[int] = []
    original = Match.Moved.apply

    def counted(self, aggregate):
        applied.append(1)
        return original(self, aggregate)

    monkeypatch.setattr(Match.Moved, "apply", counted)
    projections.GameProjection(ledger).rows_of_new_games([(match, events)])
    assert applied == []
    projections.GameProjection(ledger, light=False).rows_of_new_games([(match, events)])
    assert len(applied) == len(match.moves)


def test_verify_finds_a_stored_match_whose_seed_did_not_deal_its_cards(
    database_url, tmp_path, monkeypatch
):
    """End to end: a Pool or Deals match stored past the importer (as a forger writing to
    the database would), its own rules holding but its deals not its seed's, is named by
    ``verify``'s deal check; an honest match beside it is not."""
    from domain.shuffle import commitment
    from replays.integrity.evidence import create_tables, make_checkpoint, verify_store
    from replays.integrity.signing import init_keys
    from replays.store.timeline import store_record

    init_keys(tmp_path / "keys")
    monkeypatch.setenv("RUMMY_LEDGER_KEY_DIR", str(tmp_path / "keys"))
    create_tables(database_url)
    ledger = Ledger(database_url)
    honest, forged = _matches(2, seed=31, discrepancy_rate=0.0)
    store_record(ledger, parse_record(honest))
    forged["shuffle"] = dict(forged["shuffle"], seed=b"x".hex(), commitment=commitment(b"x"))
    store_record(ledger, parse_record(forged))
    make_checkpoint(database_url)

    report = verify_store(database_url)
    deals = [p for p in report.problems if p.kind == "deal"]
    assert [p.game_id for p in deals] == [forged["game_id"]], report.problems
    assert "deal 1: " in deals[0].message and "but the shuffle deals" in deals[0].message
    assert "2 deal(s) checked against their shuffle seeds" in report.notes
