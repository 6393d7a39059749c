"""What an import makes PostgreSQL do, per game: the backend's CPU, WAL bytes, statements.

Not one of ``python -m bench``'s benchmarks (it needs a PostgreSQL of its own, with
``pg_stat_statements`` preloaded, on this machine: issue 31's figures for the primary's
backend while it imports). For each checkout given, in turn and ``--rounds`` times: a fresh
schema, ``rummy-ledger db upgrade``, then ``rummy-ledger import FILE --batch N`` with that
checkout's code, measured:

- the import's backends' CPU (``/proc`` of every backend named by the run's
  ``application_name``, sampled until they end), and with ``--pgdata`` every process of
  the cluster (the postmaster's reaped children included);
- WAL bytes (``pg_current_wal_lsn`` before and after: the cluster must be otherwise idle);
- statements (``pg_stat_statements``: the client's and the server's own foreign-key
  checks; each statement's calls, rows and WAL go to ``--out``);
- the client's CPU (the import process);
- with ``--callgrind DIR``: the backends' instructions, when the postmaster runs under
  ``valgrind --tool=callgrind --callgrind-out-file=DIR/cg.%p`` (forked backends are
  traced): the figure that a loaded machine does not blur;
- a hash of every table after the import, so that two checkouts can be shown to store the
  same rows (a snapshot's own wall-clock timestamp and ``projection_positions.updated_at``
  left out).

    python -m bench._import_backend --base postgresql://postgres@127.0.0.1:5477/test \\
        --pgdata /srv/pg/data games.jsonl /tmp/old-checkout .
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def _cpu(pid: int, children: bool = False) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    if children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / TICK


def _cluster_cpu(pgdata: str) -> float:
    postmaster = int(Path(pgdata, "postmaster.pid").read_text().split()[0])
    total = _cpu(postmaster, children=True)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            if int(stat.rsplit(")", 1)[1].split()[1]) == postmaster:
                total += _cpu(int(entry))
        except (FileNotFoundError, ProcessLookupError, IndexError):
            pass
    return total


def table_hashes(connection, schema: str) -> dict[str, list]:
    """Each table's md5 over its rows' text in order, and its row count."""
    hashes = {}
    tables = connection.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = %s ORDER BY 1",
        (schema,),
    ).fetchall()
    for (table,) in tables:
        source = f'"{schema}"."{table}"'
        if table == "ledger_snapshots":
            source = (
                "(SELECT originator_id, originator_version, topic, regexp_replace("
                "encode(state, 'escape'), '^[{]\"timestamp\":[{][^}]*[}]', '') AS state "
                f"FROM {source})"
            )
        elif table == "projection_positions":
            source = f"(SELECT name, position, events_applied FROM {source})"
        digest, count = connection.execute(
            "SELECT md5(coalesce(string_agg(x::text, E'\\n' ORDER BY x::text), '')), "
            f"count(*) FROM {source} x"
        ).fetchone()
        hashes[table] = [digest, count]
    return hashes


def measure(args, checkout: str) -> dict:
    import psycopg

    schema = "imp_" + uuid.uuid4().hex[:10]
    name = "imp_" + schema[-8:]
    monitor = psycopg.connect(args.base, autocommit=True)
    monitor.execute(f'CREATE SCHEMA "{schema}"')
    url = args.base.replace("postgresql://", "postgresql+psycopg://", 1)
    url += f"?application_name={name}&options=-csearch_path%3D{schema}"
    env = dict(os.environ, RUMMY_LEDGER_DATABASE_URL=url, PYTHONPATH=checkout)
    command = str(Path(sys.executable).parent / "rummy-ledger")
    subprocess.run([command, "db", "upgrade"], cwd=checkout, env=env, check=True, text=True)
    monitor.execute("CHECKPOINT")
    backends: dict[int, float] = {}
    stop = threading.Event()

    def sample() -> None:
        with psycopg.connect(args.base, autocommit=True) as sampler:
            while not stop.is_set():
                for (pid,) in sampler.execute(
                    "SELECT pid FROM pg_stat_activity WHERE application_name = %s", (name,)
                ).fetchall():
                    with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                        backends[pid] = _cpu(pid)
                time.sleep(0.02)

    monitor.execute("SELECT pg_stat_statements_reset()")
    lsn = monitor.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
    cluster = _cluster_cpu(args.pgdata) if args.pgdata else 0.0
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    thread = threading.Thread(target=sample)
    thread.start()
    started = time.monotonic()
    run = subprocess.run(
        [command, "import", args.file, "--batch", str(args.batch)],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    time.sleep(0.1)
    stop.set()
    thread.join()
    cluster = (_cluster_cpu(args.pgdata) - cluster) if args.pgdata else None
    wal = monitor.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s)", (lsn,)).fetchone()[0]
    statements = monitor.execute(
        "SELECT calls, rows, wal_bytes, query FROM pg_stat_statements "
        "WHERE query NOT ILIKE '%%pg_stat%%' AND query NOT ILIKE '%%pg_current_wal%%' "
        "AND query NOT ILIKE '%%pg_wal_lsn%%' ORDER BY calls DESC"
    ).fetchall()
    # The server's own: a foreign key's check, one a child row.
    foreign_key_checks = sum(
        row[0] for row in statements if " FROM ONLY " in row[3] and "FOR KEY SHARE" in row[3]
    )
    hashes = table_hashes(monitor, schema)
    monitor.execute(f'DROP SCHEMA "{schema}" CASCADE')
    monitor.close()
    if run.returncode:
        raise SystemExit(f"{checkout}: import failed\n{run.stdout}\n{run.stderr}")
    games = int(run.stdout.split(" imported")[0].split()[-1])
    calls = sum(row[0] for row in statements)
    result = {
        "checkout": checkout,
        "games": games,
        "wall_s": round(wall, 2),
        "client_cpu_s": round(
            after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 2
        ),
        "backend_cpu_ms_a_game": round(1000 * sum(backends.values()) / games, 3),
        "cluster_cpu_ms_a_game": round(1000 * cluster / games, 3) if cluster is not None else None,
        "wal_bytes_a_game": round(wal / games),
        "statements_a_game": round(calls / games, 2),
        "client_statements_a_game": round((calls - foreign_key_checks) / games, 2),
        "hashes": hashes,
        "statements": [[int(c), int(r), int(w), q[:200]] for c, r, w, q in statements],
    }
    if args.callgrind:
        time.sleep(2)  # a traced backend writes its file as it exits
        instructions = 0
        for pid in backends:
            for line in Path(args.callgrind, f"cg.{pid}").read_text().splitlines():
                if line.startswith("summary:"):
                    instructions += int(line.split()[1])
        result["backend_instructions_a_game"] = round(instructions / games)
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("file", help="JSON Lines records (rummy-ledger simulate --out)")
    parser.add_argument("checkouts", nargs="+", help="source trees to compare, in turn")
    parser.add_argument("--base", required=True, help="postgresql:// URL of the database")
    parser.add_argument("--pgdata", help="the cluster's data directory (its CPU)")
    parser.add_argument("--callgrind", help="where the traced postmaster's cg.PID files go")
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", help="every run's result, as JSON")
    args = parser.parse_args(argv)
    results = []
    for _ in range(args.rounds):
        for checkout in args.checkouts:
            result = measure(args, os.path.abspath(checkout))
            results.append(result)
            shown = {k: v for k, v in result.items() if k not in ("hashes", "statements")}
            print(json.dumps(shown), flush=True)
    first = results[0]["hashes"]
    for result in results[1:]:
        differ = sorted(t for t in first if result["hashes"].get(t) != first[t])
        print(f"{result['checkout']}: tables that differ from the first run's: {differ}")
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
