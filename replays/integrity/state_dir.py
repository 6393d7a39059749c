"""The auditor's state directory for ``rummy-ledger verify --since`` (docs/integrity.md §6,
"Day by day").

The directory is the auditor's, not the server's: it holds what the last run verified, so
the next run can tell what is new from what was already checked. Two files:

- ``state.json``: format ``rummy-ledger/verify-state@1``; the tree head the last run proved
  (``size``, ``root``, and the signed checkpoint it came from), when it ran, a digest of the stored tree nodes below that size,
  and per game the digests of its stored events (with their seals and chain head), its
  snapshots and its read rows as last verified, and its last tree position;
- ``checkpoint.json``: a copy of that signed checkpoint, for the next run's ``--since``.

Both are written to a temporary file in the directory and renamed over the old one, so a
run that stops half way leaves the previous state whole.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STATE_FORMAT = "rummy-ledger/verify-state@1"
STATE_FILE = "state.json"
CHECKPOINT_FILE = "checkpoint.json"


class StateError(ValueError):
    """A state directory or file that cannot be used; the message says which and why."""


@dataclass(frozen=True)
class GameState:
    """One game as last verified: its digests (hex) and last tree position."""

    events: str
    snapshots: str
    rows: str
    last_position: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "events": self.events,
            "snapshots": self.snapshots,
            "rows": self.rows,
            "last_position": self.last_position,
        }


@dataclass
class VerifyState:
    size: int
    root: bytes
    time: str
    nodes: str
    games: dict[str, GameState] = field(default_factory=dict)
    checkpoint: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": STATE_FORMAT,
            "size": self.size,
            "root": self.root.hex(),
            "time": self.time,
            "nodes": self.nodes,
            "checkpoint": self.checkpoint,
            "games": {g: s.to_dict() for g, s in sorted(self.games.items())},
        }

    @classmethod
    def from_dict(cls, data: Any, where: str) -> VerifyState:
        if not isinstance(data, dict):
            raise StateError(f"{where}: a state file is a JSON object")
        if data.get("format") != STATE_FORMAT:
            raise StateError(
                f"{where}: format must be {STATE_FORMAT!r}, got {data.get('format')!r} "
                "(written by another version: run `verify --since` with a new state directory)"
            )
        try:
            games = {
                str(game): GameState(
                    _hex(state["events"], f"{where}: games.{game}.events"),
                    _hex(state["snapshots"], f"{where}: games.{game}.snapshots"),
                    _hex(state["rows"], f"{where}: games.{game}.rows"),
                    _int(state["last_position"], f"{where}: games.{game}.last_position", -1),
                )
                for game, state in _dict(data.get("games"), f"{where}: games").items()
            }
            return cls(
                _int(data.get("size"), f"{where}: size", 0),
                bytes.fromhex(_hex(data.get("root"), f"{where}: root")),
                str(data.get("time")),
                _hex(data.get("nodes"), f"{where}: nodes"),
                games,
                _dict(data.get("checkpoint"), f"{where}: checkpoint"),
            )
        except (KeyError, TypeError) as error:
            raise StateError(f"{where}: a game's entry lacks {error}") from None


def _dict(value: Any, where: str) -> dict:
    if not isinstance(value, dict):
        raise StateError(f"{where} must be an object")
    return value


def _hex(value: Any, where: str) -> str:
    if not isinstance(value, str) or len(value) != 64:
        raise StateError(f"{where} must be 64 hex digits, got {value!r}")
    try:
        bytes.fromhex(value)
    except ValueError:
        raise StateError(f"{where} must be 64 hex digits, got {value!r}") from None
    return value


def _int(value: Any, where: str, least: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        raise StateError(f"{where} must be an integer of at least {least}, got {value!r}")
    return value


def load_state(directory: str | os.PathLike) -> VerifyState | None:
    """The state kept in ``directory``, or None when it holds none yet (a first run)."""
    path = Path(directory) / STATE_FILE
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise StateError(f"cannot read {path}: {error.strerror}") from None
    try:
        data = json.loads(text)
    except ValueError as error:
        raise StateError(f"{path} is not JSON: {error}") from None
    return VerifyState.from_dict(data, str(path))


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same directory and a
    rename: a reader sees the old file or the new one, never half of one."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def save_state(directory: str | os.PathLike, state: VerifyState, checkpoint_json: str) -> None:
    """The state (which carries its checkpoint), then the checkpoint's copy: a run stopped
    between the two leaves the new state whole, its checkpoint inside it."""
    where = Path(directory)
    try:
        where.mkdir(parents=True, exist_ok=True)
        write_atomically(where / STATE_FILE, json.dumps(state.to_dict(), indent=1) + "\n")
        write_atomically(where / CHECKPOINT_FILE, checkpoint_json)
    except OSError as error:
        raise StateError(f"cannot write the state to {where}: {error.strerror}") from None
