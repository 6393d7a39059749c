"""The API's published contract, generated: the OpenAPI document and the JSON Schemas.

``openapi_base.json`` holds what is written by hand (paths, responses, the response
schemas); the request bodies come from the models the ledger validates with
(:mod:`domain.record_schema`), as do the JSON Schema files in ``docs/schema/``. The files in
the repository are the output of :func:`generated_files` (``rummy-ledger schema --write``);
tests/test_record_schema.py fails when they drift.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

API_DIR = Path(__file__).resolve().parent
OPENAPI_BASE = API_DIR / "openapi_base.json"
OPENAPI = API_DIR / "openapi.json"
ROOT = API_DIR.parent.parent
SCHEMA_DIR = ROOT / "docs" / "schema"


def openapi_document() -> dict[str, Any]:
    """The template with its request-body schemas filled in from the models."""
    from domain.record_schema.published import openapi_components

    document = json.loads(OPENAPI_BASE.read_text())
    schemas = document["components"]["schemas"]
    generated = openapi_components()
    clash = sorted(set(schemas) & set(generated))
    if clash:
        raise ValueError(f"openapi_base.json keeps schemas the models generate: {clash}")
    document["components"]["schemas"] = dict(sorted({**schemas, **generated}.items()))
    return document


@cache
def schema_text(name: str) -> str:
    """The JSON Schema document ``name`` as the file and the API give it."""
    from domain.record_schema.published import json_schema

    return as_text(json_schema(name))


def schema_names() -> list[str]:
    from domain.record_schema.published import published

    return list(published())


def schema_index(base_url: str = "/api/v1/schemas/") -> dict[str, Any]:
    from domain.record_schema.published import published

    return {
        "schemas": [
            {"name": name, "title": title, "description": about, "url": f"{base_url}{name}.json"}
            for name, (_name, _adapter, title, about, _openapi) in published().items()
        ]
    }


def generated_files() -> dict[Path, str]:
    """Every generated file and the text it must hold."""
    files = {SCHEMA_DIR / f"{name}.json": schema_text(name) for name in schema_names()}
    files[OPENAPI] = as_text(openapi_document())
    return files


def as_text(document: dict) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def drifted() -> list[Path]:
    """The generated files whose committed text differs from what the models give."""
    return [
        path
        for path, text in generated_files().items()
        if not path.exists() or path.read_text() != text
    ]
