"""Ed25519 signing keys and signed tree heads (checkpoints).

A checkpoint says "the ledger's Merkle tree had ``size`` leaves and this ``root`` at
``time``", signed with the ledger's Ed25519 key. Auditors keep checkpoint files outside
the system; with the public key alone they can check them, and proofs against them.

The signed message is UTF-8 text, five lines, each ending in ``\\n``::

    rummy-ledger/checkpoint@1
    <size in decimal>
    <root, 64 lowercase hex digits>
    <time, YYYY-MM-DDTHH:MM:SSZ in UTC>
    <key id>

The key id is the first 16 hex digits of SHA-256 of the raw 32-byte public key. The
checkpoint file is JSON: ``{"format", "size", "root", "time", "key_id", "signature"}``
with the signature as 128 hex digits, and optionally ``blocks``: subtree hashes bound to
the signed root by the tree itself (:mod:`replays.integrity.checkpoint_blocks`), which let a kept
file locate a rewrite.

Keys live in ``RUMMY_LEDGER_KEY_DIR`` (default ``./keys``): ``signing-key.pem`` (PKCS#8,
mode 0600) and ``signing-key.pub`` (SubjectPublicKeyInfo PEM). A public key may also be
given as a file holding the raw key in 64 hex digits.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from replays.integrity.checkpoint_blocks import Blocks, BlocksError

CHECKPOINT_FORMAT = "rummy-ledger/checkpoint@1"
PRIVATE_KEY_FILE = "signing-key.pem"
PUBLIC_KEY_FILE = "signing-key.pub"
MEMO_KEY_FILE = "memo-key"  # signs remembered replays (replays/integrity/replay_memos.py)
DEFAULT_KEY_DIR = "keys"
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\Z")
_HEX64 = re.compile(r"[0-9a-f]{64}\Z")


class SigningError(Exception):
    """A key or checkpoint that cannot be used; the message says which file and why."""


def key_dir(directory: str | os.PathLike | None = None) -> Path:
    return Path(directory or os.environ.get("RUMMY_LEDGER_KEY_DIR") or DEFAULT_KEY_DIR)


def raw_public_bytes(public_key: Ed25519PublicKey) -> bytes:
    return public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id(public_key: Ed25519PublicKey) -> str:
    """Short fingerprint of a public key: 16 hex digits of SHA-256(raw key)."""
    return hashlib.sha256(raw_public_bytes(public_key)).hexdigest()[:16]


def init_keys(directory: str | os.PathLike | None = None, *, force: bool = False) -> Path:
    """Write a new key pair into ``directory``; refuse to overwrite unless ``force``."""
    where = key_dir(directory)
    private_path, public_path = where / PRIVATE_KEY_FILE, where / PUBLIC_KEY_FILE
    if private_path.exists() and not force:
        raise SigningError(
            f"{private_path} already exists; replacing it would orphan every checkpoint "
            "signed with it (use --force if you mean it)"
        )
    where.mkdir(parents=True, exist_ok=True)
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    # Created 0600 from the first byte: never readable by others, even briefly.
    if private_path.exists():
        private_path.unlink()
    descriptor = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(pem)
    public_path.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    # A new signing key starts a new trust: memos signed under the old memo key go.
    (where / MEMO_KEY_FILE).unlink(missing_ok=True)
    write_memo_key(where)
    return where


def write_memo_key(where: Path) -> None:
    """Write a new memo key (:mod:`replays.integrity.replay_memos`) into ``where`` unless one
    is there (two processes may race: the first file stays, and a memo under the other's
    key is simply ignored)."""
    try:
        descriptor = os.open(where / MEMO_KEY_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(secrets.token_bytes(32).hex().encode())


def load_private_key(directory: str | os.PathLike | None = None) -> Ed25519PrivateKey:
    path = key_dir(directory) / PRIVATE_KEY_FILE
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except FileNotFoundError:
        raise SigningError(
            f"no signing key at {path}: run `rummy-ledger keys init` (or set RUMMY_LEDGER_KEY_DIR)"
        ) from None
    except ValueError as error:
        raise SigningError(f"{path} is not a PEM private key: {error}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningError(f"{path} is not an Ed25519 key")
    return key


def load_public_key(path: str | os.PathLike | None = None) -> Ed25519PublicKey:
    """A public key from a PEM or hex file, or from a key directory (default: the key dir)."""
    where = Path(path) if path else key_dir()
    if where.is_dir():
        where = where / PUBLIC_KEY_FILE
    try:
        data = where.read_bytes()
    except FileNotFoundError:
        raise SigningError(f"no public key at {where}") from None
    text = data.strip()
    try:
        if re.fullmatch(rb"[0-9a-fA-F]{64}", text):
            return Ed25519PublicKey.from_public_bytes(bytes.fromhex(text.decode()))
        key = serialization.load_pem_public_key(data)
    except ValueError as error:
        raise SigningError(f"{where} is not a public key (PEM or 64 hex digits): {error}") from None
    if not isinstance(key, Ed25519PublicKey):
        raise SigningError(f"{where} is not an Ed25519 public key")
    return key


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Checkpoint:
    """A signed tree head. ``root`` and ``signature`` are bytes; files carry them as hex."""

    size: int
    root: bytes
    time: str
    key_id: str
    signature: bytes
    # The block hashes a checkpoint file carries (replays.integrity.checkpoint_blocks): bound to the
    # signed root by the tree itself, not by the signature; not part of the identity.
    blocks: Blocks | None = field(default=None, compare=False, repr=False)

    @staticmethod
    def message_for(size: int, root: bytes, time: str, key: str) -> bytes:
        return f"{CHECKPOINT_FORMAT}\n{size}\n{root.hex()}\n{time}\n{key}\n".encode()

    @property
    def message(self) -> bytes:
        return self.message_for(self.size, self.root, self.time, self.key_id)

    @classmethod
    def sign(cls, private_key: Ed25519PrivateKey, size: int, root: bytes, time: str | None = None):
        time = time or utc_now()
        key = key_id(private_key.public_key())
        signature = private_key.sign(cls.message_for(size, root, time, key))
        return cls(size, root, time, key, signature)

    def verify(self, public_key: Ed25519PublicKey) -> str | None:
        """``None`` when the signature is good for this key, else the reason it is not."""
        if key_id(public_key) != self.key_id:
            return (
                f"checkpoint is signed by key {self.key_id}, "
                f"but the public key given is {key_id(public_key)}"
            )
        try:
            public_key.verify(self.signature, self.message)
        except InvalidSignature:
            return "checkpoint signature is not valid: the tree head was altered or forged"
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": CHECKPOINT_FORMAT,
            "size": self.size,
            "root": self.root.hex(),
            "time": self.time,
            "key_id": self.key_id,
            "signature": self.signature.hex(),
        }

    def to_json(self) -> str:
        """The checkpoint file: the signed tree head, and its block hashes when known."""
        data = self.to_dict()
        if self.blocks is not None:
            data["blocks"] = self.blocks.to_dict()
        return json.dumps(data, indent=2) + "\n"

    @classmethod
    def from_dict(cls, data: Any, where: str = "checkpoint") -> Checkpoint:
        if not isinstance(data, dict):
            raise SigningError(f"{where}: a checkpoint is a JSON object")
        if data.get("format") != CHECKPOINT_FORMAT:
            raise SigningError(
                f"{where}: format must be {CHECKPOINT_FORMAT!r}, got {data.get('format')!r}"
            )
        size, root, time = data.get("size"), data.get("root"), data.get("time")
        key, signature = data.get("key_id"), data.get("signature")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise SigningError(f"{where}: size must be a non-negative integer, got {size!r}")
        if not isinstance(root, str) or not _HEX64.match(root):
            raise SigningError(f"{where}: root must be 64 lowercase hex digits, got {root!r}")
        if not isinstance(time, str) or not _TIME.match(time):
            raise SigningError(f"{where}: time must look like 2025-03-01T18:04:05Z, got {time!r}")
        if not isinstance(key, str) or not re.fullmatch(r"[0-9a-f]{16}", key):
            raise SigningError(f"{where}: key_id must be 16 hex digits, got {key!r}")
        if not isinstance(signature, str) or not re.fullmatch(r"[0-9a-f]{128}", signature):
            raise SigningError(f"{where}: signature must be 128 hex digits")
        blocks = None
        if data.get("blocks") is not None:
            try:
                blocks = Blocks.from_dict(data["blocks"], size, where)
            except BlocksError as error:
                raise SigningError(str(error)) from None
        return cls(size, bytes.fromhex(root), time, key, bytes.fromhex(signature), blocks)

    @classmethod
    def load(cls, path: str | os.PathLike) -> Checkpoint:
        try:
            data = json.loads(Path(path).read_text())
        except FileNotFoundError:
            raise SigningError(f"no checkpoint file at {path}") from None
        except (ValueError, UnicodeDecodeError) as error:
            raise SigningError(f"{path} is not JSON: {error}") from None
        return cls.from_dict(data, str(path))
