"""The bodies of the ingest API (``/api/v1``, docs/operator-api.md), built from the record.

No field is declared twice: a new game is the record's header (:class:`GameHeader`, the
record without its moves and figures), a move body is a record move and its ``seq``, and
a settle body carries the record's ``reported`` block.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, TypeAdapter, create_model

from domain.record_schema.common import MOVES_MAX, Block, count
from domain.rummy13.record_schema import FORMAT_TAG, MOVE_MODELS, GameRecord, Reported

# A move's 0-based index among the game's moves: the idempotency key of POST .../moves.
Seq = Annotated[
    count(0, MOVES_MAX - 1),
    Field(description="The move's 0-based index in the game (a retry sends the same seq)."),
]


class GameHeader(GameRecord):
    """``POST /api/v1/games``: a record's header and deal; its moves follow one by one and
    its figures come with ``/settle``. ``format`` may be left out."""

    format: Literal["rummy-ledger/game@1"] = FORMAT_TAG
    moves: Annotated[list, Field(max_length=0)] = Field(default_factory=list)
    reported: None = None
    settlement: None = None


def _with_seq(model: type[Block]) -> type[Block]:
    return create_model(
        f"{model.__name__}Body", __base__=model, __doc__=model.__doc__, seq=(Seq, ...)
    )


MOVE_BODIES = tuple(_with_seq(model) for model in MOVE_MODELS)
MoveBody = Annotated[
    MOVE_BODIES[0]  # one of the record's moves with its seq, told apart by ``type``
    | MOVE_BODIES[1]
    | MOVE_BODIES[2]
    | MOVE_BODIES[3]
    | MOVE_BODIES[4]
    | MOVE_BODIES[5]
    | MOVE_BODIES[6],
    Field(discriminator="type"),
]
MOVE_BODY = TypeAdapter(MoveBody)


class SettleRequest(Block):
    """``POST /api/v1/games/{game_id}/settle``: optionally, the operator's own figures."""

    reported: Reported | None = None
