"""The whole-store deal check done inside the read-model replay
(``replays.integrity.deal_checks.DeferredDeals``) finds what the store pass's own feed
finds, word for word, on SQLite and PostgreSQL: seeded games clean and forged, a forged
deal in a game whose later event was also changed (the feed stops there), and games
with events the projection has not reached (checked from their events read again), all
in the same order as the store pass's feed gives them."""

from __future__ import annotations

import pytest
from test_integrity import PLAYERS, flip_byte, record, seeds_for

from domain.shuffle import deal_from_seeds
from replays.integrity import deal_checks
from replays.integrity import verify as verifying
from replays.integrity.evidence import create_tables, verify_store
from replays.store.application import Ledger


@pytest.fixture
def store(database_url):
    from replays.readmodels.projections import catch_up
    from replays.store.schema import migrate

    migrate(database_url)
    create_tables(database_url)
    ledger = Ledger(database_url)
    server, clients = seeds_for("F1")
    swapped = deal_from_seeds(server, clients, list(PLAYERS), "p3").to_dict()
    hands = swapped["hands"]
    hands["p1"][3], hands["p2"][8] = hands["p2"][8], hands["p1"][3]
    record(ledger, "F1", deal=swapped)  # a deal that is not its seeds'
    stock = [str(c) for c in deal_from_seeds(*seeds_for("F2"), list(PLAYERS), "p3").stock]
    record(ledger, "F2", stock=False, picks=[stock[0], stock[2], stock[1]], turns=3)
    record(ledger, "C1")
    record(ledger, "C2")
    catch_up(database_url)
    return database_url, ledger


def _both(url, monkeypatch):
    """The report with the deals checked inside the replay, and the one with them fed by
    the store pass (as before: no read-model step to ride along), and how many games the
    replay checked the deal of."""
    riding = []
    settle = deal_checks.DeferredDeals.settle

    def counted(self, rows, watch, report):
        riding.append(watch is not None)
        return settle(self, rows, watch, report)

    with monkeypatch.context() as patch:
        patch.setattr(deal_checks.DeferredDeals, "settle", counted)
        inside = verify_store(url)
    with monkeypatch.context() as patch:
        patch.setattr(verifying, "_has_read_models", lambda connection: False)
        fed = verify_store(url)
    return inside, fed, riding


def _same(inside, fed) -> list:
    """The same findings and notes, in the same order."""
    problems = [(p.kind, p.message, p.game_id, p.event) for p in inside.problems]
    assert problems == [(p.kind, p.message, p.game_id, p.event) for p in fed.problems]
    assert inside.notes == fed.notes
    return problems


def test_deals_checked_in_the_replay_are_found_as_the_pass_finds_them(store, monkeypatch):
    url, _ = store
    inside, fed, riding = _both(url, monkeypatch)
    problems = _same(inside, fed)
    assert [(k, g, e) for k, _, g, e in sorted(problems)] == [("deal", "F1", 2), ("deal", "F2", 5)]
    assert riding == [True] * 4  # every game's deal was checked by its replay
    assert "4 deal(s) checked against their shuffle seeds" in inside.notes
    # As when the store pass found them: the two games' read rows are not checked.
    assert "2 game(s)' read rows checked against their events" in inside.notes


def test_a_forged_deal_is_still_found_when_a_later_event_was_changed(store, monkeypatch):
    url, _ = store
    flip_byte(url, "F1", 5)  # after the forged Dealt (event 2): the feed stops at event 5
    flip_byte(url, "C1", 4)
    inside, fed, riding = _both(url, monkeypatch)
    problems = _same(inside, fed)
    found = {(k, g, e) for k, _, g, e in problems}
    assert {("deal", "F1", 2), ("altered", "F1", 5), ("altered", "C1", 4)} <= found
    assert riding == [True, True]  # F2, C2; F1 and C1 fed from their events read again


def test_games_past_the_projection_are_checked_from_their_events(store, monkeypatch):
    url, ledger = store
    server, clients = seeds_for("F3")
    swapped = deal_from_seeds(server, clients, list(PLAYERS), "p3").to_dict()
    hands = swapped["hands"]
    hands["p1"][0], hands["p3"][5] = hands["p3"][5], hands["p1"][0]
    record(ledger, "F3", deal=swapped)  # not projected
    record(ledger, "C3")
    inside, fed, riding = _both(url, monkeypatch)
    problems = _same(inside, fed)
    assert ("deal", "F3", 2) in {(k, g, e) for k, _, g, e in problems}
    assert riding == [True] * 4
    assert "6 deal(s) checked against their shuffle seeds" in inside.notes


def test_a_forged_deal_in_a_game_partly_projected_leaves_its_rows_alone(store, monkeypatch):
    """A game the projection reached only part of is replayed for its read rows, but its
    deal is checked from all its events first: found wanting, its rows are not checked,
    as when the store pass found it."""
    from test_integrity import sql

    url, ledger = store
    last = sql(url, "SELECT max(id) FROM ledger_events").scalar_one()
    server, clients = seeds_for("F4")
    swapped = deal_from_seeds(server, clients, list(PLAYERS), "p3").to_dict()
    hands = swapped["hands"]
    hands["p2"][1], hands["p3"][2] = hands["p3"][2], hands["p2"][1]
    record(ledger, "F4", deal=swapped)
    # The projection as if it had stopped after the game's first three events.
    sql(url, "UPDATE projection_positions SET position = :p", p=last + 3)
    assert sql(url, "SELECT position FROM projection_positions").scalar_one() == last + 3
    apart = deal_checks.DeferredDeals.apart
    during = []

    def seen(self, connection, originator):
        found = apart(self, connection, originator)
        during.append(found)
        return found

    monkeypatch.setattr(deal_checks.DeferredDeals, "apart", seen)
    inside, fed, riding = _both(url, monkeypatch)
    problems = _same(inside, fed)
    assert ("deal", "F4", 2) in {(k, g, e) for k, _, g, e in problems}
    assert riding == [True] * 4  # F4 was checked apart, before its replay
    assert during[0] is True  # F4, met by the replay (the first call), found wanting
    assert "2 game(s)' read rows checked against their events" in inside.notes


@pytest.mark.parametrize("edit", ["none", "later_event_changed", "past_the_projection"])
def test_deals_checked_in_the_jobs_workers_are_found_as_the_pass_finds_them(
    store, monkeypatch, edit
):
    """``verify --jobs 2``: the workers check the deals as they replay, and the main
    process takes their verdicts (a game found wanting is fed again from its events in
    its own view): the same findings and notes, in the same order, as the store pass's
    own feed in one process."""
    url, ledger = store
    if edit == "later_event_changed":
        flip_byte(url, "F1", 5)
        flip_byte(url, "C1", 4)
    elif edit == "past_the_projection":
        server, clients = seeds_for("F3")
        swapped = deal_from_seeds(server, clients, list(PLAYERS), "p3").to_dict()
        hands = swapped["hands"]
        hands["p1"][0], hands["p3"][5] = hands["p3"][5], hands["p1"][0]
        record(ledger, "F3", deal=swapped)  # not projected
    take, taken = deal_checks.DeferredDeals.take, []

    def counted(self, connection, originator, count, clean, checked, unrevealed):
        found = take(self, connection, originator, count, clean, checked, unrevealed)
        taken.append((clean, found))
        return found

    monkeypatch.setattr(deal_checks.DeferredDeals, "take", counted)
    jobs = verify_store(url, jobs=2)
    fed = verify_store(url, check_read_models=False)
    one = verify_store(url)
    assert [(p.kind, p.message, p.game_id, p.event) for p in jobs.problems] == [
        (p.kind, p.message, p.game_id, p.event) for p in one.problems
    ]
    assert jobs.notes == one.notes
    # The deal findings and their note are the store pass's own feed's.
    deal = [(p.message, p.game_id, p.event) for p in fed.problems if p.kind == "deal"]
    assert [(p.message, p.game_id, p.event) for p in jobs.problems if p.kind == "deal"] == deal
    assert [n for n in jobs.notes if "deal(s)" in n] == [n for n in fed.notes if "deal(s)" in n]
    # Every replayed game's deal came from a worker: the forged ones (F1 and F2; F2 alone
    # where F1's event 5 fails its seal) found again here, in this process's view, the
    # clean ones (C1 and C2; C2 alone) taken as the workers found them. F3 is past the
    # projection: not replayed, fed from its events.
    forged = 1 if edit == "later_event_changed" else 2
    assert sorted(taken) == [(False, True)] * forged + [(True, False)] * forged
