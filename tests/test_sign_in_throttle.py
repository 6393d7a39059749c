"""Sign-in throttling that holds (issue 13, finding 7): counted atomically, so parallel wrong
passwords get at most the limit checked against the hash; keyed per (username, address) and
per address, so bad tries from one address cannot lock the real user out from another; and
X-Forwarded-For believed only behind RUMMY_LEDGER_TRUSTED_PROXIES. On SQLite and PostgreSQL.
"""

from __future__ import annotations

import contextlib
import threading
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa
from auth_support import csrf_token

from replays.access import accounts
from replays.store.db import session_factory
from replays.store.schema import migrate
from web import create_app
from web.auth import trusted_proxies

PARALLEL = 40
RIGHT = "correct horse battery"


@pytest.fixture
def counted_checks(monkeypatch):
    """Every password checked against a hash, in order (thread-safe)."""
    checked: list[str] = []
    lock = threading.Lock()
    real = accounts.check_password_hash

    def counting(stored: str, password: str) -> bool:
        with lock:
            checked.append(password)
        return real(stored, password)

    monkeypatch.setattr(accounts, "check_password_hash", counting)
    return checked


def run_together(count: int, attempt) -> list:
    """Run ``attempt(i)`` on ``count`` threads released at once; their outcomes."""
    barrier = threading.Barrier(count)
    outcomes: list = [None] * count

    def run(i: int) -> None:
        barrier.wait()
        try:
            outcomes[i] = attempt(i)
        except Exception as error:  # the outcome is what the test looks at
            outcomes[i] = error

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return outcomes


def test_parallel_wrong_passwords_are_checked_at_most_the_limit(database_url, counted_checks):
    migrate(database_url)
    accounts.add_user("ann", "auditor", RIGHT, url=database_url)

    outcomes = run_together(
        PARALLEL,
        lambda i: accounts.authenticate(
            "ann", f"wrong guess {i}", remote_addr="192.0.2.7", url=database_url
        ),
    )

    throttled = [o for o in outcomes if isinstance(o, accounts.LoginThrottled)]
    assert [o for o in outcomes if o is not None and o not in throttled] == []
    assert len(counted_checks) <= accounts.MAX_FAILURES_PER_USER
    assert len(throttled) == PARALLEL - len(counted_checks)
    # ... and the right password from that address waits for the window too.
    with pytest.raises(
        accounts.LoginThrottled, match=r"too many failed sign-ins .*from 192\.0\.2\.7"
    ):
        accounts.authenticate("ann", RIGHT, remote_addr="192.0.2.7", url=database_url)


def test_parallel_wrong_passwords_on_the_site_are_checked_at_most_the_limit(
    database_url, counted_checks
):
    migrate(database_url)
    app = create_app({"DATABASE_URL": database_url, "TESTING": True})
    accounts.add_user("ann", "auditor", RIGHT, url=database_url)
    clients = [app.test_client() for _ in range(PARALLEL)]
    tokens = [csrf_token(c.get("/login").get_data(as_text=True)) for c in clients]

    def attempt(i: int) -> int:
        data = {"csrf_token": tokens[i], "username": "ann", "password": f"wrong guess {i}"}
        return clients[i].post("/login", data=data).status_code

    statuses = run_together(PARALLEL, attempt)
    assert len(counted_checks) <= accounts.MAX_FAILURES_PER_USER
    assert sorted(set(statuses)) == [401, 429] and statuses.count(401) == len(counted_checks)


def test_bad_tries_from_one_address_do_not_lock_the_user_out_from_another(database_url):
    migrate(database_url)
    accounts.add_user("ann", "auditor", RIGHT, url=database_url)
    start = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
    for _n in range(3 * accounts.MAX_FAILURES_PER_USER):
        with contextlib.suppress(accounts.LoginThrottled):
            accounts.authenticate(
                "ann", "guess", remote_addr="203.0.113.66", url=database_url, now=start
            )
    with pytest.raises(accounts.LoginThrottled):
        accounts.authenticate("ann", RIGHT, remote_addr="203.0.113.66", url=database_url, now=start)
    signed = accounts.authenticate(
        "ann", RIGHT, remote_addr="198.51.100.4", url=database_url, now=start
    )
    assert signed is not None and signed.username == "ann"
    # The user's own few mistakes from home are forgiven by their success...
    for _ in range(accounts.MAX_FAILURES_PER_USER - 1):
        accounts.authenticate(
            "ann", "typo", remote_addr="198.51.100.4", url=database_url, now=start
        )
    assert accounts.authenticate(
        "ann", RIGHT, remote_addr="198.51.100.4", url=database_url, now=start
    )
    for _ in range(accounts.MAX_FAILURES_PER_USER - 1):
        accounts.authenticate(
            "ann", "typo", remote_addr="198.51.100.4", url=database_url, now=start
        )
    assert accounts.authenticate(
        "ann", RIGHT, remote_addr="198.51.100.4", url=database_url, now=start
    )
    # ... and successes do not use up the address's budget (an office behind one NAT).
    for _n in range(accounts.MAX_FAILURES_PER_ADDRESS + 5):
        assert accounts.authenticate(
            "ann", RIGHT, remote_addr="198.51.100.4", url=database_url, now=start
        )
    # The attacker's address is free again once its window is over.
    later = start + accounts.FAILURE_WINDOW + timedelta(seconds=1)
    assert accounts.authenticate(
        "ann", RIGHT, remote_addr="203.0.113.66", url=database_url, now=later
    )


def _attempt(client, password: str, forwarded: str) -> int:
    token = csrf_token(client.get("/login").get_data(as_text=True))
    response = client.post(
        "/login",
        data={"csrf_token": token, "username": "ann", "password": password},
        headers={"X-Forwarded-For": forwarded},
    )
    return response.status_code


def _addresses(url: str) -> set[str]:
    with session_factory(url)() as session:
        return set(session.scalars(sa.select(accounts.LoginAttemptRow.remote_addr)))


def test_a_forged_forwarded_for_does_not_change_the_counted_address(database_url, monkeypatch):
    monkeypatch.delenv("RUMMY_LEDGER_TRUSTED_PROXIES", raising=False)
    migrate(database_url)
    accounts.add_user("ann", "auditor", RIGHT, url=database_url)
    client = create_app({"DATABASE_URL": database_url, "TESTING": True}).test_client()
    for n in range(accounts.MAX_FAILURES_PER_USER):
        assert _attempt(client, "guess", f"203.0.113.{n}") == 401
    # A fresh forged address per try changes nothing: the connection's address counts.
    assert _attempt(client, RIGHT, "198.51.100.99") == 429
    assert _addresses(database_url) == {"127.0.0.1"}


def test_behind_a_trusted_proxy_the_forwarded_address_counts(database_url, monkeypatch):
    monkeypatch.setenv("RUMMY_LEDGER_TRUSTED_PROXIES", "1")
    migrate(database_url)
    accounts.add_user("ann", "auditor", RIGHT, url=database_url)
    client = create_app({"DATABASE_URL": database_url, "TESTING": True}).test_client()
    for _ in range(accounts.MAX_FAILURES_PER_USER):
        assert _attempt(client, "guess", "203.0.113.66") == 401
    assert _attempt(client, RIGHT, "203.0.113.66") == 429
    assert _attempt(client, RIGHT, "198.51.100.4") == 302
    assert _addresses(database_url) == {"203.0.113.66", "198.51.100.4"}


@pytest.mark.parametrize("value", ["-1", "many", "11"])
def test_a_bad_trusted_proxies_setting_is_refused_with_its_name(monkeypatch, value):
    monkeypatch.setenv("RUMMY_LEDGER_TRUSTED_PROXIES", value)
    with pytest.raises(ValueError, match="RUMMY_LEDGER_TRUSTED_PROXIES"):
        trusted_proxies()
