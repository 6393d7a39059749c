"""A game type defined here, in the test, plugs in through the registry alone (issue 14).

"Toy" deals each player three cards; the one move is ``play`` (each player, in seat order,
plays one card of their hand); when every card is played, the highest total of pips wins.
It has its own aggregate with explicit topics and its own record format, ``test/toy@1``.
Registered at the start and unregistered at the end, it is imported, settled, exported,
projected into the read models and replayed on the web page, and nothing outside this
file knows it exists.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from uuid import UUID

import pytest
import sqlalchemy as sa
from auth_support import signed_in
from eventsourcing.domain import Aggregate, event

from domain import variants
from domain.cards import Card, CardError
from domain.errors import BadMove, NotYourTurn
from domain.records import RecordError
from domain.rummy13.game import Game
from domain.variants import RECORDED, Discrepancy, GameRows, Variant
from replays.readmodels.models import GameRow, MoveRow, PlayerResultRow
from replays.readmodels.projections import catch_up
from replays.records.exporter import export_lines
from replays.records.importer import import_lines
from replays.records.settle import settle_lines
from replays.store.application import Ledger
from replays.store.schema import migrate
from web import create_app

FORMAT = "test/toy@1"
ZERO = Decimal("0")


class ToyMatch(Aggregate):
    """Three cards each; play them in turn; the highest total of pips wins."""

    TOPIC = "rummy_ledger.toy:ToyMatch"

    class Event(Aggregate.Event):
        TOPIC = "rummy_ledger.toy:ToyMatch.Event"

    class Created(Event, Aggregate.Created):
        TOPIC = "rummy_ledger.toy:ToyMatch.Created"

    @staticmethod
    def create_id(game_id: str) -> UUID:
        return Game.create_id(game_id)  # one game id names one game across the ledger

    @classmethod
    def start(cls, config: dict) -> ToyMatch:
        return cls._create(cls.Started, id=cls.create_id(config["game_id"]), config=config)

    @event("Started", topic="rummy_ledger.toy:ToyMatch.Started")
    def __init__(self, config: dict) -> None:
        self.config = config
        self.game_id = config["game_id"]
        self.hands = {p: list(cards) for p, cards in config["hands"].items()}
        self.played: dict[str, list[str]] = {p: [] for p in config["players"]}
        self.steps: list[dict] = []
        self.step_versions: list[int] = []

    @property
    def players(self) -> list[str]:
        return self.config["players"]

    @property
    def current_player(self) -> str | None:
        if self.over:
            return None
        return self.players[len(self.steps) % len(self.players)]

    @property
    def over(self) -> bool:
        return len(self.steps) == 3 * len(self.players)

    def play(self, player: str, card: str) -> None:
        if player != self.current_player:
            raise NotYourTurn(f"it is {self.current_player}'s turn", player=player)
        if card not in self.hands[player]:
            raise BadMove(f"{card} is not in {player}'s hand", player=player, move_type="play")
        self._played(player, card)

    @event("Played", topic="rummy_ledger.toy:ToyMatch.Played")
    def _played(self, player: str, card: str) -> None:
        self.hands[player].remove(card)
        self.played[player].append(card)
        self.steps.append({"player": player, "type": "play", "card": card})
        self.step_versions.append(self.version + 1)

    def totals(self) -> dict[str, int]:
        return {p: sum(Card.parse(c).rank for c in cards) for p, cards in self.played.items()}

    def table_state(self) -> dict:
        return {"hands": self.hands, "played": self.played, "to_play": self.current_player}


@dataclass(frozen=True)
class ToyRecord:
    config: dict
    moves: tuple[dict, ...]
    variant = "toy"

    @property
    def game_id(self) -> str:
        return self.config["game_id"]

    def to_dict(self) -> dict:
        return {"format": FORMAT, **self.config, "moves": [dict(m) for m in self.moves]}

    def canonical(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def build(self) -> ToyMatch:
        match = ToyMatch.start(self.config)
        for index, move in enumerate(self.moves):
            try:
                match.play(move["player"], move["card"])
            except Exception as error:
                error.at_move(index, dict(move))
                raise
        return match


@dataclass(frozen=True)
class ToyAudit:
    game_id: str
    totals: dict
    discrepancies: tuple[Discrepancy, ...]

    def to_dict(self) -> dict:
        return {"game_id": self.game_id, "totals": self.totals, "discrepancies": []}

    def for_people(self) -> str:
        return f"Audit of toy game {self.game_id}: totals {self.totals}"


def _card(value: Any, field: str) -> str:
    try:
        return str(Card.parse(value))
    except CardError as error:
        raise RecordError(str(error), field=field) from None


class Toy(Variant):
    name = "toy"
    record_format = FORMAT
    aggregate = ToyMatch
    snapshot_interval = None
    has_money = False

    def parse_record(self, obj: Mapping) -> ToyRecord:
        players = obj.get("players")
        if not isinstance(players, list) or len(players) < 2:
            raise RecordError("needs two players or more", field="players")
        hands = {
            p: [_card(c, f"hands.{p}[{i}]") for i, c in enumerate(obj["hands"][p])] for p in players
        }
        moves = tuple(
            {"player": m["player"], "type": "play", "card": _card(m["card"], f"moves[{i}].card")}
            for i, m in enumerate(obj.get("moves", []))
        )
        config = {"game_id": obj["game_id"], "players": players, "hands": hands}
        return ToyRecord(config, moves)

    def record_of(self, game: ToyMatch) -> ToyRecord:
        return ToyRecord(game.config, tuple(game.steps))

    def settle(self, record: ToyRecord) -> dict:
        match = self.build(record)
        totals = match.totals()
        return {
            "game_id": match.game_id,
            "variant": "toy",
            "totals": totals,
            "winner": max(totals, key=totals.get) if match.over else None,
        }

    def audit(self, game: ToyMatch, events) -> ToyAudit:
        recomputed = ToyMatch.start(game.config)
        for domain_event in list(events)[1:]:
            recomputed = domain_event.mutate(recomputed)
        found = tuple(
            Discrepancy(f"totals.{p}", game.totals()[p], t, RECORDED)
            for p, t in recomputed.totals().items()
            if t != game.totals()[p]
        )
        return ToyAudit(game.game_id, recomputed.totals(), found)

    def started_row(self, game: ToyMatch) -> dict:
        return {
            "game_id": game.game_id, "originator_id": str(game.id), "variant": "toy",
            "rules": "toy", "table_id": None, "currency": "", "players": game.players,
            "player_count": len(game.players), "dealer": None, "started_at": game.created_on,
            "ended_at": None, "ended_on": None, "point_value": ZERO, "fee_percent": ZERO,
            "gross": None, "fee": None, "net_to_winner": None, "settlement_hash": None,
            "recomputed_hash": None, "discrepancy": False, "discrepancy_note": None,
        }  # fmt: skip

    def progress_row(self, game: ToyMatch) -> dict:
        totals = game.totals()
        return {
            "status": "finished" if game.over else "playing",
            "round": 1,
            "moves_count": len(game.steps),
            "version": game.version,
            "winner": max(totals, key=totals.get) if game.over else None,
            "final_point_value": ZERO,
        }

    def move_row(self, before, domain_event) -> dict | None:
        if before is None:
            return None
        return {
            "game_id": before.game_id, "move_index": len(before.steps),
            "version": domain_event.originator_version, "player": domain_event.player,
            "move_type": "play", "card": domain_event.card, "source": None, "groups": None,
            "round": 1, "point_value": ZERO, "at": None,
        }  # fmt: skip

    def closing_rows(self, game: ToyMatch, domain_event) -> GameRows | None:
        if not game.over:
            return None
        ended = game.modified_on
        results = [
            {"game_id": game.game_id, "player": p, "seat": i + 1,
             "result": "won" if p == self.progress_row(game)["winner"] else "lost",
             "points": t, "point_value": ZERO, "amount": ZERO, "hand_score": None,
             "min_score": None, "scoring_case": None, "ended_at_round": 1}
            for i, (p, t) in enumerate(game.totals().items())
        ]  # fmt: skip
        return GameRows(game={"ended_at": ended, "ended_on": ended.date()}, results=results)


TOY = Toy()
RECORD = {
    "format": FORMAT,
    "game_id": "TOY-1",
    "players": ["p1", "p2"],
    "hands": {"p1": ["9C", "2D", "KS"], "p2": ["TH", "3C", "4S"]},
    "moves": [
        {"player": "p1", "type": "play", "card": "9C"},
        {"player": "p2", "type": "play", "card": "TH"},
        {"player": "p1", "type": "play", "card": "2D"},
        {"player": "p2", "type": "play", "card": "3C"},
        {"player": "p1", "type": "play", "card": "KS"},
        {"player": "p2", "type": "play", "card": "4S"},
    ],
}


@pytest.fixture
def toy():
    variants.register(TOY)
    try:
        yield TOY
    finally:
        variants.unregister(TOY.name)


def test_the_toy_is_a_variant_only_while_registered(toy):
    assert variants.get("toy") is toy and variants.for_record(RECORD) is toy
    variants.unregister("toy")
    with pytest.raises(variants.UnknownVariant, match="known: points, raise, red3"):
        variants.get("toy")
    variants.register(toy)


def test_a_toy_game_imports_settles_exports_projects_and_replays(toy, database_url):
    migrate(database_url)
    ledger = Ledger(database_url, env={"CREATE_TABLE": "no"})
    line = json.dumps(RECORD)

    # settle, in memory
    (outcome,) = settle_lines([line])
    assert outcome["winner"] == "p1" and outcome["totals"]["p1"] > outcome["totals"]["p2"]

    # import (a second import is recognised), and a bad card named by its field
    summary = import_lines(ledger, [line], follow=False)
    assert summary.line() == "1 imported, 0 already recorded, 0 rejected"
    assert import_lines(ledger, [line], follow=False).already == 1
    bad = json.dumps({**RECORD, "game_id": "TOY-2", "moves": [{"player": "p1", "card": "ZZ"}]})
    rejected = import_lines(ledger, [bad], follow=False)
    assert rejected.rejected == 1 and "moves[0].card" in rejected.failures[0].message
    out_of_turn = {**RECORD, "game_id": "TOY-3", "moves": [RECORD["moves"][1]]}
    rejected = import_lines(ledger, [json.dumps(out_of_turn)], follow=False)
    assert rejected.rejected == 1 and "p1's turn" in rejected.failures[0].message

    # export: the stored game's record, the same line importing it again recognises
    (exported,) = list(export_lines(ledger))
    assert json.loads(exported) == json.loads(line)

    # projection: its rows beside every other game's
    catch_up(database_url, ledger=ledger)
    engine = sa.create_engine(database_url)
    with engine.connect() as connection:
        game = connection.execute(sa.select(GameRow).where(GameRow.game_id == "TOY-1")).one()
        assert (game.variant, game.status, game.winner, game.moves_count) == (
            "toy",
            "finished",
            "p1",
            6,
        )
        moves = connection.execute(sa.select(MoveRow.card).order_by(MoveRow.move_index)).all()
        assert [m.card for m in moves] == [m["card"] for m in RECORD["moves"]]
        results = connection.execute(sa.select(PlayerResultRow.player, PlayerResultRow.result))
        assert dict(results.all()) == {"p1": "won", "p2": "lost"}
    engine.dispose()

    # the replay page and its table, from the generic pages
    client = signed_in(create_app({"DATABASE_URL": database_url, "TESTING": True}))
    page = client.get("/games/TOY-1/replay?move=2")
    assert page.status_code == 200, page.get_data(as_text=True)[:500]
    html = page.get_data(as_text=True)
    assert "p2 play TH" in html and "<svg" in html
    image = client.get("/games/TOY-1/replay/table.svg?move=6")
    assert image.status_code == 200 and image.mimetype == "image/svg+xml"
    assert "KS" in image.get_data(as_text=True)
    audit = client.get("/games/TOY-1/audit")
    assert audit.status_code == 200 and "No discrepancies" in audit.get_data(as_text=True)
    assert client.get("/games/TOY-1").status_code == 302  # the summary is its last step

    # a dispute case on it: the generic pages list the moves around the contested one
    from replays.access.accounts import add_user
    from replays.disputes.cases import Disputes

    officer = add_user("toy-officer", "dispute_officer", "password-123", url=database_url)
    case = Disputes(ledger).open_case(officer, "TOY-1", 3, "was p1's card right?")
    case_page = client.get(f"/disputes/{case.case_id}").get_data(as_text=True)
    assert "Moves around it" in case_page and "p2 play TH" in case_page
    assert 'value="3" class="contested"' in case_page
