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
