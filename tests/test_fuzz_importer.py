"""Fuzzing the importer with random and mutated records: every record is stored whole or not
at all, a rejected record says what and where, and the games already stored never change."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from fuzz_support import (
    FUZZ_SETTINGS,
    assert_untouched,
    mutated_lines,
    red3_records,
    sample_records,
    store_fingerprint,
)
from hypothesis import event, given
from hypothesis import strategies as st

from replays.records.codec import parse_record
from replays.records.importer import build_game, import_lines
from web.cli import main

RECORDS = sample_records() + red3_records()


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    from web_support import load_games

    from replays.store.application import Ledger

    url = f"sqlite:///{tmp_path_factory.mktemp('fuzz-import') / 'ledger.sqlite3'}"
    load_games(url, RECORDS)
    return url, Ledger(url)


def events_of(line: str) -> int | None:
    """How many events the record makes when built in memory (None: it is rejected)."""
    try:
        return len(build_game(parse_record(line)).collect_events())
    except Exception:
        return None


def check_outcomes(summary, lines: list[str]) -> None:
    assert summary.imported + summary.already + summary.rejected == sum(
        1 for line in lines if line.strip()
    )
    for failure in summary.failures:
        assert isinstance(failure.reason, str) and failure.reason.strip()
        assert "Traceback" not in failure.message
        name = failure.game_id or f"line {failure.line}"
        assert failure.message.startswith(name)


@FUZZ_SETTINGS
@given(line=mutated_lines(RECORDS))
def test_a_mutated_record_is_stored_whole_or_not_at_all(store, line):
    url, ledger = store
    before = store_fingerprint(url)
    summary = import_lines(ledger, [line], follow=False)
    after = store_fingerprint(url)
    assert_untouched(before, after)
    check_outcomes(summary, [line])
    new = set(after) - set(before)
    event("imported" if summary.imported else "already" if summary.already else "rejected")
    if summary.imported:
        (added,) = new
        assert after[added][0] == events_of(line), "a partly stored game"
    else:
        assert not new, f"stored something for a record that was not imported: {summary.line()}"


@FUZZ_SETTINGS
@given(lines=st.lists(mutated_lines(RECORDS), min_size=2, max_size=6))
def test_batches_of_mutated_records(store, lines):
    """One save per batch: a bad or conflicting record must not take the others down, nor
    leave any of them half stored."""
    url, ledger = store
    before = store_fingerprint(url)
    summary = import_lines(ledger, lines, batch=3, follow=False)
    after = store_fingerprint(url)
    assert_untouched(before, after)
    check_outcomes(summary, lines)
    new = set(after) - set(before)
    assert len(new) == summary.imported
    whole = {events_of(line) for line in lines} - {None}
    for key in new:
        assert after[key][0] in whole, "a partly stored game"


@FUZZ_SETTINGS
@given(
    lines=st.lists(mutated_lines(RECORDS, fresh_ids=False), min_size=1, max_size=4),
)
def test_import_command_never_shows_a_traceback(store, lines, tmp_path_factory, monkeypatch):
    url, _ledger = store
    monkeypatch.setenv("RUMMY_LEDGER_DATABASE_URL", url)
    path = tmp_path_factory.mktemp("lines") / "records.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    before = store_fingerprint(url)
    result = CliRunner().invoke(main, ["import", str(path)])
    assert result.exit_code in (0, 1), result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert_untouched(before, store_fingerprint(url))


def test_hostile_json_lines_are_rejected_cleanly(store):
    url, ledger = store
    before = store_fingerprint(url)
    lines = [
        "[" * 50_000 + "]" * 50_000,
        '{"game_id": "' + "x" * 100_000 + '"}',
        json.dumps({"game_id": "FZ-big", "moves": [{"type": "pick"}] * 5_000}),
        "\x00\x01\x02",
        '{"game_id": "FZ-nan", "players": NaN}',
    ]
    summary = import_lines(ledger, lines, follow=False)
    assert summary.rejected == len(lines) and summary.imported == 0
    check_outcomes(summary, lines)
    assert store_fingerprint(url) == before
