"""Verifiable shuffles: the whole deck order derived from committed seeds, and the deal from it.

Before the deal the server commits to a secret ``server_seed`` by recording
``sha256:<hex of SHA-256(server_seed)>``; each seat contributes a ``client_seed``. After the
game the server reveals its seed and anyone can re-derive the deck and check every card.
``docs/integrity.md`` describes the algorithm step by step; in short:

1. A byte stream: blocks ``HMAC-SHA256(key=server_seed, msg=seeds ‖ counter)`` for
   counter 0, 1, 2, ... where ``seeds`` is each client seed (seat order) prefixed by its
   length as 2 bytes big-endian, and ``counter`` is 8 bytes big-endian.
2. Unbiased integers below ``n``: take the next 4 bytes as a big-endian ``x``; accept when
   ``x < 2**32 - 2**32 % n`` and return ``x % n``, otherwise take 4 more (rejection sampling).
3. Fisher-Yates over :func:`domain.cards.deck_order`: for ``i`` from the last index down to
   1, swap positions ``i`` and ``j = draw(i + 1)``. Position 0 is then the top of the deck.
4. The deal (:func:`deal_from_order`): one card at a time to each seat in seat order,
   starting with the first mover, 13 rounds; the next card is the wild indicator, the
   next the open card, and the rest is the closed stock, top first.

>>> order = derive_deck_order(b"server", [b"p1", b"p2"], decks=2, jokers_per_deck=1)
>>> len(order), str(order[0])
(106, 'AH')
>>> deal = deal_from_order(order, ["p1", "p2"], dealer="p2")
>>> len(deal.hands["p1"]), str(deal.wild), len(deal.stock)
(13, '3S', 78)
>>> commitment(b"server")
'sha256:b3eacd33433b31b5252351032c9b3e7a2e7aa7738d5decdf0dd6c62680853c06'
"""

from __future__ import annotations

import hashlib
import hmac
import struct
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain, islice
from operator import mod
from typing import Any, NamedTuple

from domain.cards import ALL_CARDS, Card, CardError, card_text, card_texts, deck_order

HAND_SIZE = 13
COMMITMENT_PREFIX = "sha256:"
_DRAW_BYTES = 4
_DRAW_SPACE = 1 << (8 * _DRAW_BYTES)


class ShuffleError(ValueError):
    """A shuffle block or seed that cannot be used: malformed hex, a seat without a seed."""


def commitment(server_seed: bytes) -> str:
    """The value recorded before the deal: ``sha256:`` and the hex SHA-256 of the seed."""
    return COMMITMENT_PREFIX + hashlib.sha256(server_seed).hexdigest()


def shuffle_blocks(server_seed: bytes, client_seeds: Sequence[bytes]) -> Iterator[bytes]:
    """The HMAC-SHA256 stream as 32-byte blocks (counter 0, 1, 2, ...), without end."""
    seeds = _seeds_message(client_seeds)
    counter = 0
    while True:
        yield hmac.new(server_seed, seeds + counter.to_bytes(8, "big"), hashlib.sha256).digest()
        counter += 1


def _seeds_message(client_seeds: Sequence[bytes]) -> bytes:
    seeds = b""
    for seed in client_seeds:
        if len(seed) > 0xFFFF:
            raise ShuffleError(f"a client seed is {len(seed)} bytes; at most 65535 allowed")
        seeds += len(seed).to_bytes(2, "big") + seed
    return seeds


def shuffle_stream(server_seed: bytes, client_seeds: Sequence[bytes]) -> Iterator[int]:
    """The same stream one byte (0..255) at a time."""
    for block in shuffle_blocks(server_seed, client_seeds):
        yield from block


class UniformDraws:
    """Unbiased integers in ``[0, n)`` taken from a byte stream by rejection sampling.

    The stream comes as chunks of bytes (any sizes); draws read 4 bytes at a time across
    chunk boundaries, so the chunking never changes the result.

    >>> draws = UniformDraws(iter([bytes([0xFF, 0xFF, 0xFF]), bytes([0xFF, 0, 0, 0, 7])]))
    >>> draws.below(3)   # 0xFFFFFFFF is rejected for n=3 (it lies in the biased tail)
    1
    """

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._buffer = b""

    def _take(self) -> int:
        while len(self._buffer) < _DRAW_BYTES:
            self._buffer += next(self._chunks)
        value = int.from_bytes(self._buffer[:_DRAW_BYTES], "big")
        self._buffer = self._buffer[_DRAW_BYTES:]
        return value

    def below(self, n: int) -> int:
        if not 1 <= n <= _DRAW_SPACE:
            raise ValueError(f"cannot draw below {n}")
        limit = _DRAW_SPACE - _DRAW_SPACE % n
        while True:
            x = self._take()
            if x < limit:
                return x % n


def fisher_yates(items: Sequence[Any], draws: UniformDraws) -> list[Any]:
    """A new list: ``items`` shuffled by Durstenfeld's Fisher-Yates, last index first."""
    shuffled = list(items)
    for i in range(len(shuffled) - 1, 0, -1):
        j = draws.below(i + 1)
        shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
    return shuffled


def derive_deck_order(
    server_seed: bytes,
    client_seeds: Sequence[bytes],
    decks: int = 2,
    jokers_per_deck: int = 1,
) -> list[Card]:
    """The whole deck, top first, derived from the seeds (client seeds in seat order).

    The same shuffle as ``fisher_yates(deck_order(...), UniformDraws(shuffle_blocks(...)))``
    (steps 1-3 above, which the tests hold it to), computed with the 4-byte draws unpacked
    eight to a block in C: a 32-byte block holds exactly eight, so no draw straddles two.
    Every import of a record with a revealed seed derives its deck, and ``verify`` every
    stored one."""
    return _shuffled(deck_order(decks, jokers_per_deck), _draws(server_seed, client_seeds))


def _draws(server_seed: bytes, client_seeds: Sequence[bytes]) -> Iterator[int]:
    """The stream's 4-byte draws, unpacked eight to a block."""
    return chain.from_iterable(map(_EIGHT_DRAWS, _blocks(server_seed, client_seeds)))


@lru_cache(maxsize=8)
def _deck_indices(decks: int, jokers_per_deck: int) -> tuple[int, ...]:
    """:func:`deck_order` as the cards' indices (``ALL_CARDS[index]`` is the card)."""
    return tuple(card.index for card in deck_order(decks, jokers_per_deck))


# Each card's canonical text by its index.
_TEXTS = tuple(card_text(card) for card in ALL_CARDS)


def _shuffled(shuffled: list[Any], words: Iterator[int]) -> list[Any]:
    """Fisher-Yates over ``shuffled`` in place, drawing from ``words`` (4-byte draws) with
    :meth:`UniformDraws.below`'s rejection sampling."""
    size = len(shuffled)
    first = list(islice(words, size - 1))  # the draws a shuffle without a rejection takes
    # A draw below 2**32 - size is below every rejection limit 2**32 - 2**32 % n for n up
    # to size (2**32 % n < n): when all of them are, none is rejected and the i-th swap
    # takes the i-th draw. A draw that close to 2**32 comes about once in 400,000 deals of
    # 106 cards; then the draws are taken one by one.
    if first and max(first) < _DRAW_SPACE - size:
        swaps = zip(range(size - 1, 0, -1), map(mod, first, range(size, 1, -1)), strict=True)
        for i, j in swaps:
            shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
        return shuffled
    draw = chain(first, words).__next__
    limits = _LIMITS
    for i in range(size - 1, 0, -1):
        n = i + 1
        limit = limits[n] if n < _LIMITS_KEPT else _DRAW_SPACE - _DRAW_SPACE % n
        x = draw()
        while x >= limit:  # rejection sampling, as UniformDraws.below
            x = draw()
        j = x % n
        shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
    return shuffled


# UniformDraws.below's limit for each n of the decks in use (four packs: 216 cards).
_LIMITS_KEPT = 512
_LIMITS = [0] + [_DRAW_SPACE - _DRAW_SPACE % n for n in range(1, _LIMITS_KEPT)]


_EIGHT_DRAWS = struct.Struct(">8I").unpack
_SHA256_BLOCK = 64
_IPAD = bytes(x ^ 0x36 for x in range(256))
_OPAD = bytes(x ^ 0x5C for x in range(256))


def _blocks(server_seed: bytes, client_seeds: Sequence[bytes]) -> Iterator[bytes]:
    """:func:`shuffle_blocks`' HMAC-SHA256 (RFC 2104) with its keyed inner and outer hashes
    started once and copied for each block: with OpenSSL 3 every new HMAC or hash fetches
    its algorithm again, which costs several times the hashing of a block."""
    message = _seeds_message(client_seeds)
    key = server_seed
    if len(key) > _SHA256_BLOCK:
        key = hashlib.sha256(key).digest()
    key = key.ljust(_SHA256_BLOCK, b"\0")
    inner = hashlib.sha256(key.translate(_IPAD))
    inner.update(message)
    outer = hashlib.sha256(key.translate(_OPAD))
    counter = 0
    while True:
        block = inner.copy()
        block.update(counter.to_bytes(8, "big"))
        keyed = outer.copy()
        keyed.update(block.digest())
        yield keyed.digest()
        counter += 1


@dataclass(frozen=True)
class DealtCards:
    """What a deal puts on the table; ``hands`` keep the order the cards were dealt."""

    hands: dict[str, tuple[Card, ...]]
    wild: Card
    open_card: Card
    stock: tuple[Card, ...]
    # Deck position of every card above, so a mismatch can say where the card came from.
    hand_positions: dict[str, tuple[int, ...]]

    @property
    def wild_position(self) -> int:
        return sum(len(hand) for hand in self.hands.values())

    @property
    def open_position(self) -> int:
        return self.wild_position + 1

    @property
    def stock_start(self) -> int:
        return self.wild_position + 2

    def to_dict(self) -> dict[str, Any]:
        """The docs/record-format.md ``deal`` block."""
        return {
            "hands": {player: [str(c) for c in hand] for player, hand in self.hands.items()},
            "wild": str(self.wild),
            "open": str(self.open_card),
            "stock": [str(c) for c in self.stock],
        }


def first_mover(players: Sequence[str], dealer: str | None) -> str:
    """The seat after the dealer; the first seat when no dealer is named."""
    if dealer is None:
        return players[0]
    if dealer not in players:
        raise ShuffleError(f"dealer {dealer} is not one of the players {', '.join(players)}")
    return players[(list(players).index(dealer) + 1) % len(players)]


def deal_from_order(
    order: Sequence[Card],
    players: Sequence[str],
    dealer: str | None = None,
    hand_size: int = HAND_SIZE,
) -> DealtCards:
    """Deal ``order`` (top first): round-robin from the first mover, then wild, open, stock."""
    seats, count, dealt = _seats(len(order), players, dealer, hand_size)
    hands = {player: tuple(order[k:dealt:count]) for player, k in seats.items()}
    positions = {player: tuple(range(k, dealt, count)) for player, k in seats.items()}
    return DealtCards(
        hands=hands,
        wild=order[dealt],
        open_card=order[dealt + 1],
        stock=tuple(order[dealt + 2 :]),
        hand_positions=positions,
    )


def _seats(
    cards: int, players: Sequence[str], dealer: str | None, hand_size: int
) -> tuple[dict[str, int], int, int]:
    """How a deck of ``cards`` (top first) is dealt to ``players``, round-robin from the
    first mover: each player's first deck position (the k-th seat from the first mover
    gets every ``count``-th card from position k on), ``count``, and how many cards the
    hands take (the wild, the open card and the stock follow). Raises when it cannot be
    dealt."""
    if len(set(players)) != len(players) or not players:
        raise ShuffleError(f"players must be distinct and not empty: {list(players)}")
    needed = hand_size * len(players) + 2
    if cards < needed:
        raise ShuffleError(f"{len(players)} players need {needed} cards, the deck has {cards}")
    count = len(players)
    start = list(players).index(first_mover(players, dealer))
    seats = {player: (index - start) % count for index, player in enumerate(players)}
    return seats, count, hand_size * count


def deal_from_seeds(
    server_seed: bytes,
    client_seeds: Mapping[str, bytes],
    players: Sequence[str],
    dealer: str | None = None,
    decks: int = 2,
    jokers_per_deck: int = 1,
) -> DealtCards:
    """Derive the deck from the seeds and deal it: what the simulator uses to deal."""
    seeds = [_client_seed(client_seeds, player) for player in players] if client_seeds else []
    order = derive_deck_order(server_seed, seeds, decks, jokers_per_deck)
    return deal_from_order(order, players, dealer)


def _client_seed(client_seeds: Mapping[str, bytes], player: str) -> bytes:
    try:
        return client_seeds[player]
    except KeyError:
        raise ShuffleError(f"no client seed for seat {player}") from None


@dataclass(frozen=True)
class ShuffleSeeds:
    """The record's ``shuffle`` block: ``{"commitment", "seed", "client_seeds"}``.

    ``seed`` is absent while a game runs (only the commitment is public) and revealed after.

    >>> block = ShuffleSeeds.from_dict({"commitment": commitment(b"s"), "seed": "73",
    ...                                 "client_seeds": {"p1": "01", "p2": "02"}})
    >>> block.server_seed, block.seeds_for(["p1", "p2"])
    (b's', [b'\\x01', b'\\x02'])
    """

    commitment: str
    server_seed: bytes | None = None
    client_seeds: dict[str, bytes] | None = None

    @classmethod
    def from_dict(cls, block: Mapping[str, Any]) -> ShuffleSeeds:
        if not isinstance(block, Mapping):
            raise ShuffleError(f"shuffle must be an object, got {block!r}")
        commit = block.get("commitment")
        if not isinstance(commit, str) or not commit.startswith(COMMITMENT_PREFIX):
            raise ShuffleError(f"shuffle.commitment must be 'sha256:<hex>', got {commit!r}")
        _hex("shuffle.commitment", commit[len(COMMITMENT_PREFIX) :], exact=32)
        seed = block.get("seed")
        clients = block.get("client_seeds")
        if clients is not None and not isinstance(clients, Mapping):
            raise ShuffleError(f"shuffle.client_seeds must be an object, got {clients!r}")
        return cls(
            commitment=commit.lower(),
            server_seed=None if seed is None else _hex("shuffle.seed", seed),
            client_seeds=None
            if clients is None
            else {str(p): _hex(f"shuffle.client_seeds.{p}", s) for p, s in clients.items()},
        )

    def to_dict(self) -> dict[str, Any]:
        block: dict[str, Any] = {"commitment": self.commitment}
        if self.server_seed is not None:
            block["seed"] = self.server_seed.hex()
        if self.client_seeds is not None:
            block["client_seeds"] = {p: s.hex() for p, s in self.client_seeds.items()}
        return block

    def seeds_for(self, players: Sequence[str]) -> list[bytes]:
        """Client seeds in seat order (none when the block carries no client seeds)."""
        if not self.client_seeds:
            return []
        extra = set(self.client_seeds) - set(players)
        if extra:
            raise ShuffleError(f"client seed for {', '.join(sorted(extra))}, who is not seated")
        return [_client_seed(self.client_seeds, player) for player in players]


def _hex(field: str, text: Any, exact: int | None = None) -> bytes:
    if not isinstance(text, str):
        raise ShuffleError(f"{field} must be a hex string, got {text!r}")
    try:
        value = bytes.fromhex(text)
    except ValueError:
        raise ShuffleError(f"{field} is not hex: {text!r}") from None
    if exact is not None and len(value) != exact:
        raise ShuffleError(f"{field} must be {exact} bytes of hex, got {len(value)}")
    return value


@dataclass(frozen=True)
class DealMismatch:
    """The first place where a recorded deal departs from the one its seeds derive."""

    what: str  # "commitment", "hand", "wild", "open", "stock", "pick"
    position: int | None  # deck position (0 = top of the shuffled deck)
    expected: Card | None
    found: Card | None
    player: str | None = None
    move: int | None = None  # index of the move in the record, for "pick"

    def __str__(self) -> str:
        at = f" (deck position {self.position})" if self.position is not None else ""
        if self.what == "commitment":
            return "the revealed seed does not match the shuffle commitment"
        if self.what == "hand":
            return (
                f"{self.player}'s hand holds {self.found}, but the shuffle deals "
                f"{self.expected} to {self.player}{at}"
            )
        if self.what == "pick":
            return (
                f"move {self.move} ({self.player} pick closed {self.found}): the shuffled "
                f"stock has {self.expected} on top{at}"
            )
        return f"the {self.what} card is {self.found}, but the shuffle puts {self.expected}{at}"


def verify_deal(
    record_deal: Any,
    shuffle: ShuffleSeeds | Mapping[str, Any],
    players: Sequence[str],
    *,
    dealer: str | None,
    decks: int = 2,
    jokers_per_deck: int = 1,
    moves: Iterable[Any] = (),
) -> DealMismatch | None:
    """Check a recorded deal (and its closed picks) against the deal its seeds derive.

    ``record_deal`` is a docs/record-format.md ``deal`` block (cards as text or :class:`Card`) or any
    object with ``hands``, ``wild``, ``open``/``open_card`` and ``stock`` attributes.
    ``moves`` are docs/record-format.md move dicts (or objects with ``type``, ``player``, ``source``/
    ``from`` and ``card``); closed picks are checked against the derived stock until the
    first reshuffle, whose new order the record carries itself. Returns ``None`` when every
    card matches, else the first :class:`DealMismatch`. A block without a revealed seed
    raises :class:`ShuffleError`.
    """
    seeds = shuffle if isinstance(shuffle, ShuffleSeeds) else ShuffleSeeds.from_dict(shuffle)
    derived = derive_deal(
        seeds, players, dealer=dealer, decks=decks, jokers_per_deck=jokers_per_deck
    )
    if derived is None:
        return DealMismatch("commitment", None, None, None)
    return deal_mismatch(record_deal, derived) or _picks_mismatch(moves, derived)


def derive_deal(
    seeds: ShuffleSeeds,
    players: Sequence[str],
    *,
    dealer: str | None,
    decks: int = 2,
    jokers_per_deck: int = 1,
) -> DealtCards | None:
    """The deal the revealed seeds give, or ``None`` when the seed breaks its commitment."""
    client_seeds = _committed_seeds(seeds, players)
    if client_seeds is None:
        return None
    order = derive_deck_order(seeds.server_seed, client_seeds, decks, jokers_per_deck)
    return deal_from_order(order, players, dealer)


def _committed_seeds(seeds: ShuffleSeeds, players: Sequence[str]) -> list[bytes] | None:
    """The client seeds in seat order, or ``None`` when the revealed seed breaks its
    commitment (raises while it is not revealed)."""
    if seeds.server_seed is None:
        raise ShuffleError("the shuffle seed has not been revealed; only the commitment is known")
    if commitment(seeds.server_seed) != seeds.commitment:
        return None
    return seeds.seeds_for(players)


def dealt_stock(
    record_deal: Any,
    seeds: ShuffleSeeds,
    players: Sequence[str],
    *,
    dealer: str | None,
    decks: int = 2,
    jokers_per_deck: int = 1,
) -> tuple[bytes, int] | None:
    """``verify``'s usual answer of :func:`derive_deal` then :func:`deal_mismatch`: when
    ``record_deal`` holds exactly the derived deal in its canonical texts (what
    :func:`_same_texts` settles), the derived stock as card indices (top first) and the
    deck position of its top card. The deck is shuffled as card indices and read as texts,
    without making the deal's cards or their positions. ``None`` for anything else (a seed
    that breaks its commitment, any other deal): those two then say what. Raises what
    :func:`derive_deal` raises."""
    client_seeds = _committed_seeds(seeds, players)
    if client_seeds is None:
        return None
    order = _shuffled(
        list(_deck_indices(decks, jokers_per_deck)), _draws(seeds.server_seed, client_seeds)
    )
    seats, count, dealt = _seats(len(order), players, dealer, HAND_SIZE)
    texts = list(map(_TEXTS.__getitem__, order))
    derived = DealTexts(
        {player: texts[k:dealt:count] for player, k in seats.items()},
        texts[dealt],
        texts[dealt + 1],
        texts[dealt + 2 :],
    )
    if not _same_texts(record_deal, derived):
        return None
    return bytes(order[dealt + 2 :]), dealt + 2


class DealTexts(NamedTuple):
    """A deal's cards in their canonical texts, hands in the order dealt."""

    hands: dict[str, list[str]]
    wild: str
    open_card: str
    stock: list[str]

    @classmethod
    def of(cls, derived: DealtCards) -> DealTexts:
        return cls(
            {player: card_texts(cards) for player, cards in derived.hands.items()},
            card_text(derived.wild),
            card_text(derived.open_card),
            card_texts(derived.stock),
        )


def deal_mismatch(record_deal: Any, derived: DealtCards) -> DealMismatch | None:
    """The first card of a recorded deal (hands, wild, open, stock) the derived one lacks."""
    if _same_texts(record_deal, DealTexts.of(derived)):
        return None
    hands, wild, open_card, stock = _deal_parts(record_deal)
    for player in derived.hands:
        mismatch = _hand_mismatch(player, hands.get(player, ()), derived)
        if mismatch:
            return mismatch
    for player in hands:
        if player not in derived.hands:
            raise ShuffleError(f"the deal has a hand for {player}, who is not seated")
    if wild != derived.wild:
        return DealMismatch("wild", derived.wild_position, derived.wild, wild)
    if open_card != derived.open_card:
        return DealMismatch("open", derived.open_position, derived.open_card, open_card)
    # Cards are interned, so a tuple comparison (identity first, in C) settles the usual case
    # of a matching stock; only a mismatch is walked card by card to say where.
    if stock is not None and tuple(stock) != derived.stock:
        for offset, (want, got) in enumerate(zip(derived.stock, stock, strict=False)):
            if want != got:
                return DealMismatch("stock", derived.stock_start + offset, want, got)
        if len(stock) != len(derived.stock):
            extra = len(stock) > len(derived.stock)
            offset = min(len(stock), len(derived.stock))
            return DealMismatch(
                "stock",
                derived.stock_start + offset,
                None if extra else derived.stock[offset],
                stock[offset] if extra else None,
            )
    return None


def _same_texts(record_deal: Any, derived: DealTexts) -> bool:
    """Whether a deal that holds its cards as text (a stored ``Dealt`` event, a JSON record)
    holds exactly the derived cards in their canonical text: each hand the same cards (in
    any order), the same wild and open card, the same stock in the same order (when given).
    That is the usual answer, and comparing texts settles it without reading each card;
    False (anything else: other text, other values, a mismatch) leaves the deal to
    :func:`deal_mismatch`'s reading card by card, which finds the same when they match."""
    mapping = isinstance(record_deal, Mapping)
    wild = _field(record_deal, "wild", mapping=mapping)
    if type(wild) is not str or wild != derived.wild:
        return False
    if _field(record_deal, "open", "open_card", mapping=mapping) != derived.open_card:
        return False
    hands = _field(record_deal, "hands", mapping=mapping)
    if type(hands) is not dict or hands.keys() != derived.hands.keys():
        return False
    stock = _field(record_deal, "stock", mapping=mapping)
    if stock is not None and stock != derived.stock:
        return False
    for player, texts in derived.hands.items():
        held = hands[player]
        if held != texts and (type(held) is not list or not _same_cards(held, texts)):
            return False
    return True


def _same_cards(held: list, texts: list[str]) -> bool:
    """The same texts in another order (a hand recorded sorted, say)."""
    if len(held) != len(texts) or not all(type(text) is str for text in held):
        return False
    return sorted(held) == sorted(texts)


def pick_mismatch(
    derived: DealtCards,
    taken: int,
    card: Card | str,
    *,
    player: str | None = None,
    move: int | None = None,
) -> DealMismatch | None:
    """Whether the ``taken``-th closed pick (0-based, before any reshuffle) is the stock's."""
    card = _card(card)
    expected = derived.stock[taken] if taken < len(derived.stock) else None
    if card == expected:
        return None
    return DealMismatch("pick", derived.stock_start + taken, expected, card, player, move)


def _hand_mismatch(player: str, hand: Sequence[Card], derived: DealtCards) -> DealMismatch | None:
    # The same interned cards (by identity) are the same hand, without hashing each card;
    # anything else is counted, which also covers equal cards that are not interned.
    if sorted(map(id, derived.hands[player])) == sorted(map(id, hand)):
        return None
    want = Counter(derived.hands[player])
    got = Counter(hand)
    if want == got:
        return None
    missing = [  # derived cards the record lacks, in deal order with their positions
        (position, card)
        for position, card in zip(
            derived.hand_positions[player], derived.hands[player], strict=True
        )
        if (want - got)[card]
    ]
    extra = [card for card in hand if (got - want)[card]]
    position, expected = missing[0] if missing else (None, None)
    return DealMismatch("hand", position, expected, extra[0] if extra else None, player)


def _picks_mismatch(moves: Iterable[Any], derived: DealtCards) -> DealMismatch | None:
    taken = 0
    stock = derived.stock
    mappings: dict[type, bool] = {}  # an ABC check per kind of move, not per move
    for index, move in enumerate(moves):
        kind_of_move = type(move)
        mapping = mappings.get(kind_of_move)
        if mapping is None:
            mapping = mappings[kind_of_move] = isinstance(move, Mapping)
        kind = move.get("type") if mapping else getattr(move, "type", None)
        if kind != "pick":
            if kind == "reshuffle":
                return None
            continue
        if _field(move, "from", "source", mapping=mapping) != "closed":
            continue
        card = move.get("card") if mapping else getattr(move, "card", None)
        # The stock's own (interned) card is the usual answer: no need to say where.
        if taken >= len(stock) or card is not stock[taken]:
            mismatch = pick_mismatch(
                derived,
                taken,
                card,
                player=_field(move, "player", mapping=mapping),
                move=index,
            )
            if mismatch:
                return mismatch
        taken += 1
    return None


def _deal_parts(
    deal: Any,
) -> tuple[dict[str, list[Card]], Card, Card, list[Card] | None]:
    hands = _field(deal, "hands")
    stock = _field(deal, "stock")
    return (
        # A parsed record's cards are Cards already: only other values go through _card.
        {
            str(player): [c if type(c) is Card else _card(c) for c in cards]
            for player, cards in hands.items()
        },
        _card(_field(deal, "wild")),
        _card(_field(deal, "open", "open_card")),
        None if stock is None else [c if type(c) is Card else _card(c) for c in stock],
    )


def _field(value: Any, *names: str, mapping: bool | None = None) -> Any:
    if mapping is None:
        mapping = isinstance(value, Mapping)  # asked once: an ABC check is not cheap
    for name in names:
        if mapping:
            if name in value:
                return value[name]
        elif hasattr(value, name):
            return getattr(value, name)
    return None


def _card(value: Any) -> Card:
    if value is None:
        raise CardError("a card is missing from the deal")
    return Card.parse(value)
