"""The interface every game type implements, and the small pure values it returns.

Outside :mod:`domain.variants` (the registry and the list of families): the families import
this, and that package imports the families.

In the spirit of python-chess's ``chess/variant.py``: a game type subclasses
:class:`Variant` and overrides only what differs; code outside the game's package takes "a
variant" from :mod:`domain.variants.registry` and never asks which one it is
(docs/adding-a-variant.md §2 has the whole interface and a walk through Red 3).

Everything here is pure: no I/O, no SQL, no Flask. The read models are plain ``dict`` rows
(:class:`GameRows`) that ``replays.readmodels.projections`` writes; the audit is a value with
``to_dict()`` and ``for_people()``.

>>> Discrepancy("gross", "49.00", "49.70", REPORTED).to_dict()
{'field': 'gross', 'reported': '49.00', 'computed': '49.70', 'source': 'reported'}
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

from domain.errors import RuleViolation
from domain.money import SETTLEMENT_KIND
from domain.timestamps import parse_time, utc_text

RECORDED = "recorded"  # the figures stored with the game's own events (Settled, RoundScored)
REPORTED = "reported"  # the operator's own figures (the record's `reported` block)
MAX_NOTE = 2000  # the longest discrepancy note a read-model row keeps


@dataclass(frozen=True)
class Discrepancy:
    """One field where a recorded or reported figure differs from the recomputation."""

    field: str
    reported: Any
    computed: Any
    source: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "reported": self.reported,
            "computed": self.computed,
            "source": self.source,
        }

    def note(self) -> str:
        """The one-line form a read-model row keeps (``discrepancy_note``)."""
        return f"{self.source} {self.field}: {self.reported} != computed {self.computed}"


def discrepancy_lines(found: Iterable[Discrepancy], agree: str) -> list[str]:
    """An audit's closing lines for people: ``agree`` when nothing differs, else each
    difference on a line (every variant's ``for_people`` ends so)."""
    found = list(found)
    if not found:
        return [agree]
    return [f"{len(found)} discrepancy(ies):"] + [
        f"  {d.source:<9} {d.field:<28} says {d.reported!s:<10} recomputed {d.computed}"
        for d in found
    ]


# A ``moves`` row's columns, in the table's order: the order of
# :meth:`Variant.move_fields`' values, whose row is ``move_of_fields`` of them.
MOVE_COLUMNS = (
    "game_id",
    "move_index",
    "version",
    "player",
    "move_type",
    "card",
    "source",
    "groups",
    "round",
    "point_value",
    "at",
)
MOVE_AT = MOVE_COLUMNS.index("at")


def move_of_fields(fields: tuple) -> dict[str, Any]:
    """The ``moves`` row (:meth:`Variant.move_row`) of a move's fields
    (:meth:`Variant.move_fields`): a time kept as its text read as
    :func:`~domain.timestamps.parse_time` reads it."""
    row = dict(zip(MOVE_COLUMNS, fields, strict=True))
    at = row["at"]
    if type(at) is str:
        row["at"] = utc_text(at) or parse_time(at)
    return row


# A games row's columns before any settlement or audit: the same for every variant.
UNSETTLED_COLUMNS: dict[str, Any] = {
    "gross": None,
    "fee": None,
    "net_to_winner": None,
    "settlement_hash": None,
    "recomputed_hash": None,
    "discrepancy": False,
    "discrepancy_note": None,
}


@dataclass
class GameRows:
    """What one event changes in the read models, as plain rows.

    ``game``: columns of the game's ``games`` row to set (``game_id`` included);
    ``results``, ``entries``: ``player_results`` and ``ledger_entries`` rows to insert.
    """

    game: dict[str, Any] = field(default_factory=dict)
    results: list[dict[str, Any]] = field(default_factory=list)
    entries: list[dict[str, Any]] = field(default_factory=list)


class NotLive(RuleViolation):
    """A variant whose games cannot be recorded move by move over the live API."""


class ReportedAlready(RuleViolation):
    """A second, different ``reported`` block for a game that already has one."""


class SimulatedPlay(NamedTuple):
    """What the simulator needs to play a variant (``replays.simulation``): seat a table,
    play one game at it returning its record, and give the operator's ``reported`` block."""

    setup_table: Callable[..., Any]
    play: Callable[..., dict]
    report: Callable[..., dict | None]


class PublishedSchema(NamedTuple):
    """One JSON Schema document a family publishes (``docs/schema/<name>.json``, served at
    ``/api/v1/schemas/<name>.json``): ``adapter`` is the pydantic ``TypeAdapter`` that
    validates it, ``openapi`` the name of the ingest API's request body it is (or None)."""

    name: str
    adapter: Any
    title: str
    description: str
    openapi: str | None = None


class Variant(ABC):
    """One game type: its records, aggregate, settlement, deals, audit, rows and replay.

    A subclass sets the class attributes and the abstract methods; the rest have defaults
    that suit an aggregate keeping ``steps`` (a list of move dicts) and ``step_versions``
    (the aggregate version after each step), as :class:`~domain.red3.game.Red3Match` does.
    """

    name: ClassVar[str]  # the record's `variant`: "points", "raise", "red3"
    record_format: ClassVar[str]  # the record's `format`: "rummy-ledger/red3@1"
    aggregate: ClassVar[type]  # its events carry explicit TOPICs (aggregate.TOPIC + ".")
    snapshot_interval: ClassVar[int | None] = 20  # None: never snapshot
    has_money: ClassVar[bool] = True  # False: points only (no stakes, no ledger entries)
    # Whether step n of the timeline is the ``moves`` row with move_index n (False when
    # steps also count deals, as Red 3's do: pages then do not list moves rows by step).
    steps_are_moves: ClassVar[bool] = True
    # The web module with this variant's own pages (replay, table, audit, summary), by
    # dotted name so that domain/ never imports web/; the default is the generic pages
    # built from this interface alone (timeline, table_svg, audit); None: the shared
    # views' built-in pages are this variant's (13-card).
    web_pages: ClassVar[str | None] = "web.variant_pages"
    # The ledger_entries kinds this variant's settlement posts (closing_rows' entries):
    # period reports count them all as the game's own settlement and total each kind, so a
    # variant can tell apart what its money is (a match's rejoin fees, a split's shares).
    entry_kinds: ClassVar[tuple[str, ...]] = (SETTLEMENT_KIND,)
    # Whether a live header (``POST /api/v1/games``) may carry the operator's ``reported``
    # figures; otherwise they come with ``/settle`` (or, where parse_reported says so, not
    # over the live API at all).
    reported_in_header: ClassVar[bool] = False

    # Whether the pages analyse this game's hands (best grouping, hand score, whether the
    # hand could declare): True where a hand is a 13-card rummy hand the solver groups
    # (docs/rules.md §1.4). A variant whose scoring is not a grouping of the hand keeps
    # False, and its pages say :attr:`no_analysis_words` rather than draw an analysis that
    # would be false for its rules.
    analyses_hands: ClassVar[bool] = False
    no_analysis_words: ClassVar[str] = "Hand analysis does not apply to this game's rules."

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"

    # -- identity ----------------------------------------------------------------------
    @property
    def topic_prefix(self) -> str:
        """Every event topic of this variant's aggregate starts so."""
        return self.aggregate.TOPIC + "."

    @property
    def started_topic(self) -> str:
        """The topic of the first event of every game of this variant."""
        return self.aggregate.Started.TOPIC

    def owns(self, game: Any) -> bool:
        """Whether ``game`` (an aggregate) is one of this variant's games."""
        return isinstance(game, self.aggregate)

    def players(self, game: Any) -> tuple[str, ...]:
        """The game's players in seat order (the aggregate's, or its table's)."""
        players = getattr(game, "players", None)
        return tuple(game.config.players if players is None else players)

    # -- records -----------------------------------------------------------------------
    @abstractmethod
    def parse_record(self, obj: Mapping[str, Any]) -> Any:
        """The record object as a checked record value (a bad field raises naming it)."""

    @abstractmethod
    def record_of(self, game: Any) -> Any:
        """The record of a stored game (what ``export`` writes; ``.to_dict()`` canonical)."""

    def explain(self, error: Exception, record: Any = None) -> str:
        """Why a record was refused, without the game id (``round 2 move 4 (...): ...``)."""
        detail = getattr(error, "detail", None)
        return detail if isinstance(detail, str) else str(error)

    def record_moves(self, record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        """Every move of a raw record (a JSON object of this variant), in play order across
        its rounds or deals (the simulator's summary counts them)."""
        return list(record.get("moves") or ())

    def thirteen_card_deals(self, record: Mapping[str, Any]) -> list[tuple[int, Mapping]] | None:
        """The 13-card deals of a raw record (each a mapping with ``deal`` and ``moves``), with
        the replay step before each deal's first move; None when it has none. The fair-play
        review (replays/fairplay) reads their moves against the hands and the stock."""
        if isinstance(record.get("deal"), Mapping) and isinstance(record.get("moves"), list):
            return [(0, record)]
        return None

    def deal_profiles(self, game: Any) -> list[Any] | None:
        """The rule profile each of ``thirteen_card_deals``' deals of a stored game scores its
        hands under (its 13-card table's: the table's decks and jokers, a pool's scoring), in
        the same order; None: the record's ``rules`` as they stand."""
        return None

    # Points carry from deal to deal (a match): dropping a strong hand gives chips away.
    carries_points: ClassVar[bool] = False

    def export(self, game: Any) -> dict[str, Any]:
        """The export line's object: the record plus the figures the ledger recorded."""
        return self.record_of(game).to_dict()

    def schemas(self) -> list[PublishedSchema]:
        """The JSON Schema documents this family publishes: its record format and its live
        API bodies (imported when called: pydantic stays out of the command line's start)."""
        return []

    # -- the aggregate -----------------------------------------------------------------
    def build(self, record: Any) -> Any:
        """The record's game played in memory, every rule checked, nothing stored."""
        return record.build()

    def start(self, header: Mapping[str, Any]) -> Any:
        """A new game from a live header (``POST /api/v1/games``): started, not stored."""
        raise NotLive(f"{self.name} games cannot be recorded move by move")

    def play(self, game: Any, move: Mapping[str, Any]) -> None:
        """Apply one live move (``POST /games/<id>/moves``) to ``game``, or raise."""
        raise NotLive(f"{self.name} games cannot be recorded move by move")

    def parse_move(self, game: Any, body: Mapping[str, Any], seq: int) -> dict[str, Any]:
        """One live move checked for shape, in its canonical dict form."""
        return dict(body)

    def describe_move(self, move: Mapping[str, Any], seq: int) -> str:
        """A recorded live move in words, for a conflicting retry's message."""
        return f"move {seq} ({self.describe(move)})"

    def parse_reported(self, game: Any, value: Any) -> dict[str, Any]:
        """The operator's ``reported`` block given at ``POST /games/<id>/settle``."""
        raise NotLive(f"{self.name} games take no reported figures over the live API")

    def settlement_view(self, game: Any) -> dict[str, Any] | None:
        """The game's outcome as ``settle`` shows it (None while it runs)."""
        return None

    def live_error(self, error: RuleViolation) -> str:
        """A broken rule over the live API in words (422's message)."""
        return str(error)

    def moves_played(self, game: Any) -> int:
        """How many live moves the game has: the next ``seq``."""
        return len(self.timeline(game))

    def move_at(self, game: Any, seq: int) -> dict[str, Any]:
        """The live move ``seq`` as recorded (a retried ``seq`` is compared with it)."""
        return dict(self.timeline(game)[seq])

    def view(self, game: Any) -> dict[str, Any]:
        """What ``GET /api/v1/games/<id>`` shows of a game: its table for the public seat."""
        state = self.table_state(game)
        return state.to_dict() if hasattr(state, "to_dict") else dict(state)

    def settle_live(self, game: Any, reported: Mapping[str, Any] | None) -> bool:
        """``POST /games/<id>/settle``: close the game; True when anything was recorded."""
        raise NotLive(f"{self.name} games cannot be settled over the live API")

    # -- settlement ----------------------------------------------------------------------
    @abstractmethod
    def settle(self, record: Any) -> dict[str, Any]:
        """The ``settle`` outcome of a whole record, computed in memory."""

    def describe_settlement(self, outcome: Mapping[str, Any]) -> str:
        """The ``settle`` outcome for people (``rummy-ledger settle`` without ``--json``)."""
        return f"{outcome.get('game_id')}: " + json.dumps(dict(outcome), sort_keys=True)

    # -- deals from shuffle seeds --------------------------------------------------------
    def build_checked(self, record: Any) -> Any:
        """The record's game played in memory, every rule checked, after its deals are
        checked against a revealed shuffle seed (what an import stores). A variant that
        must play the game to check its deals overrides this to play it once."""
        self.check_deals(record)
        return self.build(record)

    def check_deals(self, record: Any) -> None:
        """Refuse a record whose deals do not come from its revealed shuffle seed (raise a
        ``RecordError``/``BadDeal`` naming the deal); a variant without seeds checks none."""
        return None

    def revealed_seed(self, game: Any) -> bool | None:
        """Whether a stored game's shuffle seed is revealed (None: it has no shuffle block
        or its deals are checked elsewhere; False: only committed to so far)."""
        return None

    def is_over(self, game: Any) -> bool:
        """Whether the game has ended (nothing more will be dealt or played)."""
        return False

    def check_stored_deals(self, game: Any) -> str | None:
        """The first deal of a stored game that does not come from its revealed seed, in
        words (None: all agree, or no seed revealed yet): what ``verify`` reports."""
        return None

    # -- audit ---------------------------------------------------------------------------
    @abstractmethod
    def audit(self, game: Any, events: Iterable[Any]) -> Any:
        """Recompute the game's figures from its ``events`` (all of them, in order) and
        compare: a value with ``discrepancies``, ``to_dict()`` and ``for_people()``."""

    # -- read models ---------------------------------------------------------------------
    def light_fold(self) -> Callable[[Any, Any], Any] | None:
        """A cheap stand-in for the aggregate in the projection: ``fold(state, event)``
        moves ``state`` (None before the game's first event) on by one stored event and
        returns it, raising for an event that cannot follow; every read-model method below
        then takes such a state in place of the game and gives the same rows. None (the
        default): the projection applies each event to the aggregate itself."""
        return None

    def saved_move_rows(self, game: Any, events: Sequence[Any]) -> list[dict[str, Any]] | None:
        """The ``moves`` rows of a game just saved whole, from ``game`` as it stands after
        the last of its ``events`` (all of them, version 1 on) without applying them again;
        None (the default): the projection applies them one by one. A variant returns rows
        only where its other rows (:meth:`closing_rows`, :meth:`audits_after`) come out the
        same from the game as it ends, and its move rows equal :meth:`move_row`'s."""
        return None

    @abstractmethod
    def started_row(self, game: Any) -> dict[str, Any]:
        """The ``games`` row of a game just started (every column)."""

    @abstractmethod
    def progress_row(self, game: Any) -> dict[str, Any]:
        """The ``games`` columns every event may change (status, round, counts)."""

    def move_row(self, before: Any, domain_event: Any) -> dict[str, Any] | None:
        """The ``moves`` row of a move event applied to ``before`` (None: not a move)."""
        return None

    # A variant may give :meth:`move_row`'s values without the dict (``verify`` compares
    # them in their stored form, one tuple a move): ``move_fields(before, domain_event,
    # read_time)`` returns them in :data:`MOVE_COLUMNS` order (None: not a move), the
    # event's ``at`` read by ``read_time`` (text it returns is the time that text gives:
    # :func:`move_of_fields`). None: verify builds the rows with :meth:`move_row`.
    move_fields: ClassVar[Any] = None

    # The event classes :meth:`closing_rows` and :meth:`audits_after` answer anything for:
    # of any other event, None and False (``verify`` asks neither of most events). None:
    # both are asked of every event.
    closing_events: ClassVar[tuple[type, ...] | None] = None

    def closing_rows(self, game: Any, domain_event: Any) -> GameRows | None:
        """Rows an event that closes the game adds (its columns, results, ledger entries);
        None: nothing beyond its progress columns."""
        return None

    def audits_after(self, game: Any, domain_event: Any) -> bool:
        """Whether the audit columns must be recomputed once the batch that holds this
        event is applied (computed once per game per batch: an audit can be costly)."""
        return False

    def written_audit_columns(self, game: Any, events: Iterable[Any]) -> dict[str, Any]:
        """The audit columns the projection writes, from what the write already knew: a
        variant whose stored figures are those its own rules computed at write time
        compares only what the write did not compute (an operator's report). The same
        columns as :meth:`audit_columns` for a game stored by the ledger; the default
        recomputes. ``audit`` and ``verify`` keep :meth:`audit_columns`."""
        return self.audit_columns(game, events)

    def audit_columns(
        self, game: Any, events: Iterable[Any], *, verify: bool = True
    ) -> dict[str, Any]:
        """The ``games`` row's audit columns (``discrepancy``, its note) for the game."""
        if not verify:
            return {"discrepancy": False, "discrepancy_note": None}
        found = self.audit(game, events).discrepancies
        note = "; ".join(d.note() for d in found)
        return {"discrepancy": bool(found), "discrepancy_note": note[:MAX_NOTE] or None}

    def audit_watch(self) -> Any | None:
        """An object a replay feeds as it goes (``before(game, event)`` just before each
        event is applied), whose ``columns(game)`` then gives :meth:`audit_columns`
        without replaying the events again; None (the default): ``audit_columns`` is
        called. ``verify`` replays every game once for all its checks."""
        return None

    # -- replay --------------------------------------------------------------------------
    def timeline(self, game: Any) -> list[dict[str, Any]]:
        """The game's steps in order, each a move dict (``{"type", "player", ...}``)."""
        return list(game.steps)

    def last_move_number(self, game: Any) -> int:
        """The replay's last move: its tables are those after moves 0 to this, and a dispute
        case is opened at one of them (the replay viewer, the case form and the case page all
        take the range from here). The default: 0 is the start, then one move a step."""
        return len(self.timeline(game))

    def version_after(self, game: Any, step: int) -> int:
        """The aggregate version once ``step`` steps were played (0: just started)."""
        return game.step_versions[step - 1] if step else 1

    def table_state(self, game: Any) -> Any:
        """What the table shows (a value with ``to_dict()``)."""
        return game.table_state()

    def describe(self, step: Mapping[str, Any]) -> str:
        """A step in words, for move lists: ``p1 discards 9C``."""
        parts = [str(step.get("player") or ""), str(step.get("type") or "")]
        parts += [str(value) for key, value in step.items() if key not in ("player", "type")]
        return " ".join(part for part in parts if part)

    def seat_view(self, state: Any, seat: str | None) -> Any:
        """What ``seat`` may see of the table ``state`` (None: the full, staff view): the one
        question every page asks before drawing a hand. A card stays face down to a seat
        unless it is the seat's own or the table showed it to everyone (a show, a
        declaration, a laid-down book); :func:`domain.seat_view.table_for_view` applies the
        state's own ``for_seat``, which each family writes to that rule."""
        from domain.seat_view import table_for_view

        return table_for_view(state, seat)

    # -- money shown on pages --------------------------------------------------------------
    def stake_words(self, point_value: Any, paid: Mapping[str, Any]) -> str:
        """What one player staked on a game, in the few words a history row has room for:
        ``point_value`` is the games row's (the starting one), ``paid`` the player's own
        ledger debits for the game by entry kind. A player's *net* for a game is never
        worked out here: it is the sum of that player's ledger entries
        (:func:`replays.readmodels.nets.player_nets`), the same for every variant."""
        from decimal import Decimal

        from domain.money import rate_text

        if not self.has_money:
            return "—"
        return rate_text(Decimal(point_value or 0)) + " a point"

    def table_svg(self, game: Any, seat: str | None = None) -> str:
        """The table as one standalone SVG image (``seat``: as that player saw it).

        The default writes the table state's fields as lines of text, so a new variant
        has a replay page before it has a drawing of its own."""
        state = self.table_state(game)
        if seat is not None and hasattr(state, "for_seat"):
            state = state.for_seat(seat)
        shown = state.to_dict() if hasattr(state, "to_dict") else dict(state)
        lines = [f"{key}: {json.dumps(value, default=str)}" for key, value in shown.items()]
        height = 20 * len(lines) + 20
        texts = "".join(
            f'<text x="10" y="{20 * (n + 1)}">{_escape(line)}</text>'
            for n, line in enumerate(lines)
        )
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="640" height="{height}" '
            f'font-family="sans-serif" font-size="14">{texts}</svg>'
        )

    # -- simulator -----------------------------------------------------------------------
    def deal_behaviours(self, record: Mapping[str, Any]) -> list[Mapping[str, int]]:
        """For each 13-card deal in a raw record, the behaviours it shows by name (drops,
        misses, auto-drops, wrong shows, declarations, shows, reshuffles) and its length
        (``moves``): what the simulator's summary counts. None for other kinds of game."""
        return []

    @property
    def bot(self) -> Any:
        """The simulator's play for this variant: ``setup_table``, ``play``, ``report``
        (None: the simulator cannot play it)."""
        return None


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
