"""Times in records: ISO-8601 UTC text in, aware datetimes inside, ``...Z`` text out.

>>> parse_time("2025-03-01T18:04:05Z")
datetime.datetime(2025, 3, 1, 18, 4, 5, tzinfo=datetime.timezone.utc)
>>> format_time(parse_time("2025-03-01T23:34:05+05:30"))
'2025-03-01T18:04:05Z'
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from itertools import islice


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


def utc_text(value: object, *, keep: bool = False) -> datetime | None:
    """``value`` read as it is when it is UTC text (``...Z``, ``+00:00``), which is already
    :func:`parse_time`'s answer; None for anything else (an offset, no zone, spaces around,
    not text, not a time), which :func:`parse_time` reads or refuses. Nearly every move's
    time is UTC text: the import and the projection read it once a move. ``keep``: a text
    in :func:`format_time`'s form is remembered as the moment's (:func:`utc_z_text`)."""
    if type(value) is not str:
        return None
    moment = _MOMENTS.get(value)
    if moment is not None:
        return moment
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is not UTC:
        return None
    # Text already in format_time's form is the moment's text: remembered, it is not
    # formatted again when the move's event, stored event and row are written.
    if keep and (len(value) == 20 or moment.microsecond) and z_text(value) is not None:
        _remember(moment, value)
    return moment


def z_text(value: object) -> str | None:
    """``value`` itself when it is a time's text in :func:`format_time`'s form (``...Z``,
    microseconds as six digits or none) that :func:`parse_time` reads (its fields in
    range); None for anything else. ``verify`` keeps such a move time as its text: the
    read row's stored form is made from it without a datetime (``replays.readmodels``)."""
    if type(value) is not str:
        return None
    try:
        if value.encode().translate(_ZEROED) not in _Z_SHAPES:
            return None
        datetime.fromisoformat(value)  # no 30 February, no hour 24
    except ValueError:  # a lone surrogate, which UTF-8 cannot hold, too
        return None
    return value


def z_text_or_time(value: object) -> object:
    """``value`` kept as its text when :func:`z_text` keeps it, else read by
    :func:`parse_time` (the same time, or the same error): how ``verify`` reads every
    move's time."""
    return z_text(value) or parse_time(value)


# A move's time is written out three times on its way in (the event's ``at``, the stored
# event's timestamp, the read model's row) and ``isoformat`` costs about as much as the
# rest of a small event's encoding (a C ``%``-format per call); the text of a moment is
# kept for the moments of a batch of saves. A forgotten entry only costs time.
_Z_TEXTS: dict[datetime, str] = {}
# The other way round: a remembered text's moment. A move's time is read again from its
# event's ``at`` for the read model's row; the same moment object comes back (no second
# parse), and its hash, cached in it, is not worked out again when its text is looked up.
_MOMENTS: dict[str, datetime] = {}
# ``verify`` reads a move's time for its row and looks its text up again when it compares
# the batch's rows (up to 20,000 events later): when full, the older half of each memo
# is forgotten, not all of it, so the batch's own moments stay. Clearing both at 16,384
# made a store of 1,000 games (some 20,000 moments) parse most of them again on every
# pass (2.5 % of verify's time). About 8 MB at most.
_Z_TEXTS_MAX = 1 << 15
# format_time's text: seconds always, microseconds (six digits) only when not zero. A
# text is in that form when its UTF-8 bytes, each ASCII digit read as 0, are one of these
# shapes: the same texts as the regular expression
# ``[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{6})?Z``, at a third of
# its cost (verify asks it of every move's time).
_Z_SHAPES = (b"0000-00-00T00:00:00Z", b"0000-00-00T00:00:00.000000Z")
_ZEROED = bytes.maketrans(b"123456789", b"000000000")


def _remember(moment: datetime, text: str) -> None:
    if len(_Z_TEXTS) >= _Z_TEXTS_MAX or len(_MOMENTS) >= _Z_TEXTS_MAX:
        _forget_older_half(_Z_TEXTS)
        _forget_older_half(_MOMENTS)
    _Z_TEXTS[moment] = text
    if type(moment) is datetime and moment.tzinfo is UTC and not moment.fold:
        # Only what ``fromisoformat`` would give for the text (an equal time in another
        # zone is not): utc_text hands it out as its answer.
        _MOMENTS[text] = moment


def _forget_older_half(memo: dict) -> None:
    """Drop the first half of ``memo``'s entries (a dict keeps insertion order)."""
    for key in list(islice(memo, len(memo) // 2)):
        del memo[key]


def utc_z_text(moment: datetime) -> str:
    """:func:`format_time` of an aware UTC datetime (``2025-03-01T18:04:05Z``,
    microseconds only when present), remembered per moment. Equal moments have one text
    (aware datetimes compare by instant, and the text is the instant's in UTC)."""
    text = _Z_TEXTS.get(moment)
    if text is None:
        zone = moment.tzinfo
        if zone is None:
            raise ValueError(f"{moment} has no time zone: parse_time it first")
        text = _z_text(moment if zone is UTC else moment.astimezone(UTC))
        _remember(moment, text)
    return text


def format_time(moment: datetime | None) -> str | None:
    """``2025-03-01T18:04:05Z`` (microseconds only when present)."""
    if moment is None:
        return None
    if type(moment) is datetime and moment.tzinfo is UTC:
        # A UTC moment (every move read from a record or a stored game): its text as
        # remembered when it was read, not formatted again (the same text).
        return utc_z_text(moment)
    return _z_text(parse_time(moment))


def _z_text(utc: datetime) -> str:
    """The text of an aware UTC datetime: ISO-8601 without the offset, then ``Z``."""
    return utc.replace(tzinfo=None).isoformat() + "Z"


# -- days asked for (a period's first and last day, typed by a person) ------------------------
def after_day(day: date) -> datetime | None:
    """The first moment after ``day`` (the next day's UTC midnight), to bound a period that
    ends with ``day``; None after the last day a date can hold (9999-12-31), which nothing
    follows.

    >>> after_day(date(2025, 3, 31)), after_day(date.max)
    (datetime.datetime(2025, 4, 1, 0, 0, tzinfo=datetime.timezone.utc), None)
    """
    if day == date.max:
        return None
    return datetime.combine(date.fromordinal(day.toordinal() + 1), time.min, tzinfo=UTC)


def days_before(day: date, days: int) -> date:
    """``day`` less ``days`` days, or the first day a date can hold (0001-01-01) if that is
    earlier: the default start of a period that ends with ``day``.

    >>> days_before(date(2025, 3, 31), 30), days_before(date(1, 1, 15), 30)
    (datetime.date(2025, 3, 1), datetime.date(1, 1, 1))
    """
    return date.fromordinal(max(1, day.toordinal() - days))
