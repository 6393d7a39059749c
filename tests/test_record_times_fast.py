"""A record's times are read as they are when written in UTC (the import's fast path,
``domain.timestamps.utc_text``): the value must be parse_time's, in every
spelling, zone and offset, and whatever parse_time refuses stays refused."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from domain.record_schema.common import Timestamp
from domain.timestamps import parse_time

_TIME = TypeAdapter(Timestamp)

moments = st.datetimes(min_value=datetime(1969, 12, 30), max_value=datetime(2100, 1, 2))
offsets = st.sampled_from([None, 0, 1, -1, 330, -330, 720, -720]).map(
    lambda minutes: None if minutes is None else timezone(timedelta(minutes=minutes))
)
spellings = st.sampled_from(["iso", "z", "space", "padded", "basic", "seconds"])


def spelled(moment: datetime, zone, how: str) -> str:
    moment = moment.replace(tzinfo=zone)
    if how == "seconds":
        text = moment.isoformat(timespec="seconds")
    elif how == "basic":
        text = moment.strftime("%Y%m%dT%H%M%S") + ("Z" if zone is not None else "")
    else:
        text = moment.isoformat(sep=" " if how == "space" else "T")
    if how == "z" and text.endswith("+00:00"):
        text = text[: -len("+00:00")] + "Z"
    return f" {text} " if how == "padded" else text


def reference(text: str) -> datetime | None:
    try:
        moment = parse_time(text)
    except ValueError:
        return None
    return (
        moment
        if datetime(1970, 1, 1, tzinfo=UTC) <= moment < datetime(2100, 1, 1, tzinfo=UTC)
        else None
    )


@settings(max_examples=400, deadline=None)
@given(moments, offsets, spellings)
def test_a_time_reads_as_parse_time_reads_it(moment: datetime, zone, how: str) -> None:
    text = spelled(moment, zone, how)
    expected = reference(text)
    if expected is None:
        with pytest.raises(ValidationError):
            _TIME.validate_python(text)
        return
    read = _TIME.validate_python(text)
    assert read == expected and read.tzinfo is expected.tzinfo is UTC
    assert read.isoformat() == expected.isoformat()


@pytest.mark.parametrize("text", ["", "soon", "2025-13-01T00:00:00Z", "2025-03-01T18:04:05+25:00"])
def test_what_is_no_time_stays_refused(text: str) -> None:
    with pytest.raises(ValidationError):
        _TIME.validate_python(text)


@settings(max_examples=400, deadline=None)
@given(moments, offsets, spellings)
def test_a_times_remembered_text_is_format_times(moment: datetime, zone, how: str) -> None:
    """The text ``utc_z_text`` gives (remembered from a record's own text when that is
    already in format_time's form, else formatted) is format_time's, in every spelling."""
    from domain import timestamps

    text = spelled(moment, zone, how)
    expected = reference(text)
    if expected is None:
        return
    timestamps._Z_TEXTS.clear()
    read = _TIME.validate_python(text)
    assert timestamps.utc_z_text(read) == timestamps.format_time(expected)
    assert timestamps.utc_z_text(expected) == timestamps.format_time(expected)
    timestamps._Z_TEXTS.clear()
    assert timestamps.utc_z_text(read) == timestamps.format_time(expected)


@pytest.mark.parametrize(
    "text",
    [
        "2025-03-01T18:04:05Z",
        "2025-03-01T18:04:05.000000Z",
        "2025-03-01T18:04:05.120000Z",
        "2025-03-01T18:04:05.12Z",
        "2025-03-01T18:04:05+00:00",
        "2025-03-01 18:04:05Z",
        "2025-W09-6T18:04:05Z",
        "20250301T180405Z",
    ],
)
def test_only_format_times_own_text_is_kept_as_it_is(text: str) -> None:
    from domain import timestamps

    timestamps._Z_TEXTS.clear()
    moment = timestamps.utc_text(text, keep=True)
    assert moment is not None
    assert timestamps.utc_z_text(moment) == timestamps.format_time(moment)
    assert (text in timestamps._Z_TEXTS.values()) == (text == timestamps.format_time(moment))


@settings(max_examples=400, deadline=None)
@given(moments, offsets, st.booleans(), st.booleans())
def test_a_remembered_moment_is_handed_back_only_as_fromisoformat_reads_its_text(
    moment: datetime, zone, fold: bool, through_record: bool
) -> None:
    """``utc_text`` answers a remembered text with the moment remembered for it: that must
    be exactly ``fromisoformat``'s reading of the text (UTC, the same instant and fields,
    no fold), whatever zone or fold the moment was remembered from, or not come back."""
    from domain import timestamps

    if zone is None:
        zone = UTC
    remembered = moment.replace(tzinfo=zone, fold=int(fold))
    if not datetime(1970, 1, 2, tzinfo=UTC) <= remembered < datetime(2099, 12, 31, tzinfo=UTC):
        return
    timestamps._Z_TEXTS.clear()
    timestamps._MOMENTS.clear()
    text = timestamps.format_time(remembered)
    if through_record and zone is UTC:
        timestamps.utc_text(text, keep=True)
    timestamps.utc_z_text(remembered)
    read = timestamps.utc_text(text)
    fresh = datetime.fromisoformat(text)
    assert read == fresh and read.tzinfo is UTC and read.fold == 0
    assert read.isoformat() == fresh.isoformat()
    assert _TIME.validate_python(text).isoformat() == fresh.isoformat()


def test_a_full_memo_forgets_its_older_half_and_keeps_the_recent_moments(monkeypatch) -> None:
    """Past its size, the memo drops its oldest entries only: a batch's own moments, just
    read, are still found when its rows are compared (verify), and every text stays
    format_time's."""
    from domain import timestamps

    monkeypatch.setattr(timestamps, "_Z_TEXTS_MAX", 8)
    timestamps._Z_TEXTS.clear()
    timestamps._MOMENTS.clear()
    texts = [f"2025-03-01T18:04:{second:02d}Z" for second in range(20)]
    moments = [timestamps.utc_text(text, keep=True) for text in texts]
    assert len(timestamps._Z_TEXTS) <= 8 and len(timestamps._MOMENTS) <= 8
    assert list(timestamps._MOMENTS)[-4:] == texts[-4:]
    assert all(
        timestamps._Z_TEXTS[moment] == text
        for moment, text in zip(moments[-4:], texts[-4:], strict=True)
    )
    assert [timestamps.utc_z_text(moment) for moment in moments] == texts
    timestamps._Z_TEXTS.clear()
    timestamps._MOMENTS.clear()
