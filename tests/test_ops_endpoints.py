"""/readyz and /metrics (web/ops.py) on both databases: readiness follows the database and the
projection's lag, with the reason when it fails; metrics count requests per page type and
failed sign-ins, read the lag from the store, and are served only to staff or allowed
addresses. Multi-process counting under gunicorn: tests/test_serve_gunicorn.py."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa
from auth_support import csrf_token, ensure_account, signed_in
from web_support import load_games, sample_records

from web import create_app
from web.ops import READINESS_CHECKS, add_readiness_check


def app_for(url: str, **config):
    return create_app({"DATABASE_URL": url, "TESTING": True, **config})


def sample(metrics: str, name: str, **labels: str) -> float | None:
    for line in metrics.splitlines():
        match = re.match(rf"{name}(?:\{{(.*)\}})? (\S+)$", line)
        if not match:
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', match.group(1) or ""))
        if all(found.get(key) == value for key, value in labels.items()):
            return float(match.group(2))
    return None


def store_without_projecting(url: str, records: list[dict]) -> None:
    from replays.records.importer import import_lines
    from replays.store.application import Ledger

    summary = import_lines(Ledger(url), [json.dumps(r) for r in records], follow=False)
    assert summary.ok, summary.line()


@pytest.fixture
def filled(database_url):
    records = sample_records()
    load_games(database_url, records[:1])
    return database_url, records[1:]


def test_ready_when_the_projection_is_current(filled):
    url, _ = filled
    response = app_for(url).test_client().get("/readyz")
    assert response.status_code == 200
    body = response.get_json()
    assert body["status"] == "ready" and body["projection"]["lag_events"] == 0


def test_not_ready_when_the_projection_lags_in_events_or_seconds(filled):
    url, rest = filled
    store_without_projecting(url, rest)
    tolerant = app_for(url, READY_MAX_LAG=10**9).test_client().get("/readyz")
    assert tolerant.status_code == 200
    lag = tolerant.get_json()["projection"]["lag_events"]
    assert lag > 0

    strict = app_for(url, READY_MAX_LAG=lag - 1).test_client().get("/readyz")
    assert strict.status_code == 503
    assert strict.get_json()["reasons"] == [f"projection {lag} events behind (bound {lag - 1})"]

    # The projection last ran ten minutes ago while these events wait.
    from replays.readmodels.models import ProjectionPosition
    from replays.store.db import engine_for

    positions = ProjectionPosition.__table__
    with engine_for(url).begin() as connection:
        connection.execute(
            positions.update().values(updated_at=datetime.now(UTC) - timedelta(minutes=10))
        )
    stale = app_for(url, READY_MAX_LAG=10**9, READY_MAX_LAG_SECONDS=60)
    response = stale.test_client().get("/readyz")
    assert response.status_code == 503
    (reason,) = response.get_json()["reasons"]
    assert re.fullmatch(r"projection (\d+) s behind \(bound 60 s\)", reason)
    assert int(reason.split()[1]) >= 590

    metrics = signed_in(stale).get("/metrics").get_data(as_text=True)
    assert sample(metrics, "rummy_ledger_projection_lag_events") == lag
    assert sample(metrics, "rummy_ledger_projection_lag_seconds") >= 590

    from replays.readmodels.projections import catch_up

    catch_up(url)
    assert stale.test_client().get("/readyz").status_code == 200


def test_not_ready_without_a_database(tmp_path):
    url = f"sqlite:///{tmp_path / 'missing' / 'nothing.sqlite3'}"
    response = app_for(url).test_client().get("/readyz")
    assert response.status_code == 503
    body = response.get_json()
    assert body["status"] == "not ready"
    assert body["reasons"][0].startswith("database: cannot read the projection status")


def test_readiness_checks_added_by_other_parts(filled):
    url, _ = filled

    def replica_lag(app):
        return f"replica 45 s behind (bound {app.config['READY_MAX_REPLICA_LAG']:g} s)"

    def broken(app):
        raise ConnectionError("no route")

    add_readiness_check(replica_lag)
    add_readiness_check(broken)
    add_readiness_check(replica_lag)  # once only
    try:
        response = app_for(url, READY_MAX_REPLICA_LAG=30).test_client().get("/readyz")
    finally:
        READINESS_CHECKS.remove(replica_lag)
        READINESS_CHECKS.remove(broken)
    assert response.status_code == 503
    assert response.get_json()["reasons"] == [
        "replica 45 s behind (bound 30 s)",
        "broken: ConnectionError",
    ]


def test_metrics_by_page_type_and_from_the_store(filled):
    url, _ = filled
    app = app_for(url)
    auditor = signed_in(app)
    game = sample_records()[0]["game_id"]
    before = auditor.get("/metrics").get_data(as_text=True)
    labels = {"endpoint": "replays.replay", "method": "GET", "status": "200"}
    counted = sample(before, "rummy_ledger_http_requests_total", **labels) or 0
    for move in (1, 2, 3):
        assert auditor.get(f"/games/{game}/replay?move={move}").status_code == 200
    assert auditor.get("/no/such/page").status_code == 404

    response = auditor.get("/metrics")
    assert response.status_code == 200
    assert response.mimetype == "text/plain"
    metrics = response.get_data(as_text=True)
    assert sample(metrics, "rummy_ledger_http_requests_total", **labels) == counted + 3
    assert (
        sample(
            metrics,
            "rummy_ledger_http_request_duration_seconds_bucket",
            endpoint="replays.replay",
            le="+Inf",
        )
        >= 3
    )
    assert sample(metrics, "rummy_ledger_http_requests_total", endpoint="unmatched") >= 1
    assert game not in metrics and "/no/such" not in metrics
    assert sample(metrics, "rummy_ledger_projection_lag_events", projection="read_models") == 0
    assert sample(metrics, "rummy_ledger_projection_failures") == 0
    assert sample(metrics, "rummy_ledger_games_stored") == 1
    assert sample(metrics, "rummy_ledger_settlement_discrepancies") == 0
    assert sample(metrics, "rummy_ledger_store_up") == 1
    from replays.store.db import engine_for

    with engine_for(url).connect() as connection:
        head = connection.execute(sa.text("SELECT max(id) FROM ledger_events")).scalar()
    assert sample(metrics, "rummy_ledger_events_stored") == head


def test_failed_sign_ins_are_counted(filled):
    url, _ = filled
    app = app_for(url, LOGIN_RATE_LIMIT=False)
    username = ensure_account(url, "auditor")
    client = app.test_client()

    def failed() -> float:
        metrics = signed_in(app).get("/metrics").get_data(as_text=True)
        return sample(metrics, "rummy_ledger_failed_sign_ins_total", reason="credentials") or 0

    before = failed()
    for _ in range(2):
        token = csrf_token(client.get("/login").get_data(as_text=True))
        response = client.post(
            "/login", data={"csrf_token": token, "username": username, "password": "wrong-1"}
        )
        assert response.status_code == 401
    assert failed() == before + 2


def test_metrics_only_for_staff_or_allowed_addresses(filled):
    url, _ = filled
    app = app_for(url)
    assert app.test_client().get("/metrics").status_code == 403
    player = signed_in(app, "player", player="p1")
    assert player.get("/metrics").status_code == 403
    assert signed_in(app, "admin").get("/metrics").status_code == 200

    allowed = app_for(url, METRICS_ALLOW="10.0.0.0/8, 192.0.2.7")
    scraper = allowed.test_client()
    assert scraper.get("/metrics", environ_base={"REMOTE_ADDR": "10.1.2.3"}).status_code == 200
    assert scraper.get("/metrics", environ_base={"REMOTE_ADDR": "192.0.2.7"}).status_code == 200
    assert scraper.get("/metrics", environ_base={"REMOTE_ADDR": "192.0.2.8"}).status_code == 403
    assert scraper.get("/metrics").status_code == 403  # 127.0.0.1 was not listed


def test_a_bad_metrics_address_is_named(sqlite_url, monkeypatch):
    monkeypatch.setenv("RUMMY_LEDGER_METRICS_ALLOW", "127.0.0.1, ten.0.0.1")
    with pytest.raises(ValueError, match=r"RUMMY_LEDGER_METRICS_ALLOW: 'ten.0.0.1' is not an"):
        app_for(sqlite_url)


def test_the_last_verify_report_is_in_the_metrics(filled, keys, tmp_path):
    from click.testing import CliRunner

    from web.cli import main

    url, _ = filled
    report = tmp_path / "report.json"
    app = app_for(url, VERIFY_REPORT=str(report))
    staff = signed_in(app)
    assert (
        sample(staff.get("/metrics").get_data(as_text=True), "rummy_ledger_verify_report_up") == 0
    )

    # A real run on this store, as the nightly unit writes it.
    result = CliRunner().invoke(main, ["verify", "--json", "--no-snapshots"])
    assert result.exit_code == 0, result.output
    report.write_text(result.output)
    metrics = staff.get("/metrics").get_data(as_text=True)
    assert sample(metrics, "rummy_ledger_verify_report_up") == 1
    assert sample(metrics, "rummy_ledger_verify_ok") == 1
    assert sample(metrics, "rummy_ledger_verify_findings") == 0
    assert (
        sample(metrics, "rummy_ledger_verify_events_checked") == json.loads(result.output)["events"]
    )
    assert sample(metrics, "rummy_ledger_verify_report_timestamp_seconds") > 1.7e9

    # Findings, by kind (the shape `verify --json` gives them).
    found = json.loads(result.output)
    found["ok"] = False
    found["problems"] = [
        {"kind": "chain", "message": "hash differs", "game_id": "T1", "event": 3},
        {"kind": "chain", "message": "hash differs", "game_id": "T2", "event": 4},
        {"kind": "deal", "message": "not its shuffle", "game_id": "T3", "event": None},
    ]
    report.write_text(json.dumps(found))
    metrics = staff.get("/metrics").get_data(as_text=True)
    assert sample(metrics, "rummy_ledger_verify_ok") == 0
    assert sample(metrics, "rummy_ledger_verify_findings") == 3
    assert sample(metrics, "rummy_ledger_verify_findings_by_kind", kind="chain") == 2
    assert sample(metrics, "rummy_ledger_verify_findings_by_kind", kind="deal") == 1

    report.write_text("{not json")
    metrics = staff.get("/metrics").get_data(as_text=True)
    assert sample(metrics, "rummy_ledger_verify_report_up") == 0
    assert sample(metrics, "rummy_ledger_store_up") == 1  # the rest of the scrape stands


def test_games_taken_in_over_http_are_counted_by_outcome(filled):
    """A real HTTP import through the API (``POST /api/v1/games``) moves the import counters,
    and /metrics (scraped over HTTP from an allowed address) shows it; the store's gauge
    tells API games from imported ones."""
    import threading
    import urllib.error
    import urllib.request

    from api_support import header_of
    from werkzeug.serving import make_server

    from replays.access import tokens

    url, rest = filled
    app = app_for(url, METRICS_ALLOW="127.0.0.1", API_FOLLOW_WRITES="sync")
    http = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{http.server_port}"
    token = tokens.create_token("acme-counted", url=url).token

    def post(body: bytes, content_type: str = "application/json", auth: bool = True) -> int:
        headers = {"Content-Type": content_type}
        if auth:
            headers["Authorization"] = f"Bearer {token}"
        request = urllib.request.Request(
            base + "/api/v1/games", data=body, method="POST", headers=headers
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status
        except urllib.error.HTTPError as error:
            return error.code

    def scrape() -> str:
        with urllib.request.urlopen(base + "/metrics", timeout=30) as response:
            return response.read().decode()

    def counted(metrics: str) -> dict[str, float]:
        found = {"requests": sample(metrics, "rummy_ledger_import_requests_total", source="api")}
        for outcome in ("stored", "already_recorded", "rejected"):
            found[outcome] = sample(
                metrics, "rummy_ledger_games_imported_total", source="api", outcome=outcome
            )
        return {key: value or 0 for key, value in found.items()}

    try:
        before = counted(scrape())
        record = next(r for r in rest if r["game_id"] == "T9-000777")
        header = header_of(record)
        assert post(json.dumps(header).encode()) == 201  # stored
        assert post(json.dumps(header).encode()) == 201  # the same start again
        taken = dict(header, started_at="2030-01-01T00:00:00Z")
        assert post(json.dumps(taken).encode()) == 409  # the id is another game's
        assert post(b"game_id=x", "application/x-www-form-urlencoded") == 415
        assert post(json.dumps({"game_id": "X-1"}).encode()) == 400
        assert post(json.dumps(header).encode(), auth=False) == 401  # no operator: no game
        metrics = scrape()
    finally:
        http.shutdown()
        thread.join(timeout=10)
    after = counted(metrics)
    assert {key: after[key] - before[key] for key in after} == {
        "requests": 6,
        "stored": 1,
        "already_recorded": 1,
        "rejected": 3,
    }
    assert sample(metrics, "rummy_ledger_games_stored") == 2
    assert sample(metrics, "rummy_ledger_games_stored_by_source", source="api") == 1
    assert sample(metrics, "rummy_ledger_games_stored_by_source", source="import") == 1
