"""Every field of both record formats, each given hostile values (issue 13).

Five valid records (13-card points with ``reported``, raise with a schedule, a simulated
raise game with a revealed ``shuffle`` block, and a Red 3 match of two rounds with
``reported``) are walked field by field, down to list elements such as ``moves[7].card``
and ``rounds[1].moves[3].card``. At each field goes a wrong type, an awkward string
(empty, 10k characters, RTL marks, NUL, a lone surrogate, emoji, a combining accent,
fullwidth digits), a value at or just past the field's bound, or nothing (the field
removed); every object also gets an unknown field. Each mutated record is imported with
``rummy-ledger import``'s code path between good records, and then either

- it is refused: the message names the game and where (field, move, round, deal), no
  unforeseen exception shows, nothing of it is stored (events, seals, read rows), and the
  good records beside it are stored; or
- it is accepted: it projects with no failure, its game and replay pages answer 200, and
  its export imports into a fresh store and exports identically.

``test_every_field_path_swept`` visits every path deterministically; the hypothesis test
draws values and paths at random (``RUMMY_LEDGER_FUZZ_EXAMPLES`` for a longer hunt), with a
smaller slice on PostgreSQL.
"""

from __future__ import annotations

import itertools
import json
from functools import cache

import pytest
from field_walk import (
    REMOVE,
    UNKNOWN_KEY,
    add_unknown,
    as_line,
    describe,
    dict_paths,
    field_paths,
    hostile_values,
    mutate,
    path_text,
    shape_of,
    sweep_values,
)
from fuzz_support import FUZZ_EXAMPLES, red3_records, sample_records
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from invariant_support import Entry, LedgerUnderTest, good_neighbour, ledgers_on

MUTANTS = itertools.count(1)


@cache
def seeds() -> dict[str, dict]:
    """The valid records whose every field is walked."""
    from replays.simulation import Floor, Simulation

    by_id = {r["game_id"]: r for r in sample_records()}
    simulated = next(iter(Simulation(Floor(seed=7)).games(1)))  # 2 players, raise, shuffle revealed
    assert {"shuffle", "reported"} <= set(simulated) and simulated["shuffle"].get("seed")
    return {
        "points": by_id["seed-points-200"],  # 5 players, reported block
        "raise-schedule": by_id["T5-000300"],
        "shuffle": simulated,
        "red3": red3_records()[0],  # two rounds, reported rounds, totals and winner
    }


def mutant_id(kind: str) -> str:
    return f"FZ-{kind}-{next(MUTANTS):05d}"


def mutated_entry(kind: str, path: tuple, value) -> Entry:
    """The seed record ``kind`` under a fresh id, with ``value`` at ``path``."""
    record = {**seeds()[kind], "game_id": mutant_id(kind)}
    if value is UNKNOWN_KEY:
        record = add_unknown(record, path)
        label = f"{kind}: unknown field added at {path_text(path) or 'the top'}"
    else:
        record = mutate(record, path, value)
        label = f"{kind}: {path_text(path)} = {describe(value)}"
    return Entry(as_line(record), record.get("game_id"), label)


def between_goods(kind: str, entries: list[Entry], every: int = 1) -> list[Entry]:
    """``entries`` with a good record of the same kind before, after and every ``every``."""
    out = [good_neighbour(seeds()[kind])]
    for number, entry in enumerate(entries, start=1):
        out.append(entry)
        if number % every == 0 or number == len(entries):
            out.append(good_neighbour(seeds()[kind]))
    return out


@pytest.fixture
def sqlite_ledger(sqlite_url, tmp_path):
    return LedgerUnderTest(sqlite_url, f"sqlite:///{tmp_path / 'again.sqlite3'}", tmp_path)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def any_ledger(request, tmp_path, monkeypatch):
    """A ledger on each engine, with a second store of the same engine for re-imports."""
    yield from ledgers_on(request.param, tmp_path, monkeypatch)


def assert_no_problems(problems: list[str]) -> None:
    """No broken promise."""
    assert not problems, f"{len(problems)} broken promises:\n" + "\n".join(problems)


# -- every path, deterministically -------------------------------------------------------


def sweep(kind: str) -> list[Entry]:
    """Every path of a seed record with its sweep values, and an unknown field per object."""
    record = seeds()[kind]
    entries, shapes = [], set()
    for number, path in enumerate(field_paths(record)):
        if path == ("game_id",):
            continue  # the harness's handle on the record: see test_hostile_game_ids_...
        # Bound values once per shape (``moves[*].at``), a generic value at every path.
        first = shape_of(path) not in shapes
        shapes.add(shape_of(path))
        values = sweep_values(path, number, bounds=first)
        entries += [mutated_entry(kind, path, value) for value in values]
    entries += [mutated_entry(kind, path, UNKNOWN_KEY) for path in dict_paths(record)]
    return entries


@pytest.mark.parametrize("kind", ["points", "raise-schedule", "shuffle", "red3"])
def test_every_field_path_swept(sqlite_ledger, kind):
    entries = sweep(kind)
    found = sqlite_ledger.run(between_goods(kind, entries, every=10))
    checked = sqlite_ledger.check_accepted(found.accepted, per_shape=True)
    assert_no_problems(found.problems + checked)
    assert found.refused, "a sweep that refuses nothing proves nothing"
    assert len(found.accepted) + len(found.refused) == len(entries)


HOSTILE_IDS = ["A" * 64, "A" * 65, "-x", "", None, 7, ["x"], "\u200fG\u202e", "G\x001", "\ud83c"]


@pytest.mark.parametrize("kind", ["points", "red3"])
def test_hostile_game_ids_between_good_records(sqlite_ledger, kind):
    entries = [
        Entry(as_line({**seeds()[kind], "game_id": value}), value, f"game_id={describe(value)}")
        for value in HOSTILE_IDS
    ]
    found = sqlite_ledger.run(between_goods(kind, entries))
    assert_no_problems(found.problems + sqlite_ledger.check_accepted(found.accepted))
    assert [e.game_id for e in found.accepted] == ["A" * 64]


@pytest.mark.parametrize("kind", ["shuffle", "red3"])
def test_hostile_player_ids_renamed_everywhere(sqlite_ledger, kind):
    """A player id changed consistently (seat, hands, moves, reported), so that only the
    id itself can be wrong: a 64-character id is held, anything else refused by field."""
    from bound_records import renamed

    record = seeds()[kind]
    first = record["players"][0]["id"]
    entries = []
    for value in [*HOSTILE_IDS[:2], "", " p1", "\u200fp1\u202e", "p\x001", "\ud83c", "\uff11"]:
        changed = {**renamed(record, {first: value}), "game_id": mutant_id(kind)}
        entries.append(Entry(as_line(changed), changed["game_id"], f"{kind}: {first} renamed"))
    found = sqlite_ledger.run(between_goods(kind, entries))
    assert_no_problems(found.problems + sqlite_ledger.check_accepted(found.accepted))
    assert len(found.accepted) == 1 and len(found.refused) == len(entries) - 1
    assert all("players[0].id" in e.outcome.message for e in found.refused)


# -- drawn by hypothesis -----------------------------------------------------------------


@st.composite
def mutations(draw) -> Entry:
    kind = draw(st.sampled_from(sorted(seeds())))
    record = seeds()[kind]
    if draw(st.integers(0, 9)) == 0:
        path = draw(st.sampled_from(dict_paths(record)))
        return mutated_entry(kind, path, UNKNOWN_KEY)
    paths = [p for p in field_paths(record) if p != ("game_id",)]
    path = draw(st.sampled_from(paths))
    value = draw(hostile_values(path))
    event("removed" if value is REMOVE else type(value).__name__)
    return mutated_entry(kind, path, value)


def test_drawn_hostile_values_at_drawn_fields(any_ledger):
    on_sqlite = any_ledger.url.startswith("sqlite")

    @settings(
        max_examples=FUZZ_EXAMPLES * 2 if on_sqlite else max(5, FUZZ_EXAMPLES // 4),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(entry=mutations())
    def check(entry):
        kind = entry.label.split(":")[0]
        found = any_ledger.run(between_goods(kind, [entry]))
        event("accepted" if found.accepted else "refused")
        assert_no_problems(found.problems + any_ledger.check_accepted(found.accepted))

    check()


def test_the_sweep_reaches_list_elements_of_both_formats():
    """The walker goes down into lists: moves' cards, Red 3 rounds' moves, the schedule."""
    texts = {kind: {path_text(p) for p in field_paths(r)} for kind, r in seeds().items()}
    assert "moves[7].card" in texts["points"]
    assert "deal.hands.p1[0]" in texts["points"]
    assert "stakes.raise.schedule[2]" in texts["raise-schedule"]
    assert "shuffle.client_seeds" in {t.rsplit(".", 1)[0] for t in texts["shuffle"]}
    assert any(t.startswith("rounds[1].moves[3].") for t in texts["red3"])
    assert json.dumps(seeds()["red3"]).count('"reported"') == 1


@pytest.mark.parametrize(
    "path", [("rules",), ("players", 1, "seat"), ("rounds", 1, "moves", 3, "type")]
)
def test_red3_fields_that_crash_the_reader(sqlite_ledger, path):
    entries = [mutated_entry("red3", path, value) for value in ([], ["p1"], {}, {"p1": 1})]
    found = sqlite_ledger.run(between_goods("red3", entries))
    assert len(found.refused) == len(entries)  # refused, nothing stored, neighbours kept
    assert_no_problems(found.problems)


def test_a_seat_count_out_of_range_names_the_players_field(sqlite_ledger):
    seven = [{"id": f"q{seat}", "seat": seat} for seat in range(1, 8)]
    crowded = {**seeds()["shuffle"], "game_id": mutant_id("shuffle"), "players": seven}
    crowded["dealer"] = "q1"
    entries = [
        mutated_entry("shuffle", ("players", 0), REMOVE),
        Entry(as_line(crowded), crowded["game_id"], "shuffle: players = seven players"),
    ]
    found = sqlite_ledger.run(between_goods("shuffle", entries))
    assert len(found.refused) == 2
    assert_no_problems(found.problems)
