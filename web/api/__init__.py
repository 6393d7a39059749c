"""The live ingest API, ``/api/v1``: operators post games move by move.

Thin handlers: authenticate the operator's token, decode the JSON body, call one use case
of :class:`replays.ingest.Ingest`, serialise its answer. The contract is
``web/api/openapi.json``, served at ``/api/v1/openapi.json`` (tests hold the two together).
"""

from __future__ import annotations

import json
import threading
from decimal import Decimal
from pathlib import Path

from flask import Blueprint, Response, current_app, g, jsonify, request
from werkzeug.exceptions import RequestEntityTooLarge

from domain.record_schema.common import LINE_BYTES_MAX, LINE_LIMIT_TEXT
from replays.ingest import Ingest, IngestError
from web.api import contract
from web.ledger import get_ledger
from web.ops import IMPORT_OUTCOME

bp = Blueprint("api", __name__, url_prefix="/api/v1")
OPENAPI = Path(__file__).with_name("openapi.json")
# The published contract: no token needed to read it.
PUBLIC = {"api.openapi", "api.schemas", "api.schema"}
_lock = threading.Lock()


def _ingest() -> Ingest:
    """The use cases, with the read models following each write: on a background thread
    by default, in the request with ``API_FOLLOW_WRITES="sync"``, or not at all with
    ``False`` (a separate worker then follows the store). Integrity seals need no
    follower: each save writes them in its own transaction."""
    mode = current_app.config.get("API_FOLLOW_WRITES", "background")
    url = current_app.config["DATABASE_URL"]
    after_write = None
    if mode == "sync":
        from replays.store.followers import catch_up_followers

        logger = current_app.logger

        def after_write():
            catch_up_followers(url, warn=logger.warning)

    elif mode:
        after_write = _background_follower().poke
    # Every use case runs as the token's operator: games are theirs alone.
    return Ingest(
        get_ledger(),
        after_write=after_write,
        operator=g.operator,
        on_start=lambda outcome: g.setdefault(IMPORT_OUTCOME, outcome),
    )


def _background_follower():
    extensions = current_app.extensions
    if "rummy_ledger_followers" not in extensions:
        with _lock:
            if "rummy_ledger_followers" not in extensions:
                from replays.store.followers import BackgroundFollower

                extensions["rummy_ledger_followers"] = BackgroundFollower(
                    current_app.config["DATABASE_URL"]
                )
    return extensions["rummy_ledger_followers"]


def _error(status: int, message: str, field: str | None = None) -> Response:
    response = jsonify(IngestError(status, message, field).to_dict())
    response.status_code = status
    if status == 401:
        response.headers["WWW-Authenticate"] = 'Bearer realm="rummy-ledger"'
    return response


@bp.before_request
def _authenticate():
    # A body is one game header or one move: 1 MiB is far above any, and a bigger one is
    # refused as it streams in (413) instead of being held in memory. A chunked body has no
    # length to refuse up front: it is read to one byte past the limit, and _body refuses
    # that byte (werkzeug's stream stops quietly at the limit, which would cut it short).
    sized = request.content_length is not None
    request.max_content_length = LINE_BYTES_MAX if sized else LINE_BYTES_MAX + 1
    if request.endpoint in PUBLIC:
        return None
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return _error(401, "an operator token is required: Authorization: Bearer <token>")
    from replays.access import tokens

    try:
        info = tokens.authenticate(token.strip(), url=current_app.config["DATABASE_URL"])
    except tokens.UnreadableToken as error:
        current_app.logger.warning("API token refused: %s", error)
        return _error(
            401,
            "the token's stored row cannot be read (a value of the wrong kind in the "
            "token table): it is refused; ask the site's admin for a new token",
        )
    if info is None:
        return _error(401, "the token is not valid (unknown or revoked)")
    g.operator = info.operator
    return None


def _body(*, optional: bool = False):
    raw = request.get_data(cache=False)
    if len(raw) > LINE_BYTES_MAX:
        raise RequestEntityTooLarge()
    if not raw.strip():
        if optional:
            return None
        raise IngestError(400, "the request has no body: send a JSON object")
    if request.mimetype != "application/json":
        # Only what says it is JSON is read as JSON: a form or text/plain body (which a
        # browser may send across sites without asking) is not a move.
        sent = request.mimetype or "no Content-Type"
        raise IngestError(
            415, f"the body must be sent as Content-Type: application/json, not {sent}"
        )
    try:
        return json.loads(raw, parse_float=_json_number)
    except ValueError as error:
        raise IngestError(400, f"the body is not valid JSON: {error}") from None
    except RecursionError:  # arrays in arrays thousands deep: hostile, not a move
        raise IngestError(400, "the body is not valid JSON: nested too deeply") from None


# JSON, and the JSON Schemas the contract is written in, do not tell 137.0 from 137: both
# are the integer 137 (a seq, a count, whole money). Read such a number as the integer it
# is, so that what the schema calls valid is what the API accepts. The literal is judged
# exactly (as a Decimal: 9007199254740993.0 is not the float it rounds to); past 2**53 it
# stays a float, which every bound refuses.
WHOLE_NUMBER_MAX = 2**53


def _json_number(text: str) -> float | int:
    exact = Decimal(text)
    # Compared before any arithmetic: 1e999999999999 would overflow the decimal context.
    if -WHOLE_NUMBER_MAX <= exact <= WHOLE_NUMBER_MAX and exact == exact.to_integral_value():
        return int(exact)
    return float(text)


@bp.errorhandler(RequestEntityTooLarge)
def _too_large(_exception):
    return _error(413, f"the body is larger than {LINE_LIMIT_TEXT} (1,048,576 bytes)")


@bp.errorhandler(IngestError)
def _ingest_error(error: IngestError):
    return _error(error.status, error.message, error.field)


@bp.post("/games")
def start_game():
    status, payload = _ingest().start_game(_body())
    return _answer(status, payload)


@bp.post("/games/<game_id>/moves")
def post_move(game_id: str):
    status, payload = _ingest().post_move(game_id, _body())
    return _answer(status, payload)


@bp.post("/games/<game_id>/settle")
def settle(game_id: str):
    status, payload = _ingest().settle(game_id, _body(optional=True))
    return _answer(status, payload)


@bp.get("/games/<game_id>")
def game(game_id: str):
    return _answer(200, _ingest().view(game_id))


@bp.get("/openapi.json")
def openapi():
    return Response(OPENAPI.read_bytes(), mimetype="application/json")


@bp.get("/schemas/")
def schemas():
    """The published JSON Schemas (docs/record-format.md, docs/operator-api.md)."""
    return _answer(200, contract.schema_index(base_url=request.base_url))


@bp.get("/schemas/<name>.json")
def schema(name: str):
    if name not in contract.schema_names():
        known = ", ".join(contract.schema_names())
        return _error(404, f"no schema {name!r} (known: {known})")
    return Response(contract.schema_text(name), mimetype="application/schema+json")


def _answer(status: int, payload: dict) -> Response:
    response = jsonify(payload)
    response.status_code = status
    return response
