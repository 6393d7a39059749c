"""How event and snapshot state becomes bytes in the store.

:class:`OrjsonTranscoder` writes the same JSON as eventsourcing's ``JSONTranscoder``
(custom values as ``{"_type_": name, "_data_": ...}``) but encodes with orjson, which made
appends about a quarter faster (EVENTSOURCING.md). Game events carry only JSON values
(cards as text such as ``"9C"``), so in practice only the library's ``timestamp`` and
snapshots' state use the ``_type_`` envelope.

>>> from domain.cards import Card
>>> transcoder = ledger_transcoder()
>>> data = transcoder.encode({"card": Card.parse("TH"), "cards": ["AS", "JK"]})
>>> data
b'{"card":{"_type_":"card","_data_":"TH"},"cards":["AS","JK"]}'
>>> transcoder.decode(data)
{'card': Card('TH'), 'cards': ['AS', 'JK']}
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson
from eventsourcing.persistence import (
    DatetimeAsISO,
    DecimalAsStr,
    JSONTranscoder,
    Mapper,
    StoredEvent,
    Transcoding,
    TranscodingNotRegisteredError,
    UUIDAsHex,
)
from eventsourcing.utils import get_topic

from domain.cards import ALL_CARDS, Card
from domain.rummy13.table import TableConfig
from domain.timestamps import utc_z_text
from replays.store.decoding import check_state_topics, event_class

# Datetimes and dataclasses must reach `default` (and so the `_type_` envelope): orjson
# would otherwise write them as plain strings/objects that decode as something else.
_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


class CardAsText(Transcoding):
    type = Card
    name = "card"

    def encode(self, obj: Card) -> str:
        return str(obj)

    def decode(self, data: str) -> Card:
        return Card.parse(data)


class TableConfigAsDict(Transcoding):
    type = TableConfig
    name = "table_config"

    def encode(self, obj: TableConfig) -> dict:
        return obj.to_dict()

    def decode(self, data: dict) -> TableConfig:
        return TableConfig.from_dict(data)


class OrjsonTranscoder(JSONTranscoder):
    """``JSONTranscoder``'s format with orjson underneath.

    Note: orjson writes ``uuid.UUID`` and ``datetime.date`` natively as strings, so those
    decode as strings; keep UUIDs and bare dates out of event state (game events have none).
    """

    def __init__(self) -> None:
        super().__init__()
        self._default = self._envelopes()

    def register(self, transcoding: Transcoding) -> None:
        super().register(transcoding)
        self._default = self._envelopes()  # a card's envelope follows the transcoding now

    def encode(self, obj: Any) -> bytes:
        return orjson.dumps(obj, default=self._default, option=_OPTIONS)

    def _envelopes(self) -> Callable[[Any], Any]:
        """The callback orjson is given for the values it cannot write: their envelopes
        (``_encode_obj``). A snapshot holds a hundred cards or so: the 53 interned cards'
        envelopes are made once and found by id() (a Card's hash is Python code; the
        interned cards live as long as the program, so no other object takes their ids)."""
        encode = self._encode_obj
        if Card not in self.types:
            return encode
        cards = {id(card): encode(card) for card in ALL_CARDS}.get

        def default(obj: Any) -> Any:
            return cards(id(obj)) or encode(obj)

        return default

    def decode(self, data: bytes) -> Any:
        value = orjson.loads(data)
        # A key "_type_" cannot hide inside a JSON string (its quotes would be escaped), so
        # counting the bytes tells how many envelopes there are. Most events have exactly
        # one, the library's top-level timestamp: revive just that.
        envelopes = data.count(b'"_type_":')
        if envelopes == 0:
            return value
        if envelopes == 1 and type(value) is dict:
            for key, item in value.items():
                if type(item) is dict and len(item) == 2 and "_type_" in item:
                    if "_data_" in item and type(item["_data_"]) not in (dict, list):
                        # What _revive does with it, without its walk over the two keys;
                        # a name that is not text, or not registered, goes through it.
                        name = item["_type_"]
                        found = self.names.get(name) if type(name) is str else None
                        if found is None:
                            value[key] = self._revive(item)
                        else:
                            value[key] = found.decode(item["_data_"])
                        return value
                    break
        return self._revive(value)

    def _revive(self, value: Any) -> Any:
        """Turn ``_type_`` envelopes back into values, innermost first (as object_hook does)."""
        kind = type(value)
        if kind is dict:
            for key, item in value.items():
                if type(item) is dict or type(item) is list:
                    value[key] = self._revive(item)
            if len(value) == 2 and "_type_" in value and "_data_" in value:
                try:
                    transcoding = self.names[value["_type_"]]
                except KeyError:
                    raise TranscodingNotRegisteredError(
                        f"Data serialized with name '{value['_type_']}' is not "
                        "deserializable. Please register a custom transcoding for this type."
                    ) from None
                return transcoding.decode(value["_data_"])
        elif kind is list:
            for index, item in enumerate(value):
                if type(item) is dict or type(item) is list:
                    value[index] = self._revive(item)
        return value


class LedgerMapper(Mapper):
    """The library's mapper, writing the same bytes faster.

    Every event carries the library's ``timestamp``; wrapping it here, in the envelope the
    ``datetime_iso`` transcoding would produce, spares orjson a Python callback per event.
    What a class contributes (its topic, its ``class_version``) is looked up once per
    class. (Keeping the timestamps' envelopes did not pay: nearly every event has its own.)
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._classes: dict[type, tuple[str, int]] = {}

    def to_stored_event(self, domain_event: Any) -> StoredEvent:
        event_class = type(domain_event)
        known = self._classes.get(event_class)
        if known is None:
            known = self._classes[event_class] = (
                get_topic(event_class),
                getattr(event_class, "class_version", 1),
            )
        topic, class_version = known
        state = dict(domain_event.__dict__)
        originator_id = state.pop("originator_id")
        originator_version = state.pop("originator_version")
        if class_version > 1:
            state["class_version"] = class_version
        timestamp = state.get("timestamp")
        if type(timestamp) is datetime:
            if timestamp.tzinfo is UTC:
                # isoformat's text of a UTC time, from the text the event's own ``at`` was
                # written with moments ago (the same digits, then the offset).
                iso = utc_z_text(timestamp)[:-1] + "+00:00"
            else:
                iso = timestamp.isoformat()
            state["timestamp"] = {"_type_": "datetime_iso", "_data_": iso}
        data = self.transcoder.encode(state)
        if self.compressor:
            data = self.compressor.compress(data)
        if self.cipher:
            data = self.cipher.encrypt(data)
        return stored_event(originator_id, originator_version, topic, data)

    def to_domain_event(self, stored: StoredEvent) -> Any:
        """The library's decoding, once the topic is known to be one of the ledger's own
        events (:mod:`replays.store.decoding`): the library would import whatever module a
        stored topic names. A snapshot's state names its aggregate's class the same way, and
        a game's first event the class it creates (:func:`check_state_topics`)."""
        event_class(stored.topic, version=stored.originator_version)
        domain_event = super().to_domain_event(stored)
        check_state_topics(domain_event.__dict__, version=stored.originator_version)
        return domain_event


_new = object.__new__


def stored_event(originator_id: Any, originator_version: int, topic: str, state: bytes) -> Any:
    """A ``StoredEvent`` equal to the one its constructor makes, made without the frozen
    dataclass's four ``object.__setattr__`` calls (a third of the cost of a small event's
    mapping); the fields go straight into the instance's ``__dict__``."""
    made = _new(StoredEvent)
    fields = made.__dict__
    fields["originator_id"] = originator_id
    fields["originator_version"] = originator_version
    fields["topic"] = topic
    fields["state"] = state
    return made


def register_ledger_transcodings(transcoder: JSONTranscoder) -> None:
    """The value types a game's events and snapshots hold, beyond plain JSON."""
    for transcoding in (
        UUIDAsHex(),
        DecimalAsStr(),
        DatetimeAsISO(),
        CardAsText(),
        TableConfigAsDict(),
    ):
        transcoder.register(transcoding)


def ledger_transcoder() -> OrjsonTranscoder:
    transcoder = OrjsonTranscoder()
    register_ledger_transcodings(transcoder)
    return transcoder
