"""What an operator's tools ask the site: ``/healthz``, ``/readyz`` and ``/metrics``.

- ``/healthz``: alive, and the read side whole (web/read_side.py: 503 naming each projection
  failure, or a stuck projection, and the stored values pages lately could not read,
  web/unreadable.py). Public.
- ``/readyz``: may this process take traffic? The database answers, the projection is at most
  ``RUMMY_LEDGER_READY_MAX_LAG`` events (default 10000) and
  ``RUMMY_LEDGER_READY_MAX_LAG_SECONDS`` (default 300) behind, and every check added with
  :func:`add_readiness_check` passes (the read replicas' lag is one, bounded by
  ``RUMMY_LEDGER_READY_MAX_REPLICA_LAG`` seconds). 503 with the reasons otherwise. Public:
  it names no game.
- ``/metrics``: Prometheus text (prometheus_client). Counted by this process (or every
  worker): requests and their latency per page type (the Flask endpoint, never the URL: one
  series per page, not per game), failed sign-ins, and the games taken in through the API
  (``POST /api/v1/games``) by outcome, with those requests. Read from the database at
  scrape time, so every worker gives the same answer: projection lag in events and seconds,
  projection failures, events and games stored (and the games by how they came in: the
  API, or ``rummy-ledger import`` run anywhere), settlement discrepancies. And the findings
  of the last scheduled ``verify --json``, from its report file
  (``RUMMY_LEDGER_VERIFY_REPORT``). Served to signed-in staff, and to the addresses or
  networks in ``RUMMY_LEDGER_METRICS_ALLOW`` (comma-separated, e.g.
  ``127.0.0.1,10.0.0.0/8``; default none: behind a proxy on the same host every visitor
  would look like 127.0.0.1).

Under gunicorn the counters live in prometheus_client's multiprocess files
(``PROMETHEUS_MULTIPROC_DIR``, set by ``rummy-ledger serve``), so any worker's /metrics adds
up every worker's requests.
"""

from __future__ import annotations

import ipaddress
import json
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime

from flask import Flask, Response, abort, current_app, g, request

from web import read_side as read_side_module

# A readiness check gets the app and returns None when ready, or the reason it is not.
ReadinessCheck = Callable[[Flask], "str | None"]
READINESS_CHECKS: list[ReadinessCheck] = []

ENDPOINT_KEY = "rummy_ledger.endpoint"  # web/server.py's access log reads it
# The endpoints through which the web process takes games in, and the source each counts
# as; the view puts what it did with the game (replays.ingest.STORED or ALREADY_RECORDED)
# in ``g`` under IMPORT_OUTCOME.
IMPORT_ENDPOINTS = {"api.start_game": "api"}
IMPORT_OUTCOME = "import_outcome"
REJECTED = "rejected"
UNMATCHED = "unmatched"  # every URL no route answers: one series, not one per probe


def add_readiness_check(check: ReadinessCheck) -> ReadinessCheck:
    """Make ``/readyz`` also ask ``check`` (usable as a decorator); added once."""
    if check not in READINESS_CHECKS:
        READINESS_CHECKS.append(check)
    return check


def _env_number(name: str, default: float) -> float:
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        return float(value)
    except ValueError:
        raise ValueError(f"{name}={value!r}: give a number") from None


def settings() -> dict:
    """The ops settings from the environment, as app config keys (create_app's config wins)."""
    return {
        "READY_MAX_LAG": int(_env_number("RUMMY_LEDGER_READY_MAX_LAG", 10000)),
        "READY_MAX_LAG_SECONDS": _env_number("RUMMY_LEDGER_READY_MAX_LAG_SECONDS", 300.0),
        "READY_MAX_REPLICA_LAG": _env_number("RUMMY_LEDGER_READY_MAX_REPLICA_LAG", 30.0),
        "METRICS_ALLOW": os.environ.get("RUMMY_LEDGER_METRICS_ALLOW", ""),
        "VERIFY_REPORT": os.environ.get("RUMMY_LEDGER_VERIFY_REPORT") or None,
    }


def allowed_networks(value: str) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    networks = []
    for part in (piece.strip() for piece in value.split(",")):
        if not part:
            continue
        try:
            networks.append(ipaddress.ip_network(part, strict=False))
        except ValueError:
            raise ValueError(
                f"RUMMY_LEDGER_METRICS_ALLOW: {part!r} is not an address or network "
                "(e.g. 127.0.0.1 or 10.0.0.0/8)"
            ) from None
    return networks


# -- lag ----------------------------------------------------------------------------------


def lag_seconds(status, now: datetime | None = None) -> float | None:
    """How long events have waited for the projection: 0 when none wait, else the seconds
    since a run last moved (or tried) the position; None when it never ran."""
    if status.lag == 0:
        return 0.0
    if status.updated_at is None:
        return None
    updated = status.updated_at
    if updated.tzinfo is None:  # SQLite gives back naive UTC
        updated = updated.replace(tzinfo=UTC)
    return max(0.0, ((now or datetime.now(UTC)) - updated).total_seconds())


def readiness(app: Flask) -> tuple[dict, int]:
    found = read_side_module.read_side()
    if found.status is None:
        return {"status": "not ready", "reasons": [f"database: {found.error}"]}, 503
    status = found.status
    reasons = []
    seconds = lag_seconds(status)
    max_lag = app.config["READY_MAX_LAG"]
    max_seconds = app.config["READY_MAX_LAG_SECONDS"]
    if status.lag > max_lag:
        reasons.append(f"projection {status.lag} events behind (bound {max_lag})")
    if seconds is None:
        reasons.append("projection never ran and events wait")
    elif seconds > max_seconds:
        reasons.append(f"projection {seconds:.0f} s behind (bound {max_seconds:g} s)")
    for check in READINESS_CHECKS:
        try:
            reason = check(app)
        except Exception as error:  # a check that cannot tell is a check that fails
            reason = f"{getattr(check, '__name__', 'check')}: {error.__class__.__name__}"
        if reason:
            reasons.append(reason)
    body = {
        "status": "not ready" if reasons else "ready",
        "projection": {
            "position": status.position,
            "head": status.head,
            "lag_events": status.lag,
            "lag_seconds": None if seconds is None else round(seconds, 1),
            "failures": len(status.failures),
        },
    }
    if reasons:
        body["reasons"] = reasons
    return body, 503 if reasons else 200


# -- metrics ------------------------------------------------------------------------------

_metrics = None


def _request_metrics():
    """The process's request metrics, made on first use (after PROMETHEUS_MULTIPROC_DIR is
    set by `serve`: prometheus_client picks its storage when a metric is made)."""
    global _metrics
    if _metrics is None:
        from prometheus_client import CollectorRegistry, Counter, Histogram

        registry = CollectorRegistry(auto_describe=True)
        _metrics = {
            "registry": registry,
            "requests": Counter(
                "rummy_ledger_http_requests",
                "HTTP requests answered, by page type (Flask endpoint), method and status.",
                ["endpoint", "method", "status"],
                registry=registry,
            ),
            "latency": Histogram(
                "rummy_ledger_http_request_duration_seconds",
                "Time to build a response, by page type (Flask endpoint).",
                ["endpoint"],
                buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
                registry=registry,
            ),
            "failed_sign_ins": Counter(
                "rummy_ledger_failed_sign_ins",
                "Sign-in attempts refused: wrong credentials, or throttled.",
                ["reason"],
                registry=registry,
            ),
            "import_requests": Counter(
                "rummy_ledger_import_requests",
                "Requests to take a game in (POST /api/v1/games), whatever their answer.",
                ["source"],
                registry=registry,
            ),
            "games_imported": Counter(
                "rummy_ledger_games_imported",
                "Games the web process took in, by outcome: stored (new), already_recorded "
                "(a retry of a game stored with the same header), rejected (refused: "
                "malformed, not JSON, too large, a rule broken, an id taken by another game).",
                ["source", "outcome"],
                registry=registry,
            ),
        }
    return _metrics


class _StoreCollector:
    """Gauges read from the database at scrape time (the same answer from every worker)."""

    def __init__(self, url: str):
        self.url = url

    def collect(self):
        import sqlalchemy as sa
        from prometheus_client.core import GaugeMetricFamily

        from replays.access.ownership import GameOwner
        from replays.readmodels.models import GameRow
        from replays.readmodels.projections import projection_status
        from replays.store.db import engine_for

        status = projection_status(self.url)
        labels = [status.name]
        seconds = lag_seconds(status)
        for name, text, value in (
            ("projection_lag_events", "Events stored but not yet projected.", status.lag),
            (
                "projection_lag_seconds",
                "Seconds events have waited for the projection (0 when none wait; +Inf when "
                "it never ran).",
                float("inf") if seconds is None else seconds,
            ),
            (
                "projection_failures",
                "Events the projection set aside (see `projections status`).",
                len(status.failures),
            ),
        ):
            family = GaugeMetricFamily(f"rummy_ledger_{name}", text, labels=["projection"])
            family.add_metric(labels, value)
            yield family
        yield GaugeMetricFamily(
            "rummy_ledger_events_stored",
            "The event store's last notification id (PostgreSQL's may skip a few).",
            value=status.head,
        )
        games = GameRow.__table__
        with engine_for(self.url).connect() as connection:
            stored = connection.execute(sa.select(sa.func.count()).select_from(games)).scalar()
            discrepancies = connection.execute(
                sa.select(sa.func.count()).select_from(games).where(games.c.discrepancy)
            ).scalar()
            owners = GameOwner.__table__
            from_api = connection.execute(
                sa.select(sa.func.count())
                .select_from(games)
                .join(owners, owners.c.game_id == games.c.game_id)
            ).scalar()
        yield GaugeMetricFamily(
            "rummy_ledger_games_stored",
            "Games in the read models (imported, or started through the API).",
            value=stored or 0,
        )
        # By the way they came in: a game the API started has an owner (written in its
        # first save); every other came from `rummy-ledger import` (or the demo, the
        # simulator), so this is also the CLI's running total, whichever host it ran on.
        by_source = GaugeMetricFamily(
            "rummy_ledger_games_stored_by_source",
            "Games in the read models by how they came in: api (POST /api/v1/games), import "
            "(rummy-ledger import, the demo, the simulator).",
            labels=["source"],
        )
        by_source.add_metric(["api"], from_api or 0)
        by_source.add_metric(["import"], (stored or 0) - (from_api or 0))
        yield by_source
        yield GaugeMetricFamily(
            "rummy_ledger_settlement_discrepancies",
            "Games whose recorded settlement differs from the one recomputed from their "
            "moves (the verification findings the read models hold).",
            value=discrepancies or 0,
        )


class _VerifyReportCollector:
    """The findings of the last scheduled `verify --json` (its report file, written by
    deploy/systemd/rummy-ledger-verify.service): verifying replays every game, far too slow
    for a scrape, so /metrics reads what the last run found."""

    def __init__(self, path: str):
        self.path = path

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily

        try:
            with open(self.path, encoding="utf-8") as handle:
                report = json.load(handle)
            finished = os.stat(self.path).st_mtime
            problems = report["problems"]
            kinds: dict[str, int] = {}
            for problem in problems:
                kinds[problem["kind"]] = kinds.get(problem["kind"], 0) + 1
        except (OSError, ValueError, KeyError, TypeError) as error:
            current_app.logger.warning("metrics: cannot read the verify report: %s", error)
            yield GaugeMetricFamily(
                "rummy_ledger_verify_report_up",
                "1 when the last verify report (RUMMY_LEDGER_VERIFY_REPORT) could be read.",
                value=0,
            )
            return
        yield GaugeMetricFamily(
            "rummy_ledger_verify_report_up",
            "1 when the last verify report (RUMMY_LEDGER_VERIFY_REPORT) could be read.",
            value=1,
        )
        yield GaugeMetricFamily(
            "rummy_ledger_verify_ok",
            "1 when the last verify found nothing.",
            value=int(bool(report.get("ok"))),
        )
        yield GaugeMetricFamily(
            "rummy_ledger_verify_findings",
            "Problems the last verify found (all kinds).",
            value=len(problems),
        )
        by_kind = GaugeMetricFamily(
            "rummy_ledger_verify_findings_by_kind",
            "Problems the last verify found, by kind.",
            labels=["kind"],
        )
        for kind, count in sorted(kinds.items()):
            by_kind.add_metric([kind], count)
        yield by_kind
        yield GaugeMetricFamily(
            "rummy_ledger_verify_events_checked",
            "Events the last verify checked.",
            value=report.get("events") or 0,
        )
        yield GaugeMetricFamily(
            "rummy_ledger_verify_report_timestamp_seconds",
            "When the last verify report was written (Unix time).",
            value=finished,
        )


class _Scrape:
    """One scrape's collectors: this process's (or, under gunicorn, every worker's)
    request metrics and the store's gauges."""

    def __init__(self, url: str):
        self.url = url

    def collect(self):
        metrics = _request_metrics()
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            from prometheus_client import multiprocess

            yield from multiprocess.MultiProcessCollector(None).collect()
        else:
            yield from metrics["registry"].collect()
        try:
            yield from _StoreCollector(self.url).collect()
        except Exception as error:
            from prometheus_client.core import GaugeMetricFamily

            current_app.logger.warning("metrics: cannot read the store: %s", error)
            yield GaugeMetricFamily(
                "rummy_ledger_store_up", "1 when the database answered the scrape.", value=0
            )
        else:
            from prometheus_client.core import GaugeMetricFamily

            yield GaugeMetricFamily(
                "rummy_ledger_store_up", "1 when the database answered the scrape.", value=1
            )
        report = current_app.config.get("VERIFY_REPORT")
        if report:
            yield from _VerifyReportCollector(report).collect()


def _may_read_metrics() -> bool:
    from web.auth import STAFF, current_account

    account = current_account()
    if account is not None and account.role in STAFF:
        return True
    try:
        address = ipaddress.ip_address(request.remote_addr or "")
    except ValueError:
        return False
    return any(address in network for network in current_app.config["METRICS_NETWORKS"])


def _observe(response):
    started = g.pop("ops_started", None)
    rule = request.url_rule
    endpoint = rule.endpoint if rule is not None else UNMATCHED
    request.environ[ENDPOINT_KEY] = endpoint
    metrics = _request_metrics()
    metrics["requests"].labels(endpoint, request.method, str(response.status_code)).inc()
    if started is not None:
        metrics["latency"].labels(endpoint).observe(time.perf_counter() - started)
    if endpoint == "auth.login" and request.method == "POST":
        if response.status_code == 401:
            metrics["failed_sign_ins"].labels("credentials").inc()
        elif response.status_code == 429:
            metrics["failed_sign_ins"].labels("throttled").inc()
    source = IMPORT_ENDPOINTS.get(endpoint)
    if source is not None and request.method == "POST":
        _count_import(metrics, source, response.status_code)
    return response


def _count_import(metrics: dict, source: str, status: int) -> None:
    metrics["import_requests"].labels(source).inc()
    outcome = g.get(IMPORT_OUTCOME)
    # A 401 never reached the ledger (no operator), and a 5xx (no database) judged nothing:
    # the client sends the same request again. Every other 4xx refused the game.
    if outcome is None and 400 <= status < 500 and status != 401:
        outcome = REJECTED
    if outcome is not None:
        metrics["games_imported"].labels(source, outcome).inc()


def register(app: Flask) -> None:
    for key, value in settings().items():
        app.config.setdefault(key, value)
    app.config["METRICS_NETWORKS"] = allowed_networks(app.config["METRICS_ALLOW"])

    @app.before_request
    def _start_clock():
        g.ops_started = time.perf_counter()

    app.after_request(_observe)

    @app.get("/healthz")
    def healthz():
        from web.unreadable import health

        body, status = read_side_module.read_side().health()
        # Stored values pages could not read lately (web/unreadable.py): kept in memory,
        # so naming them reads nothing.
        found = health()
        if found is not None:
            body = {**body, "status": "degraded", "unreadable": found}
            status = 503
        return body, status

    @app.get("/readyz")
    def readyz():
        return readiness(current_app)

    @app.get("/metrics")
    def metrics():
        if not _may_read_metrics():
            abort(403, "Metrics are for staff and the addresses in RUMMY_LEDGER_METRICS_ALLOW.")
        from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Scrape(current_app.config["DATABASE_URL"]))
        response = Response(generate_latest(registry), mimetype=CONTENT_TYPE_LATEST)
        response.headers["Cache-Control"] = "no-store"
        return response
