"""Times in records: ISO-8601 UTC text in, aware datetimes inside, ``...Z`` text out.

>>> parse_time("2025-03-01T18:04:05Z")
datetime.datetime(2025, 3, 1, 18, 4, 5, tzinfo=datetime.timezone.utc)
>>> format_time(parse_time("2025-03-01T23:34:05+05:30"))
'2025-03-01T18:04:05Z'
"""

from __future__ import annotations

from datetime import UTC, datetime


def parse_time(value: str | datetime | None, *, what: str = "time") -> datetime | None:
    """An aware UTC datetime from ISO-8601 text (naive times are taken as UTC)."""
    if value is None or isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip())
        except ValueError:
            raise ValueError(f"{what} {value!r} is not an ISO-8601 time") from None
    else:
        raise ValueError(f"{what} {value!r} is not an ISO-8601 time")
    if moment is None:
        return None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def utc_text(value: object) -> datetime | None:
    """``value`` read as it is when it is UTC text (``...Z``, ``+00:00``), which is already
    :func:`parse_time`'s answer; None for anything else (an offset, no zone, spaces around,
    not text, not a time), which :func:`parse_time` reads or refuses. Nearly every move's
    time is UTC text: the import and the projection read it once a move."""
    if type(value) is not str:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo is UTC else None


def format_time(moment: datetime | None) -> str | None:
    """``2025-03-01T18:04:05Z`` (microseconds only when present)."""
    if moment is None:
        return None
    moment = parse_time(moment)
    text = moment.replace(tzinfo=None).isoformat()
    return text + "Z"
