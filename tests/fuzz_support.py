"""Hypothesis strategies for the fuzz tests: random JSON, and real game records mutated the
ways records go wrong (a field dropped or replaced, a card or player changed, moves
dropped, repeated or swapped, the JSON text cut or corrupted), plus helpers that fingerprint
the event store so a test can prove nothing it did not mean to store was stored.

Example counts stay small (``FUZZ_EXAMPLES``, default 40 per property) so the whole suite
stays quick; set ``RUMMY_LEDGER_FUZZ_EXAMPLES=1000`` for a long hunt.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from pathlib import Path

import sqlalchemy as sa
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from domain.cards import ALL_CARDS

DATA = Path(__file__).resolve().parent / "data"
FUZZ_EXAMPLES = int(os.environ.get("RUMMY_LEDGER_FUZZ_EXAMPLES", "40"))
FUZZ_SETTINGS = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=os.environ.get("CI", "").lower() in ("1", "true", "yes"),
)

CARD_TEXTS = [*sorted({str(card) for card in ALL_CARDS}), "10H", "1S", "ZZ", "", "JK", "jk"]
WORDS = [
    "pick",
    "discard",
    "drop",
    "miss",
    "declare",
    "show",
    "reshuffle",
    "open",
    "closed",
    "points",
    "raise",
    "red3",
    "p1",
    "p2",
    "p9",
    "INR",
    "rummy-ledger/game@1",
    "2025-03-01T18:00:00Z",
]


def sample_records() -> list[dict]:
    """The 13-card sample records (tests/data/games.jsonl)."""
    with open(DATA / "games.jsonl", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def red3_records() -> list[dict]:
    lines = (DATA / "red3_example.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(CARD_TEXTS + WORDS),
)
json_values = st.recursive(
    leaves,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(max_size=8) | st.sampled_from(WORDS), children, max_size=4)
    ),
    max_leaves=12,
)


MUTATIONS = (
    "replace",
    "delete",
    "card",
    "player",
    "drop_move",
    "repeat_move",
    "swap_moves",
    "cut_moves",
    "seq",
)


def _paths(value, prefix=()):
    """Every place in a JSON value: a path of keys and indexes."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


def _parent(record, path):
    node = record
    for step in path[:-1]:
        node = node[step]
    return node


@st.composite
def mutated_records(draw, records: list[dict], *, fresh_ids: bool = True) -> dict:
    """A real record with one to three things wrong (or, now and then, nothing wrong)."""
    record = copy.deepcopy(draw(st.sampled_from(records)))
    if fresh_ids and draw(st.booleans()):
        record["game_id"] = "FZ-" + draw(st.text("abcdef0123456789", min_size=6, max_size=6))
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        moves = record.get("moves") if isinstance(record.get("moves"), list) else None
        kind = draw(st.sampled_from(MUTATIONS))
        places = [p for p in _paths(record) if p]
        if kind in ("replace", "delete", "card", "player") and places:
            path = draw(st.sampled_from(places))
            parent = _parent(record, path)
            if kind == "delete":
                if isinstance(parent, dict):
                    del parent[path[-1]]
                else:
                    parent.pop(path[-1])
            elif kind == "replace":
                parent[path[-1]] = draw(json_values)
            elif kind == "card":
                parent[path[-1]] = draw(st.sampled_from(CARD_TEXTS))
            else:
                parent[path[-1]] = draw(st.sampled_from(["p1", "p2", "p3", "p9", "a1", ""]))
        elif moves:
            i = draw(st.integers(min_value=0, max_value=len(moves) - 1))
            j = draw(st.integers(min_value=0, max_value=len(moves) - 1))
            if kind == "drop_move":
                moves.pop(i)
            elif kind == "repeat_move":
                moves.insert(i, copy.deepcopy(moves[i]))
            elif kind == "swap_moves":
                moves[i], moves[j] = moves[j], moves[i]
            elif kind == "cut_moves":
                del moves[i:]
            elif isinstance(moves[i], dict):
                moves[i]["seq"] = draw(json_values)
    return record


@st.composite
def mutated_lines(draw, records: list[dict], *, fresh_ids: bool = True) -> str:
    """A JSON Lines line: a mutated record, sometimes with its text cut or corrupted."""
    text = json.dumps(draw(mutated_records(records, fresh_ids=fresh_ids)))
    how = draw(st.sampled_from(["as is", "as is", "as is", "cut", "byte", "random json"]))
    if how == "cut" and text:
        text = text[: draw(st.integers(min_value=0, max_value=len(text) - 1))]
    elif how == "byte" and text:
        at = draw(st.integers(min_value=0, max_value=len(text) - 1))
        text = (
            text[:at] + draw(st.sampled_from(['"', "{", "]", ",", "\\", "\x00", "é"])) + text[at:]
        )
    elif how == "random json":
        text = json.dumps(draw(json_values))
    return text.replace("\n", " ")


# -- the event store's fingerprint -----------------------------------------------------------


def store_fingerprint(url: str) -> dict[str, tuple[int, str]]:
    """Per stored aggregate: (events, sha256 over its events' versions, topics and states)."""
    from replays.store.db import engine_for
    from replays.store.schema import EVENTS_TABLE

    prints: dict[str, hashlib._Hash] = {}
    counts: dict[str, int] = {}
    with engine_for(url).connect() as connection:
        rows = connection.execute(
            sa.text(
                f"SELECT originator_id, originator_version, topic, state FROM {EVENTS_TABLE} "
                "ORDER BY originator_id, originator_version"
            )
        )
        for originator, version, topic, state in rows:
            key = str(originator)
            digest = prints.setdefault(key, hashlib.sha256())
            digest.update(f"{version}|{topic}|".encode())
            digest.update(bytes(state))
            counts[key] = counts.get(key, 0) + 1
    return {key: (counts[key], digest.hexdigest()) for key, digest in prints.items()}


def assert_untouched(before: dict, after: dict) -> None:
    """Every aggregate stored before is still there, byte for byte."""
    changed = [key for key, value in before.items() if after.get(key) != value]
    assert not changed, f"stored games changed: {changed}"
