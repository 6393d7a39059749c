"""Helpers shared by the records, import/export, audit and API tests."""

from __future__ import annotations


def ensure_schema(url: str) -> None:
    """Build every table (the event store, read models, ``api_tokens``) by the migrations."""
    from replays.store import schema

    schema.migrate(url)


# -- the API's contract ------------------------------------------------------------------

OPENAPI_PATH = "web/api/openapi.json"


def openapi_document() -> dict:
    import json
    from pathlib import Path

    return json.loads((Path(__file__).resolve().parent.parent / OPENAPI_PATH).read_text())


def check_response(method: str, template: str, status: int, body) -> None:
    """Fail unless ``status`` is documented for the operation and ``body`` fits its schema."""
    from jsonschema import Draft202012Validator

    doc = openapi_document()
    operation = doc["paths"][template][method.lower()]
    documented = operation["responses"]
    assert str(status) in documented, f"{method} {template} answered {status}, not documented"
    schema = dict(documented[str(status)]["content"]["application/json"]["schema"])
    schema["components"] = doc["components"]
    Draft202012Validator(schema).validate(body)


def check_request(template: str, body) -> None:
    """Fail unless a request body we send fits the documented request schema."""
    from jsonschema import Draft202012Validator

    doc = openapi_document()
    content = doc["paths"][template]["post"]["requestBody"]["content"]
    schema = dict(content["application/json"]["schema"])
    schema["components"] = doc["components"]
    Draft202012Validator(schema).validate(body)


def make_app(url: str, **config):
    from web import create_app

    ensure_schema(url)
    return create_app({"DATABASE_URL": url, "TESTING": True, **config})


def header_of(record: dict) -> dict:
    """A record's header and deal: the body of POST /api/v1/games."""
    return {k: v for k, v in record.items() if k not in ("moves", "reported")}
