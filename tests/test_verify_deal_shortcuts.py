"""The deal check's two shortcuts (``verify``), each held to the full reading it spares:

- a closed pick read off its decoded state (``DealChecker._pick_state``) instead of the
  domain event built around it: the same findings, with the same messages, for every
  forged or corrupt ``Picked`` state a store could hold under a genuine seal;
- a stored deal settled by comparing card texts (``domain.shuffle._same_texts``) before
  the card by card reading: the same answer for every deal it settles.
"""

from __future__ import annotations

import orjson
import pytest
from test_integrity import PLAYERS, record, seeds_for

from domain import shuffle
from domain.cards import card_indices
from domain.rummy13.table import TableConfig
from domain.shuffle import ShuffleError, ShuffleSeeds, deal_from_seeds, deal_mismatch, derive_deal
from replays.integrity.deal_checks import PICKED, DealChecker
from replays.integrity.report import Report
from replays.integrity.store import StoredRow, event_rows
from replays.store.application import Ledger
from replays.store.db import engine_for


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """One seeded game's stored rows and its derived deal."""
    url = f"sqlite:///{tmp_path_factory.mktemp('deals') / 'ledger.db'}"
    record(Ledger(url), "D1")
    dealt = deal_from_seeds(*seeds_for("D1"), list(PLAYERS), "p3")
    with engine_for(url).connect() as connection:
        rows = list(event_rows(connection))
    assert sum(row.topic == PICKED for row in rows) == 6
    return rows, dealt


def _check(rows, light: bool) -> tuple[list, list]:
    report = Report()
    checker = DealChecker(report)
    checker.light_picks = light
    for row in rows:
        checker.feed(row, "D1")
    checker.finish()
    return [(p.kind, p.message, p.game_id, p.event) for p in report.problems], report.notes


def _with_state(rows, index: int, state: bytes) -> list[StoredRow]:
    row = rows[index]
    forged = StoredRow(row.notification_id, row.originator, row.version, row.topic, state)
    return [*rows[:index], forged, *rows[index + 1 :]]


def _picks(rows) -> list[int]:
    return [i for i, row in enumerate(rows) if row.topic == PICKED]


def _forged_states(state: bytes) -> list[bytes]:
    """A genuine closed pick's state, altered every way a forger or a fault could."""
    value = orjson.loads(state)
    changed = []

    def variant(**changes):
        forged = dict(value, **changes)
        for key, item in changes.items():
            if item is _DROP:
                del forged[key]
        changed.append(orjson.dumps(forged))

    for card in ("JK", "AS", "th", " TH", "10H", "10h", "XX", "", None, 7, ["AS"], {"a": 1}):
        variant(card=card)
    variant(card={"_type_": "card", "_data_": value["card"]})  # a Card in its envelope
    variant(card={"_type_": "card", "_data_": "QD"})
    variant(card={"_type_": "no-such-type", "_data_": "QD"})
    for source in ("open", "Closed", None, 1):
        variant(source=source)
    for key in ("card", "source", "player", "timestamp"):
        variant(**{key: _DROP})
    variant(source="open", card=_DROP)
    variant(card="QD", player=_DROP)
    variant(card="QD", player=None)
    variant(card="QD", player={"_type_": "decimal_str", "_data_": "1.5"})
    for class_version in (0, 1, 2, "1"):
        variant(class_version=class_version)
    variant(timestamp={"_type_": "datetime_iso", "_data_": "not a time"})
    variant(timestamp={"_type_": "no-such-type", "_data_": "x"})
    variant(originator_id="x", originator_version="y")
    changed += [b"", b"{", b"[]", b"null", b'"closed"', b"\xff", state + b" ", state[:-1]]
    return changed


_DROP = object()


@pytest.mark.parametrize("pick", [0, 2, 5])
def test_a_forged_pick_is_found_as_the_full_reading_finds_it(stored, pick):
    rows, _ = stored
    index = _picks(rows)[pick]
    assert DealChecker(Report()).light_picks  # the shortcut applies to Game.Picked
    assert (
        _check(rows, light=True)
        == _check(rows, light=False)
        == (
            [],
            ["1 deal(s) checked against their shuffle seeds"],
        )
    )
    found_some = 0
    for state in _forged_states(rows[index].state):
        forged = _with_state(rows, index, state)
        found = _check(forged, light=True)
        assert found == _check(forged, light=False), state
        found_some += bool(found[0])
    assert found_some > 20


def test_a_pick_that_cannot_be_decoded_says_so(stored):
    rows, _ = stored
    index = _picks(rows)[1]
    problems, _ = _check(_with_state(rows, index, b"{not json"), light=True)
    [(kind, message, game_id, event)] = problems
    assert (kind, game_id, event) == ("deal", "D1", rows[index].version)
    assert message.startswith(
        "the deal does not come from its committed shuffle: "
        "the event cannot be read to check the deal (Failed to deserialise state"
    )


def test_a_pick_off_the_stock_names_player_card_and_position(stored):
    rows, dealt = stored
    index = _picks(rows)[1]
    state = orjson.loads(rows[index].state)
    wrong = next(str(c) for c in dealt.stock[5:] if c != dealt.stock[1])
    forged = _with_state(rows, index, orjson.dumps(dict(state, card=wrong)))
    problems, _ = _check(forged, light=True)
    assert problems == [
        (
            "deal",
            "the deal does not come from its committed shuffle: "
            f"{state['player']} picked {wrong} from the stock, but the shuffled stock has "
            f"{dealt.stock[1]} on top (deck position {dealt.stock_start + 1})",
            "D1",
            rows[index].version,
        )
    ]


# -- the stored deal settled by its texts --------------------------------------------------------
def _deals(deal: dict) -> list[dict]:
    hands = deal["hands"]
    first = next(iter(hands))
    other = next(p for p in hands if p != first)
    out = [deal]

    def variant(**changes):
        out.append({**deal, **changes})

    variant(hands={**hands, first: sorted(hands[first])})  # the same hand, sorted
    variant(hands={**hands, first: list(reversed(hands[first]))})
    variant(hands={**hands, first: [c.lower() for c in hands[first]]})
    variant(hands={**hands, first: [*hands[first][:-1], hands[other][0]]})
    variant(hands={**hands, first: hands[first][:-1]})
    variant(hands={**hands, first: [*hands[first], hands[first][0]]})
    variant(hands={**hands, first: tuple(hands[first])})
    variant(hands={**hands, first: [*hands[first][:-1], None]})
    variant(hands={**hands, first: [*hands[first][:-1], 7]})
    variant(hands={**hands, first: [*hands[first][:-1], ["AS"]]})
    variant(hands={p: c for p, c in hands.items() if p != first})
    variant(hands={**hands, "p9": hands[first]})
    variant(hands=list(hands.values()))
    swapped = {**hands, first: [hands[other][0], *hands[first][1:]]}
    swapped[other] = [hands[first][0], *hands[other][1:]]
    variant(hands=swapped)  # the same cards dealt to the wrong seats
    variant(wild=deal["open"], open=deal["wild"])
    variant(wild=deal["wild"].lower())
    variant(wild=None)
    variant(open="10" + deal["open"][1:] if deal["open"][0] == "T" else "XX")
    variant(stock=None)
    variant(stock=deal["stock"][:-1])
    variant(stock=[*deal["stock"], "AS"])
    variant(stock=list(reversed(deal["stock"])))
    variant(stock=tuple(deal["stock"]))
    variant(stock=[c.lower() for c in deal["stock"]])
    variant(stock=[*deal["stock"][:-1], None])
    variant(stock=[])
    return out


def _verdict(deal, derived):
    try:
        return repr(deal_mismatch(deal, derived))
    except Exception as error:  # the reading's own errors must be the same too
        return f"{type(error).__name__}: {error}"


def test_a_deal_settled_by_its_texts_is_one_the_card_reading_settles_the_same(stored, monkeypatch):
    rows, dealt = stored
    seeds = ShuffleSeeds.from_dict(TableConfig.from_dict(_state(rows[0])["config"]).shuffle)
    derived = derive_deal(seeds, list(PLAYERS), dealer="p3")
    settled = 0
    for deal in _deals(dealt.to_dict()):
        fast = _verdict(deal, derived)
        settled += shuffle._same_texts(deal, shuffle.DealTexts.of(derived))
        with monkeypatch.context() as patch:
            patch.setattr(shuffle, "_same_texts", lambda *args: False)
            assert fast == _verdict(deal, derived), deal
    assert settled == 4  # as dealt, one hand sorted, one reversed, no stock recorded


def _state(row: StoredRow) -> dict:
    return orjson.loads(row.state)


def test_the_stored_deal_event_is_settled_by_its_texts(stored):
    rows, _ = stored
    report = Report()
    checker = DealChecker(report)
    started, dealt_row = rows[0], rows[1]
    checker.feed(started, "D1")
    game = checker.games[started.originator]
    derived = derive_deal(game.seeds, list(game.config.players), dealer=game.config.dealer_player)
    assert shuffle._same_texts(checker._decode(dealt_row), shuffle.DealTexts.of(derived))


def test_the_deal_settled_without_its_cards_is_the_one_derived_and_read(stored):
    """``shuffle.dealt_stock`` (the deck shuffled as indices, read as texts) settles a
    stored deal only where deriving its cards and reading them finds no mismatch, with the
    same stock; it raises what deriving raises."""
    rows, dealt = stored
    seeds = ShuffleSeeds.from_dict(TableConfig.from_dict(_state(rows[0])["config"]).shuffle)
    players = list(PLAYERS)
    derived = derive_deal(seeds, players, dealer="p3")
    settled = 0
    for deal in _deals(dealt.to_dict()):
        found = shuffle.dealt_stock(deal, seeds, players, dealer="p3")
        if found is not None:
            settled += 1
            assert _verdict(deal, derived) == "None", deal
            assert found == (card_indices(derived.stock), derived.stock_start)
    assert settled == 4
    unseeded = ShuffleSeeds(seeds.commitment, seeds.server_seed)  # no client seeds
    for decks, jokers, seated in ((1, 0, players[:2]), (3, 2, players), (2, 1, players[::-1])):
        other = derive_deal(unseeded, seated, dealer=None, decks=decks, jokers_per_deck=jokers)
        assert shuffle.dealt_stock(
            other.to_dict(), unseeded, seated, dealer=None, decks=decks, jokers_per_deck=jokers
        ) == (card_indices(other.stock), other.stock_start)
    broken = ShuffleSeeds(seeds.commitment, seeds.server_seed + b"x", seeds.client_seeds)
    assert derive_deal(broken, players, dealer="p3") is None
    assert shuffle.dealt_stock(dealt.to_dict(), broken, players, dealer="p3") is None
    for wrong in ({"dealer": "p9"}, {"dealer": None, "decks": 1, "jokers_per_deck": 0}):
        seated = players * 2 if "decks" in wrong else players
        with pytest.raises(ShuffleError) as derived_error:
            derive_deal(seeds, seated, **wrong)
        with pytest.raises(ShuffleError) as settled_error:
            shuffle.dealt_stock(dealt.to_dict(), seeds, seated, **wrong)
        assert str(settled_error.value) == str(derived_error.value)
