"""The Flask site and HTTP API around the ledger. `flask --app web run` uses :func:`create_app`."""

from __future__ import annotations

from flask import Flask


def create_app(config: dict | None = None) -> Flask:
    app = Flask(__name__)
    if config:
        app.config.update(config)

    @app.get("/healthz")
    def healthz():
        return {"status": "ok"}

    return app
