"""The suit tables kept for good are read from domain/rummy13/kept_tables.py at import
instead of being worked out (about a sixth of the time): they must be exactly what
domain/rummy13/suit_tables.py works out, and a stale or damaged file must not be used.

If the first test fails after an edit of suit_tables.py, write the file again:
``python -m domain.rummy13.suit_tables``.
"""

import binascii
import importlib.util
import marshal
import random
import zlib

from domain.rummy13 import kept_tables, kept_wild_tables
from domain.rummy13.native import pure_modules

# The pure source, built or not: these tests replace its internals (domain/rummy13/native.py).
suit_tables, _ = pure_modules()
(
    MERGED,
    SMALL_BUDGET,
    _build_kept,
    _packed_strings,
    _packed_tables,
    _packed_wild_tables,
    _stored_kept,
    _stored_packed,
    suit_table,
    write_kept,
) = (
    suit_tables.MERGED,
    suit_tables.SMALL_BUDGET,
    suit_tables._build_kept,
    suit_tables._packed_strings,
    suit_tables._packed_tables,
    suit_tables._packed_wild_tables,
    suit_tables._stored_kept,
    suit_tables._stored_packed,
    suit_tables.suit_table,
    suit_tables.write_kept,
)


def _merged_nodes(witness, found):
    stack = [witness]
    while stack:
        node = stack.pop()
        if node is None:
            continue
        if isinstance(node[0], str):
            found.append(node[0])
            stack += node[1:]
        else:
            stack.append(node[0])


def test_the_stored_tables_were_written_from_this_source():
    assert suit_tables._fingerprint() == kept_tables.SOURCE, (
        "domain/rummy13/suit_tables.py changed since kept_tables.py was written: "
        "run `python -m domain.rummy13.suit_tables`"
    )
    assert _stored_kept() is not None


def test_the_stored_tables_are_the_tables_worked_out():
    stored = _stored_kept()
    built = _build_kept()
    assert stored == built
    # And the module took up these very tables at import.
    assert {code: suit_tables._SMALL[code] for code in built[0]} == built[0]
    assert {key: suit_tables._SMALL_SPLITS[key] for key in built[1]} == built[1]
    assert {key: suit_tables._SMALL_WILD[key] for key in built[2]} == built[2]
    assert len(built[0]) > 1000 and len(built[1]) > 1000 and len(built[2]) > 1000


def test_stored_witnesses_use_the_module_merged_marker():
    """witness_sequences tells a joined witness by identity (``node[0] is MERGED``)."""
    small, splits, wild = _stored_kept()
    markers = []
    wild_tables = [(marshal.loads(packed)[1],) for packed in wild.values()]
    for tables in [*small.values(), *wild_tables]:
        for table in tables:
            for entry in table or ():
                _merged_nodes(entry[3], markers)
    for _, table in splits.values():
        for entry in table:
            _merged_nodes(entry[3], markers)
    assert markers
    assert all(marker is MERGED for marker in markers)


def test_a_stale_or_damaged_file_is_not_used(monkeypatch):
    monkeypatch.setattr(kept_tables, "SOURCE", "00000000-0")
    assert _stored_kept() is None
    assert _stored_packed() is None
    monkeypatch.setattr(kept_wild_tables, "SOURCE", "00000000-0")
    assert _stored_packed("PACKED_WILD", "kept_wild_tables") is None
    monkeypatch.setattr(suit_tables, "_PACKED_WILD", None)
    assert suit_tables._read_packed_wild() == {}  # the wild cards' tables then worked out
    monkeypatch.undo()
    monkeypatch.setattr(kept_tables, "DATA", kept_tables.DATA[:-40])
    assert _stored_kept() is None
    monkeypatch.setattr(kept_tables, "DATA", "!!")
    assert _stored_kept() is None


def test_without_the_file_the_tables_are_worked_out(monkeypatch):
    monkeypatch.setattr(suit_tables, "_stored_kept", lambda: None)
    monkeypatch.setattr(suit_tables, "_SMALL", {})
    monkeypatch.setattr(suit_tables, "_SMALL_SPLITS", {})
    monkeypatch.setattr(suit_tables, "_SMALL_WILD", {})
    monkeypatch.setattr(suit_tables, "_PACKED", {})
    monkeypatch.setattr(suit_tables, "_PACKED_WILD", {})
    suit_tables._small_suits()
    small, splits, wild = _build_kept()
    assert small == suit_tables._SMALL and splits == suit_tables._SMALL_SPLITS
    assert wild == suit_tables._SMALL_WILD


def test_write_kept_writes_what_is_read(tmp_path):
    path = write_kept(str(tmp_path / "kept.py"), str(tmp_path / "kept_wild.py"))
    spec = importlib.util.spec_from_file_location("kept_copy", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.SOURCE == kept_tables.SOURCE
    data = marshal.loads(zlib.decompress(binascii.a2b_base64(module.DATA)))
    assert data == _build_kept()
    codes, tables, preset = _packed_strings(_packed_tables())
    assert "".join(tables) == module.PACKED
    assert suit_tables._packed_index(module.PACKED_INDEX) == (codes, suit_tables._ends(tables))
    assert binascii.a2b_base64(module.PACKED_PRESET) == preset
    spec = importlib.util.spec_from_file_location("kept_wild_copy", tmp_path / "kept_wild.py")
    wild = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(wild)
    assert wild.SOURCE == kept_tables.SOURCE
    codes, tables, preset = _packed_strings(_packed_wild_tables())
    assert "".join(tables) == wild.PACKED_WILD
    assert suit_tables._packed_index(wild.PACKED_WILD_INDEX) == (codes, suit_tables._ends(tables))
    assert binascii.a2b_base64(wild.PACKED_WILD_PRESET) == preset


def _every_packed() -> dict[int, bytes]:
    return _stored_packed().each()


def test_the_stored_larger_tables_are_the_tables_worked_out():
    """The larger suits' tables (five cards holding one twice, six cards) as stored are
    exactly what _packed_tables works out, every suit of those sizes is there, and the
    module reads them."""
    stored = _every_packed()
    assert stored == _packed_tables()
    assert len(stored) == 3_718 + 12_727  # five cards, one twice or two; six cards
    packed = suit_tables._PACKED
    assert (packed.codes, packed.ends) == suit_tables._packed_index(kept_tables.PACKED_INDEX)
    code = sorted(stored)[len(stored) // 2]
    assert packed.get(code) == marshal.loads(stored[code])
    assert packed.get(code + (1 << 4 * 13)) is None  # seven cards: not kept


def test_a_larger_table_is_the_table_worked_out_afresh(monkeypatch):
    """Within every budget it is kept for, a stored table is the very table (entries, order,
    witnesses: they decide the grouping a settlement records) that the search works out for
    that budget from empty caches, and suit_table serves it."""
    stored = _every_packed()
    rng = random.Random(3303)
    for code in rng.sample(sorted(stored), 250):
        tables = marshal.loads(stored[code])
        assert len(tables) == SMALL_BUDGET + 1
        for budget, table in enumerate(tables):
            suit_tables.clear_caches()
            served = suit_table(code, 0, budget)
            with monkeypatch.context() as patch:
                patch.setattr(suit_tables, "_PACKED", {})
                patch.setattr(suit_tables, "_PACKED_WILD", {})
                suit_tables.clear_caches()
                fresh = suit_table(code, 0, budget)
            assert table == fresh, (hex(code), budget)
            assert served == fresh, (hex(code), budget)
    suit_tables.clear_caches()


def _kept_wild():
    return _stored_packed("PACKED_WILD", "kept_wild_tables")


def test_the_stored_wild_tables_are_the_tables_worked_out_afresh(monkeypatch):
    """The larger suits' tables beside a wild card: every suit of five cards holding a card
    twice and of six cards, at every place a wild card makes a sequence of three, is
    stored; within each budget a stored table is the very table the work finds for that
    budget from empty caches, and suit_table serves it."""
    stored = _kept_wild()
    assert len(stored.codes) == len(_packed_wild_tables())  # every suit, every place
    rng = random.Random(3304)
    for key in rng.sample(stored.codes, 250):
        code, places = key & ((1 << 64) - 1), key >> 64
        assert places in suit_tables._wild_places(code)
        tables = stored.get(key)
        assert len(tables) == SMALL_BUDGET + 1
        for budget, table in enumerate(tables):
            suit_tables.clear_caches()
            served = suit_table(code, places, budget)
            with monkeypatch.context() as patch:
                patch.setattr(suit_tables, "_PACKED_WILD", {})
                suit_tables.clear_caches()
                fresh = suit_table(code, places, budget)
            assert table == fresh, (hex(code), hex(places), budget)
            assert served == table, (hex(code), hex(places), budget)
    suit_tables.clear_caches()


def test_a_stored_wild_table_serves_only_where_the_caches_hold_what_the_work_would_use(
    monkeypatch,
):
    """Worked out in a process whose caches hold the suit's own table for more jokers, a
    wild card's table may name its sequences in another order than the one stored (worked
    out from empty caches); suit_table then works it out, as before, so the grouping shown
    does not depend on the stored tables."""
    code = 2 << 4 * 2 | 1 << 4 * 3 | 1 << 4 * 4 | 1 << 4 * 8  # 2 2 3 4 8 of a suit
    places = 1 << 4  # Aces wild
    stored = _kept_wild().get(code | places << 64)

    def within(table, budget):
        return [entry for entry in table if entry[0] <= budget]

    suit_tables.clear_caches()
    suit_table(code, 0, 3)  # the suit's own table, worked out for three jokers
    served = suit_table(code, places, 2)
    with monkeypatch.context() as patch:
        patch.setattr(suit_tables, "_PACKED_WILD", {})
        suit_tables.clear_caches()
        suit_table(code, 0, 3)
        worked = suit_table(code, places, 2)
    assert within(worked, 2) != within(stored[2], 2)  # the case this test is about
    assert served == worked
    suit_tables.clear_caches()
