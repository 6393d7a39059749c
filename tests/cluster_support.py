"""Real PostgreSQL clusters for the ``cluster`` tests: pg_auto_failover (Debian's
``postgresql-15-auto-failover`` and ``pg-auto-failover-cli``, installed by ``.ci/run``) with a
monitor, a primary and a synchronous standby, each in a temporary directory on a free port,
run as the ``postgres`` user (pg_autoctl refuses root).

:class:`Cluster` starts one on loopback; with ``netns=True`` each node is its own host in a
network namespace (``ip netns``) joined to this one by veth pairs on a switch (a bridge in
a namespace of its own, so the host's firewall never sees the traffic), with addresses in a
private /29 the fixture creates and removes; :meth:`Cluster.cut` takes a node's link down.

Nothing here targets an address the fixture did not create. Every process it starts is
killed by its own pid at the end.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

CI = os.environ.get("CI") == "true"
CLUSTER_DB = "test"

# Failover in seconds rather than the defaults' half a minute: the monitor checks each node
# every second and gives up on it after two; a primary that cannot reach the monitor
# demotes itself after network_partition_timeout (set per node below).
MONITOR_SETTINGS = {
    "pgautofailover.health_check_period": "1000",
    "pgautofailover.health_check_timeout": "1000",
    "pgautofailover.health_check_max_retries": "1",
    "pgautofailover.health_check_retry_delay": "500",
    "pgautofailover.node_considered_unhealthy_timeout": "2000",
    "pgautofailover.primary_demote_timeout": "4000",
    "pgautofailover.startup_grace_period": "1000",
}


def pg_bindir() -> Path | None:
    """The PostgreSQL whose server has the pgautofailover extension."""
    for control in sorted(glob.glob("/usr/share/postgresql/*/extension/pgautofailover.control")):
        bindir = Path("/usr/lib/postgresql") / Path(control).parts[4] / "bin"
        if (bindir / "postgres").exists():
            return bindir
    return None


def missing() -> str | None:
    """Why the cluster tests cannot run here, or None."""
    if shutil.which("pg_autoctl") is None or pg_bindir() is None:
        return "pg_auto_failover is not installed (.ci/run installs it)"
    if os.geteuid() != 0:
        return "the cluster tests run as root (they start servers as postgres, and netns)"
    try:
        import pwd

        pwd.getpwnam("postgres")
    except KeyError:
        return "no postgres user"
    return None


def require() -> None:
    reason = missing()
    if reason is None:
        return
    if CI:
        pytest.fail(f"cluster tests must run in CI: {reason}")
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run(command: list[str], *, check: bool = True, timeout: float = 120, **kwargs):
    done = subprocess.run(command, timeout=timeout, capture_output=True, text=True, **kwargs)
    if check and done.returncode != 0:
        raise AssertionError(
            f"{' '.join(command[-12:])} failed ({done.returncode}):\n{done.stderr[-3000:]}"
        )
    return done


@dataclass
class Node:
    name: str
    host: str
    port: int
    pgdata: Path
    netns: str | None = None
    process: subprocess.Popen | None = None
    log: Path | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def postmaster_pid(self) -> int | None:
        try:
            return int((self.pgdata / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None


@dataclass
class _Network:
    """veth pairs on a bridge in a switch namespace; the root end of one pair is ours."""

    prefix: str
    subnet: int
    namespaces: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)

    def address(self, index: int) -> str:
        return f"10.231.{self.subnet}.{index}"

    @classmethod
    def create(cls, count: int) -> _Network:
        used = run(["ip", "-4", "addr"]).stdout
        subnet = next(
            n for n in [os.getpid() % 200 + 20, *range(20, 250)] if f"10.231.{n}." not in used
        )
        net = cls(prefix=f"rl{os.getpid() % 100000}", subnet=subnet)
        switch = f"{net.prefix}sw"
        net._ip("netns", "add", switch)
        net.namespaces.append(switch)
        net._ip("-n", switch, "link", "add", "br0", "type", "bridge")
        net._ip("-n", switch, "link", "set", "br0", "up")
        # The root end: this process (the app, the tests) and the monitor live here.
        root = f"{net.prefix}r"
        net._pair(root, switch, None)
        net._ip("addr", "add", f"{net.address(1)}/29", "dev", f"{root}0")
        net._ip("link", "set", f"{root}0", "up")
        net.links.append(f"{root}0")
        for index in range(count):
            space = f"{net.prefix}n{index}"
            net._ip("netns", "add", space)
            net.namespaces.append(space)
            net._ip("-n", space, "link", "set", "lo", "up")
            net._pair(f"{space}", switch, space)
            net._ip("-n", space, "addr", "add", f"{net.address(index + 2)}/29", "dev", f"{space}0")
            net._ip("-n", space, "link", "set", f"{space}0", "up")
        return net

    def _pair(self, name: str, switch: str, inside: str | None) -> None:
        self._ip("link", "add", f"{name}0", "type", "veth", "peer", "name", f"{name}1")
        self._ip("link", "set", f"{name}1", "netns", switch)
        self._ip("-n", switch, "link", "set", f"{name}1", "master", "br0")
        self._ip("-n", switch, "link", "set", f"{name}1", "up")
        if inside is not None:
            self._ip("link", "set", f"{name}0", "netns", inside)

    @staticmethod
    def _ip(*args: str) -> None:
        run(["ip", *args])

    def namespace(self, index: int) -> str:
        return f"{self.prefix}n{index}"

    def cut(self, index: int) -> None:
        """Take node ``index``'s only link down, from inside its namespace."""
        space = self.namespace(index)
        self._ip("-n", space, "link", "set", f"{space}0", "down")

    def mend(self, index: int) -> None:
        space = self.namespace(index)
        self._ip("-n", space, "link", "set", f"{space}0", "up")

    def remove(self) -> None:
        for link in self.links:
            run(["ip", "link", "del", link], check=False)
        for space in reversed(self.namespaces):
            run(["ip", "netns", "del", space], check=False)


def pinned(command: list[str], cpus: str | None) -> list[str]:
    """``command`` held to the CPUs ``cpus`` (``taskset -c`` syntax: "0", "1", "0-1"); its
    children (PostgreSQL's backends, forked from the postmaster) inherit the pinning."""
    return ["taskset", "-c", cpus, *command] if cpus else command


class Cluster:
    """A pg_auto_failover formation: a monitor, ``node1`` (the first primary) and ``node2``
    (its synchronous standby).

    ``cpus`` pins a node's processes (its keeper, its postmaster and every backend) to some
    CPUs, by name (``{"monitor": "0", "node1": "0", "node2": "1"}``): one core stands for one
    host, so a bench can give the standby a host of its own on one machine."""

    def __init__(self, *, netns: bool = False, cpus: dict[str, str] | None = None):
        self.cpus = dict(cpus or {})
        self.bindir = pg_bindir()
        self.root = Path(tempfile.mkdtemp(prefix="rummy-cluster-"))
        os.chmod(self.root, 0o755)
        shutil.chown(self.root, "postgres", "postgres")
        self.network = _Network.create(2) if netns else None
        monitor_host = self.network.address(1) if self.network else "127.0.0.1"
        self.monitor = Node("monitor", monitor_host, free_port(), self.root / "monitor")
        self.nodes = []
        for index in range(2):
            host = self.network.address(index + 2) if self.network else "127.0.0.1"
            space = self.network.namespace(index) if self.network else None
            self.nodes.append(
                Node(f"node{index + 1}", host, free_port(), self.root / f"node{index + 1}", space)
            )
        self._processes: list[subprocess.Popen] = []

    # -- running pg_autoctl as postgres -----------------------------------------------------
    def _env(self) -> dict[str, str]:
        return {
            "PATH": f"{self.bindir}:/usr/bin:/bin",
            "PG_CONFIG": str(self.bindir / "pg_config"),
            "XDG_CONFIG_HOME": str(self.root / "config"),
            "XDG_DATA_HOME": str(self.root / "data"),
            "XDG_RUNTIME_DIR": str(self.root / "run"),
            "HOME": str(self.root),
            "LANG": "C.UTF-8",
        }

    def _command(self, node: Node, args: list[str]) -> list[str]:
        env = [f"{key}={value}" for key, value in self._env().items()]
        command = ["runuser", "-u", "postgres", "--", "env", "-i", *env, "pg_autoctl", *args]
        if node.netns:
            command = ["ip", "netns", "exec", node.netns, *command]
        return pinned(command, self.cpus.get(node.name))

    def autoctl(self, node: Node, *args: str, check: bool = True, timeout: float = 120):
        return run(self._command(node, list(args)), check=check, timeout=timeout)

    def _start(self, node: Node) -> None:
        node.log = self.root / f"{node.name}.run.log"
        with open(node.log, "ab") as out:
            node.process = subprocess.Popen(
                self._command(node, ["run", "--pgdata", str(node.pgdata)]),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self._processes.append(node.process)

    # -- building ----------------------------------------------------------------------------
    def start(self) -> Cluster:
        common = ["--auth", "trust", "--no-ssl"]
        if self.network:
            common.append("--pg-hba-lan")
        self.autoctl(
            self.monitor,
            "create", "monitor", "--pgdata", str(self.monitor.pgdata),
            "--pgport", str(self.monitor.port), "--hostname", self.monitor.host,
            "--auth", "trust", "--no-ssl",
        )  # fmt: skip
        self._start(self.monitor)
        self._wait(lambda: self._sql(self.monitor, "SELECT 1", db="pg_auto_failover") == "1", 30)
        # One -c each: ALTER SYSTEM refuses to run inside a transaction block.
        statements = [f"ALTER SYSTEM SET {k} = '{v}'" for k, v in MONITOR_SETTINGS.items()]
        applied = self._sql(self.monitor, [*statements, "SELECT pg_reload_conf()"],
                            db="pg_auto_failover")  # fmt: skip
        assert applied == "t", f"the monitor refused its settings\n{self.logs()}"
        monitor_uri = (
            f"postgres://autoctl_node@{self.monitor.address}/pg_auto_failover?sslmode=disable"
        )
        for node in self.nodes:
            self.autoctl(
                node,
                "create", "postgres", "--pgdata", str(node.pgdata), "--pgport", str(node.port),
                "--hostname", node.host, "--name", node.name, "--dbname", CLUSTER_DB,
                "--monitor", monitor_uri, *common,
            )  # fmt: skip
            # A primary cut off from the monitor demotes itself after this long.
            self.autoctl(
                node, "config", "set", "--pgdata", str(node.pgdata),
                "timeout.network_partition_timeout", "3",
            )  # fmt: skip
            self._start(node)
            if node is self.nodes[0]:
                self.wait_state({node.name: "single"}, timeout=60)
        self.wait_state({"node1": "primary", "node2": "secondary"}, timeout=90)
        return self

    # -- looking -----------------------------------------------------------------------------
    def _sql(self, node: Node, sql: str | list[str], db: str = CLUSTER_DB) -> str | None:
        # The monitor's own rules let only its nodes in from the network: ask it on loopback.
        host = "127.0.0.1" if node is self.monitor else node.host
        command = [
            str(self.bindir / "psql"), "-X", "-qAt", "-h", host, "-p", str(node.port),
            "-U", "postgres", "-d", db,
        ]  # fmt: skip
        for statement in [sql] if isinstance(sql, str) else sql:
            command += ["-c", statement]
        found = run(command, check=False, timeout=15, env={"PGCONNECT_TIMEOUT": "3"})
        return found.stdout.strip() if found.returncode == 0 else None

    def states(self) -> dict[str, str]:
        """Each node's reported state, from the monitor."""
        rows = self._sql(
            self.monitor,
            "SELECT nodename, reportedstate FROM pgautofailover.node ORDER BY nodeid",
            db="pg_auto_failover",
        )
        found = {}
        for line in (rows or "").splitlines():
            name, _, state = line.partition("|")
            found[name] = state
        return found

    def wait_state(self, wanted: dict[str, str], timeout: float) -> None:
        self._wait(lambda: all(self.states().get(k) == v for k, v in wanted.items()), timeout,
                   what=f"states {wanted}")  # fmt: skip

    def _wait(self, ready, timeout: float, what: str = "the cluster") -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ready():
                return
            time.sleep(0.25)
        raise AssertionError(f"{what} not reached in {timeout:g} s: {self.states()}\n{self.logs()}")

    def logs(self) -> str:
        tails = []
        for node in [self.monitor, *self.nodes]:
            if node.log and node.log.exists():
                lines = node.log.read_text(errors="replace").splitlines()[-15:]
                tails.append(f"--- {node.name}\n" + "\n".join(lines))
        return "\n".join(tails)

    def node(self, name: str) -> Node:
        return next(node for node in self.nodes if node.name == name)

    def primary(self) -> Node | None:
        states = self.states()
        for node in self.nodes:
            if states.get(node.name) in ("primary", "wait_primary", "single"):
                return node
        return None

    def sql(self, node: Node, sql: str) -> str | None:
        return self._sql(node, sql)

    # -- URLs --------------------------------------------------------------------------------
    def url(self, *, attrs: str = "read-write", nodes: list[Node] | None = None) -> str:
        """A libpq multi-host URL over ``nodes`` (default: both), as an operator writes it."""
        hosts = ",".join(node.address for node in nodes or self.nodes)
        return f"postgresql://postgres@{hosts}/{CLUSTER_DB}?target_session_attrs={attrs}"

    def read_url(self) -> str:
        return self.url(attrs="prefer-standby")

    # -- faults ------------------------------------------------------------------------------
    def kill(self, node: Node) -> None:
        """SIGKILL the node: its postmaster and its pg_autoctl (which would otherwise start
        the postmaster again on the same host, and no failover would be needed)."""
        pid = node.postmaster_pid()
        if node.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(node.process.pid, signal.SIGKILL)
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if node.process is not None:
            node.process.wait(timeout=10)

    def stop_postgres(self, node: Node) -> None:
        """Stop a node for good (its keeper too): ``pg_autoctl stop`` then a kill."""
        self.autoctl(node, "stop", "--pgdata", str(node.pgdata), check=False, timeout=30)
        if node.process is not None:
            try:
                node.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill(node)

    def cut(self, node: Node) -> None:
        assert self.network is not None, "cut() needs Cluster(netns=True)"
        self.network.cut(self.nodes.index(node))

    # -- ending ------------------------------------------------------------------------------
    def close(self) -> None:
        for process in self._processes:
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGQUIT)
        deadline = time.monotonic() + 10
        for process in self._processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
        for node in [self.monitor, *self.nodes]:
            pid = node.postmaster_pid()
            if node.process is not None and node.process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(node.process.pid, signal.SIGKILL)
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        if self.network is not None:
            self.network.remove()
        shutil.rmtree(self.root, ignore_errors=True)


class SingleServer:
    """One plain PostgreSQL server (no replication, no HA manager) in a temporary directory on
    a free loopback port, run as ``postgres`` and pinned to ``cpus``: the "idle single
    server" a replica's page is compared with (bench/cluster_failover.py)."""

    def __init__(self, *, cpus: str | None = None):
        self.bindir = pg_bindir() or _any_bindir()
        self.cpus = cpus
        self.root = Path(tempfile.mkdtemp(prefix="rummy-single-"))
        os.chmod(self.root, 0o755)
        shutil.chown(self.root, "postgres", "postgres")
        self.pgdata = self.root / "data"
        self.port = free_port()
        self.started = False

    def _as_postgres(self, *command: str, timeout: float = 120):
        line = ["runuser", "-u", "postgres", "--", *command]
        return run(pinned(line, self.cpus), timeout=timeout)

    def start(self) -> SingleServer:
        self._as_postgres(str(self.bindir / "initdb"), "-D", str(self.pgdata), "-A", "trust",
                          "-U", "postgres", "--no-sync")  # fmt: skip
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1"
        self._as_postgres(str(self.bindir / "pg_ctl"), "-D", str(self.pgdata), "-o", options,
                          "-l", str(self.root / "server.log"), "-w", "start")  # fmt: skip
        self.started = True
        self._as_postgres(str(self.bindir / "createdb"), "-h", "127.0.0.1", "-p", str(self.port),
                          CLUSTER_DB)  # fmt: skip
        return self

    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{CLUSTER_DB}"

    def close(self) -> None:
        if self.started:
            self._as_postgres(str(self.bindir / "pg_ctl"), "-D", str(self.pgdata), "-m", "immediate",
                              "-w", "stop")  # fmt: skip
            self.started = False
        shutil.rmtree(self.root, ignore_errors=True)


def _any_bindir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
    if not found:
        raise AssertionError("no PostgreSQL server installed")
    return Path(found[-1]).parent
