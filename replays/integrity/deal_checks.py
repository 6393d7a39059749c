"""Checking stored deals against their verifiable-shuffle seeds, inside `verify`'s pass.

A game whose record carried a ``shuffle`` block with a revealed seed (kept in the table
configuration of its ``Started`` event) is re-dealt with :mod:`domain.shuffle`: the
``Dealt`` event's hands, wild indicator, open card and stock (when recorded), and every
closed ``Picked`` card before the first ``Reshuffled``, must match the derived deal.

A game of another variant whose deals come from seeds (``Variant.revealed_seed``; Red 3,
one deal a round) is rebuilt from its events as they stream past and handed to its
variant's ``check_stored_deals`` once it is over (or at the end of the pass).

The checker is fed stored events in order (the verification pass streams them) and reads
only those four kinds of 13-card event, decoded the way the application decodes them; it keeps a
few bytes per running game (the derived stock as card indices), so a pass over 100,000
games stays small.

A closed pick needs only the event's ``source``, ``card`` and ``player``: its state is decoded
as the mapper decodes it (the transcoder's ``decode``: orjson and the ``_type_`` envelopes) and
the three values read off it, without building the domain event around them. That is the
same reading wherever the event would show those values as they are in its state (its class
has no upcasters and nothing of its own under those names, and the state carries all three
and no ``class_version``); anything else, including a state that fails to decode, goes
through the full decoding, so it is read, or fails, exactly as before.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from eventsourcing.persistence import Mapper

from domain import variants
from domain.cards import ALL_CARDS, Card, card_indices
from domain.rummy13.game import Game
from domain.rummy13.table import TableConfig
from domain.shuffle import (
    DealMismatch,
    ShuffleError,
    ShuffleSeeds,
    deal_mismatch,
    dealt_stock,
    derive_deal,
)
from replays.integrity.replaying import Replayer, replayer_for
from replays.store.transcodings import LedgerMapper, ledger_transcoder

if TYPE_CHECKING:
    from uuid import UUID

    from replays.integrity.report import Report
    from replays.integrity.store import StoredRow

DEAL = "deal"
STARTED, DEALT, PICKED = Game.Started.TOPIC, Game.Dealt.TOPIC, Game.Picked.TOPIC
RESHUFFLED, SETTLED = Game.Reshuffled.TOPIC, Game.Settled.TOPIC
TOPICS = frozenset({STARTED, DEALT, PICKED, RESHUFFLED, SETTLED})

# A card's deck index by its stored (canonical) text: a closed pick is compared with the
# derived stock without parsing its card, unless it is not in that text.
_INDEX_BY_TEXT = {str(card): card.index for card in ALL_CARDS}
_PICK_FIELDS = ("source", "card", "player")


def _reads_as_state(cls: type, names: tuple[str, ...]) -> bool:
    """Whether an instance of ``cls`` built as the mapper builds it (its ``__dict__`` the
    decoded state) shows ``names`` exactly as the state has them: no upcasting to do, the
    default attribute lookup, and no class attribute under those names that could take
    precedence (a data descriptor) or answer for a missing key."""
    if getattr(cls, "class_version", 1) != 1 or any(
        name.startswith("upcast_v") for klass in cls.__mro__ for name in vars(klass)
    ):
        return False
    if cls.__getattribute__ is not object.__getattribute__ or hasattr(cls, "__getattr__"):
        return False
    return not any(hasattr(cls, name) for name in names)


_PICKED_READS_AS_STATE = _reads_as_state(Game.Picked, _PICK_FIELDS)


@dataclass
class _Seeded:
    game_id: str
    config: TableConfig
    seeds: ShuffleSeeds
    stock: bytes = b""  # derived stock as card indices, top first, once dealt
    stock_start: int = 0
    taken: int = 0
    dealt: bool = False


def _take_next(game: _Seeded, index: int) -> bool:
    """Whether the card ``index`` is the one the derived stock has next; if so it is
    counted as taken (a closed pick that agrees with the deal)."""
    if game.taken < len(game.stock) and index == game.stock[game.taken]:
        game.taken += 1
        return True
    return False


class DealChecker:
    """Feed it a game's stored events in version order; it adds mismatches to a report."""

    def __init__(self, report: Report) -> None:
        self.report = report
        self.games: dict[bytes, _Seeded] = {}
        self.skipped: set[bytes] = set()
        self.checked = 0
        self.unrevealed = 0
        self.rebuilt: dict[bytes, tuple[Any, str, Any]] = {}  # other variants: being rebuilt
        self._last_id: tuple[bytes | None, UUID | None] = (None, None)
        self.light_picks = _PICKED_READS_AS_STATE

    @cached_property
    def mapper(self) -> Mapper:
        return LedgerMapper(transcoder=ledger_transcoder())  # topics: the allow-list

    @cached_property
    def _replayer(self) -> Replayer:
        return replayer_for(self.mapper)

    def _decode(self, row: StoredRow) -> Any:
        """The stored event as the mapper decodes it (the same object, without the mapper's
        per-event lookups: :mod:`replays.integrity.replaying`). A game's events mostly
        come one after another, so the last game's UUID is kept rather than built again
        for each event."""
        if row.originator != self._last_id[0]:
            self._last_id = (row.originator, row.originator_id)
        return self._replayer.event(self._last_id[1], row.version, row.topic, row.state)

    def _pick_state(self, row: StoredRow) -> dict | None:
        """A Picked event's decoded state, when reading ``source``, ``card`` and ``player``
        off it is reading them off the event :meth:`_decode` builds (the module's
        docstring); None sends the event through :meth:`_decode`."""
        replayer = self._replayer
        if not (self.light_picks and replayer.plain):
            return None
        try:
            state = replayer.decode_state(row.state)
        except Exception:  # _decode fails the same way, with the mapper's own message
            return None
        if type(state) is not dict or "class_version" in state:
            return None
        if "source" not in state or "card" not in state or "player" not in state:
            return None
        return state

    def skip(self, originator: bytes) -> None:
        """Stop checking a game whose events are already found wanting."""
        self.skipped.add(originator)
        self.games.pop(originator, None)

    def feed(self, row: StoredRow, game_id: str, event: Any = None, applied: Any = None) -> None:
        """Check one stored event. A replay that has decoded it already passes the
        ``event`` and the aggregate it gave (``applied``): nothing is decoded twice."""
        topic = row.topic
        if row.originator in self.skipped:
            return
        if topic not in TOPICS:
            # Most of a 13-card game's events (discards, melds): no other variant's game
            # begins with them or is being rebuilt under their id.
            if row.version == 1 or row.originator in self.rebuilt:
                self._rebuild(row, game_id, applied)
            return
        if topic == STARTED:
            self._started(row, game_id, event, applied)
            return
        game = self.games.get(row.originator)
        if game is None:
            return
        try:
            if topic == DEALT:
                self._dealt(game, row, event)
            elif topic == PICKED and game.dealt:
                self._picked(game, row, event)
            elif topic in (RESHUFFLED, SETTLED):
                del self.games[row.originator]  # the seeds say nothing after this
        except Exception as error:  # an event that no longer decodes is itself a finding
            self._fail(row, f"the event cannot be read to check the deal ({error})")

    def _rebuild(self, row: StoredRow, game_id: str, applied: Any = None) -> None:
        """Another variant's game: rebuilt event by event while its seed is revealed."""
        found = self.rebuilt.get(row.originator)
        if found is None:
            if row.version != 1:
                return
            variant = variants.for_topic(row.topic)
            if variant is None or variant.started_topic != row.topic:
                return
            found = (variant, game_id, None)
        variant, name, game = found
        try:
            game = applied if applied is not None else self._decode(row).mutate(game)
        except Exception as error:  # an event that no longer decodes is itself a finding
            self.rebuilt.pop(row.originator, None)
            self._fail(row, f"the event cannot be read to check the deal ({error})", name)
            return
        if row.version == 1:
            revealed = variant.revealed_seed(game)
            if revealed is None:
                return
            if not revealed:
                self.unrevealed += 1
                return
        if variant.is_over(game):
            self.rebuilt.pop(row.originator, None)
            self._check_rebuilt(variant, name, game, row)
        else:
            self.rebuilt[row.originator] = (variant, name, game)

    def _check_rebuilt(self, variant, name: str, game, row: StoredRow) -> None:
        self.checked += 1
        mismatch = variant.check_stored_deals(game)
        if mismatch is not None:
            self._fail(row, mismatch, name)

    def _started(self, row: StoredRow, game_id: str, event: Any = None, applied=None) -> None:
        try:
            # A replay's game, just started from this event, holds the table its body read
            # from the event's config (TableConfig.from_dict, as below): not read again.
            config = applied.config if type(applied) is Game and event is not None else None
            if type(config) is not TableConfig:
                config = TableConfig.from_dict(
                    (event if event is not None else self._decode(row)).config
                )
            if not config.shuffle:
                return
            seeds = ShuffleSeeds.from_dict(config.shuffle)
        except Exception as error:
            self._fail(row, f"the shuffle block cannot be checked: {error}", game_id)
            return
        if seeds.server_seed is None:
            self.unrevealed += 1
            return
        self.games[row.originator] = _Seeded(game_id, config, seeds)

    def _dealt(self, game: _Seeded, row: StoredRow, event: Any = None) -> None:
        event = event if event is not None else self._decode(row)
        config = game.config
        self.checked += 1
        players = list(config.players)
        deck = {
            "dealer": config.dealer_player,
            "decks": config.decks,
            "jokers_per_deck": config.jokers_per_deck,
        }
        try:
            # The usual answer (the stored deal is the derived one) without the deal's
            # cards; anything else is derived again and read card by card.
            stock = dealt_stock(event, game.seeds, players, **deck)
            derived = derive_deal(game.seeds, players, **deck) if stock is None else None
        except ShuffleError as error:
            self._fail(row, f"the shuffle block cannot be checked: {error}")
            return
        if stock is None:
            if derived is None:
                self._fail(row, str(DealMismatch("commitment", None, None, None)))
                return
            mismatch = deal_mismatch(event, derived)  # hands, wild, open_card, stock
            if mismatch is not None:
                self._fail(row, str(mismatch))
                return
            stock = card_indices(derived.stock), derived.stock_start
        game.stock, game.stock_start = stock
        game.dealt = True

    def _picked(self, game: _Seeded, row: StoredRow, event: Any = None) -> None:
        state = self._pick_state(row) if event is None else None
        if state is None:
            event = event if event is not None else self._decode(row)
            if event.source != "closed":
                return
            text = event.card
        elif state["source"] != "closed":
            return
        else:
            text = state["card"]
        index = _INDEX_BY_TEXT.get(text) if type(text) is str else None
        card = None
        if index is None:
            card = Card.parse(text)
            index = card.index
        if _take_next(game, index):
            return
        card = card or Card.parse(text)
        player = event.player if event is not None else state["player"]
        expected = ALL_CARDS[game.stock[game.taken]] if game.taken < len(game.stock) else None
        self._fail(
            row,
            f"{player} picked {card} from the stock, but the shuffled stock has "
            f"{expected} on top (deck position {game.stock_start + game.taken})",
        )

    def pick_as_dealt(self, row: StoredRow, event: Any) -> bool:
        """Whether ``event`` (``row`` decoded, a ``Picked``) is, in a game whose deal is
        being checked, an open pick or the closed pick of the card the derived stock has
        next (then counted): what :meth:`feed` finds in it, nothing, settled without its
        steps. False (any other pick, a card in other text, no such field): feed it."""
        game = self.games.get(row.originator)
        if game is None or not game.dealt or event is None:
            return False
        try:
            source, text = getattr(event, "source", None), getattr(event, "card", None)
        except Exception:  # the feed words what reading them meets
            return False
        if type(source) is not str:
            return False
        if source != "closed":
            return True
        index = _INDEX_BY_TEXT.get(text) if type(text) is str else None
        return index is not None and _take_next(game, index)

    def _fail(self, row: StoredRow, message: str, game_id: str | None = None) -> None:
        game = self.games.get(row.originator)
        name = game_id or (game.game_id if game else str(row.originator_id))
        self.report.add(
            DEAL, f"the deal does not come from its committed shuffle: {message}", name, row.version
        )
        self.skip(row.originator)

    def finish(self) -> None:
        for originator, (variant, name, game) in list(self.rebuilt.items()):
            del self.rebuilt[originator]
            self.checked += 1
            mismatch = variant.check_stored_deals(game)
            if mismatch is not None:
                self.report.add(
                    DEAL,
                    f"the deal does not come from its committed shuffle: {mismatch}",
                    name,
                    game.version,
                )
        if self.checked:
            self.report.notes.append(f"{self.checked} deal(s) checked against their shuffle seeds")
        if self.unrevealed:
            self.report.notes.append(
                f"{self.unrevealed} game(s) commit to a shuffle whose seed is not revealed yet"
            )


@dataclass(slots=True)
class _Fed:
    """What the store pass fed :class:`DeferredDeals` of one game."""

    count: int = 0  # events fed
    in_order: bool = True  # their versions ran 1, 2, 3, ...
    relevant: bool = False  # the checker could find something in them
    names: dict[int, str] = field(default_factory=dict)  # {index: the game id given}
    skipped: bool = False  # fed no further after an event found wanting
    done: bool = False  # checked already (by the replay or apart)
    problems_at: list[int] = field(default_factory=list)  # the report's problem count at each
    first_id: int = 0  # the notification id of its first event


class DeferredDeals:
    """The whole-store deal check done inside the read-model replay, which decodes and
    applies every event anyway (one process, read-model tables present): fed by the store
    pass exactly as a :class:`DealChecker` is, it only notes what that checker would be
    fed, and each game's events are then checked as the replay passes them (the events
    it decoded, the game it applied them to), nothing decoded twice.

    What the checker is fed, per game: the game's stored events in notification order,
    up to (not including) the first one found wanting, after which it is skipped
    (:meth:`skip`). A game's replay stands in for that feed only when it is the very same
    sequence: every event of the game was fed (none skipped), their versions run 1, 2, 3,
    … in notification order, and the replay read and applied as many events. Any other
    game that the feed could find something in (a 13-card deal event, another variant's
    first event) is fed as before from its events read again, in notification order,
    by :meth:`finish`. Its findings are the checker's, word for word, naming the game id
    the store pass gave with the event, and they take the places in the report (and the
    checker's notes theirs) that the store pass's feed gave them."""

    def __init__(self, checker: DealChecker, events: str) -> None:
        from replays.integrity.report import Report

        self.checker, self.events = checker, events
        self.report = checker.report
        self.games: dict[bytes, _Fed] = {}
        self.placed: list[tuple] = []  # (place, after the pass, row id, order, problem)
        self.scratch = Report()
        self.ends = (0, 0)  # the problems and notes as the store pass left them

    def feed(self, row: StoredRow, game_id: str, event: Any = None, applied: Any = None) -> None:
        # The store pass feeds every event here: its fields unpacked at once.
        notification_id, originator, version, topic, _, _ = row
        entry = self.games.get(originator)
        if entry is None:
            entry = self.games[originator] = _Fed(first_id=notification_id)
        elif entry.skipped:
            return
        index = entry.count
        entry.count = index + 1
        entry.problems_at.append(len(self.report.problems))
        if version != index + 1:
            entry.in_order = False
        if topic in TOPICS:
            entry.relevant = True
            if topic == STARTED:
                entry.names[index] = game_id
        elif version == 1:
            variant = variants.for_topic(topic)
            if variant is not None and variant.started_topic == topic:
                entry.relevant = True
                entry.names[index] = game_id

    def skip(self, originator: bytes) -> None:
        entry = self.games.get(originator)
        if entry is None:
            entry = self.games[originator] = _Fed()
        entry.skipped = True

    def pass_done(self) -> None:
        """Where the store pass's feed would have finished (its checker's ``finish``)."""
        self.ends = (len(self.report.problems), len(self.report.notes))

    def watch(self, rows: list[StoredRow]) -> _GameDeals | None:
        """The deal check to ride along the replay of ``rows`` (one game's events, in
        version order), or None where the replay cannot stand in for the feed."""
        entry = self.games.get(rows[0].originator)
        if entry is None or not entry.relevant or entry.skipped or entry.done:
            return None
        if not entry.in_order or entry.count != len(rows):
            return None
        return _GameDeals(entry.names)

    def settle(self, rows: list[StoredRow], watch: _GameDeals | None, report: Report) -> bool:
        """The game's deal check, from the replay that went to its end with ``watch`` or
        else (``watch`` None: the replay stopped) by feeding ``rows`` (the same events,
        in the same order) to the checker. True when it found something (the game is
        then left alone by the read-model step, as when the store pass found it)."""
        entry = self.games[rows[0].originator]
        entry.done = True
        if watch is None:
            found = self._feed(rows, entry.names)
        else:
            found = watch.found
            checker, game = self.checker, watch.checker
            checker.checked += game.checked
            checker.unrevealed += game.unrevealed
            checker.rebuilt.update(game.rebuilt)
        self._place(entry, found)
        return bool(found)

    def _feed(self, rows, names: dict[int, str]) -> list[tuple]:
        """``rows`` fed to the checker; its findings as (index of the row, row id, problem)."""
        checker, problems = self.checker, self.scratch.problems
        checker.report = self.scratch
        found = []
        try:
            for index, row in enumerate(rows):
                before = len(problems)
                checker.feed(row, names.get(index, ""))
                found += [(index, row.notification_id, p) for p in problems[before:]]
        finally:
            checker.report = self.report
        return found

    def _place(self, entry: _Fed, found: list[tuple]) -> None:
        positions = entry.problems_at
        for index, notification_id, problem in found:
            self.placed.append((positions[index], 0, notification_id, len(self.placed), problem))

    def apart(self, connection, originator: bytes) -> bool:
        """A game the replay cannot stand in for (it is replayed all the same, or not at
        all): fed, if the feed could find anything in it, from its events read again in
        notification order, as many as the pass fed. True when that found something."""
        import sqlalchemy as sa

        from replays.integrity.store import _stored, id_param

        entry = self.games.get(originator)
        if entry is None:
            return False
        if entry.done or not entry.relevant or not entry.count:
            return False
        entry.done = True
        query = sa.text(
            "SELECT id, originator_id, originator_version, topic, state FROM "
            f"{self.events} WHERE originator_id = :o ORDER BY id"
        )
        raws = connection.execute(query, {"o": id_param(connection, originator)})
        rows = [_stored(raw) for raw in itertools.islice(raws, entry.count)]
        found = self._feed(rows, entry.names)
        self._place(entry, found)
        if entry.skipped:
            self.checker.skip(originator)
        return bool(found)

    def take(
        self, connection, originator: bytes, count: int, clean: bool, checked: int, unrevealed: int
    ) -> bool:
        """A ``verify --jobs`` worker's deal check of one game (:class:`WorkerDeals`): its
        replay of ``count`` events found nothing (``clean``; ``checked`` and ``unrevealed``
        its counts) or not. Taken as :meth:`settle` takes a replay's where that replay
        stands in for the feed and found nothing; anything else is fed apart here, from
        the events in this pass's view (:meth:`apart`), which also names whatever is
        found. True when the deal was found wanting."""
        entry = self.games.get(originator)
        if (
            clean
            and entry is not None
            and entry.relevant
            and not (entry.skipped or entry.done)
            and entry.in_order
            and entry.count == count
        ):
            entry.done = True
            self.checker.checked += checked
            self.checker.unrevealed += unrevealed
            return False
        return self.apart(connection, originator)

    def finish(self, connection) -> None:
        """Feed the games the replay did not check, do the checker's own finish, and put
        every finding and note where the store pass's feed would have put it."""
        checker = self.checker
        for originator in list(self.games):
            self.apart(connection, originator)
        # The matches still being rebuilt, in the order the pass met them.
        first = {originator: entry.first_id for originator, entry in self.games.items()}
        checker.rebuilt = dict(sorted(checker.rebuilt.items(), key=lambda kv: first[kv[0]]))
        scratch = self.scratch
        scratch.problems.clear()
        checker.report = scratch
        try:
            checker.finish()
        finally:
            checker.report = self.report
        problems, notes = self.ends
        for problem in scratch.problems:
            self.placed.append((problems, 1, 0, len(self.placed), problem))
        report = self.report
        for offset, (place, *_, problem) in enumerate(sorted(self.placed, key=_order)):
            report.problems.insert(place + offset, problem)
        report.notes[notes:notes] = scratch.notes


class WorkerDeals:
    """The deal checks a ``verify --jobs`` worker rides along its replays, for the main
    process's :class:`DeferredDeals` (:meth:`DeferredDeals.take`), which alone knows what
    its store pass fed: each game's verdict, as (aggregate id, events replayed, whether
    the replay went to the end and found nothing, deals checked, seeds unrevealed). A
    game whose deal is found wanting is checked again in the main process, whose view
    and game names decide what is reported; a game still being rebuilt at its last
    event (another variant's, not over) too. Used as :func:`replay_games` uses a
    :class:`DeferredDeals`; it never leaves a game alone."""

    def __init__(self) -> None:
        self.verdicts: list[tuple[bytes, int, bool, int, int]] = []

    def watch(self, rows: list[StoredRow]) -> _GameDeals:
        return _GameDeals({})

    def apart(self, connection, originator: bytes) -> bool:
        return False

    def settle(self, rows: list[StoredRow], watch: _GameDeals | None, report: Report) -> bool:
        checker = None if watch is None else watch.checker
        clean = checker is not None and not watch.found and not checker.rebuilt
        self.verdicts.append(
            (
                rows[0].originator,
                len(rows),
                clean,
                checker.checked if clean else 0,
                checker.unrevealed if clean else 0,
            )
        )
        return False


def _order(placed: tuple) -> tuple:
    return placed[:4]


class _GameDeals:
    """One game's deal check fed by its replay (findings kept apart, as (index of the row,
    row id, problem), until the replay is known to have gone to the end)."""

    def __init__(self, names: dict[int, str]) -> None:
        from replays.integrity.report import Report

        self.names = names
        self.checker = DealChecker(Report())
        self.found: list[tuple] = []

    def __call__(self, row: StoredRow, event: Any, game: Any) -> None:
        checker = self.checker
        topic = row.topic
        if topic not in TOPICS:
            if row.version != 1 and not checker.rebuilt:
                return  # what DealChecker.feed does with it: nothing (most events of a game)
        elif topic == PICKED and checker.pick_as_dealt(row, event):
            return  # half a game's events: settled without the feed's steps
        problems = checker.report.problems
        before = len(problems)
        checker.feed(row, self.names.get(row.version - 1, ""), event, game)
        if len(problems) > before:
            index = row.version - 1
            self.found += [(index, row.notification_id, p) for p in problems[before:]]
