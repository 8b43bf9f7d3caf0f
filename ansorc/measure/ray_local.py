"""A Ray cluster of separate `ray start` processes on the loopback address, for tests and benchmarks.

Each node gets its own temporary folder and ANSORC_CACHE_DIR (so nodes share no build cache, as separate
machines would not). Nodes are stopped, or killed as a failing machine would be, by the ids of their own
processes: those whose command line names the node's folder, and their descendants (the raylet's workers);
never `ray stop`, which would also end other users' clusters on this machine.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path


def _has_grpc() -> bool:
    import importlib.util
    return importlib.util.find_spec("grpc") is not None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _processes() -> dict:
    """pid -> (parent pid, command line) of every process this user can read."""
    out = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        out[int(entry.name)] = (int(stat.rsplit(")", 1)[1].split()[1]), cmd)
    return out


def processes_of(folder: str) -> list:
    """The processes whose command line names `folder`, and all their descendants."""
    procs = _processes()
    found = {pid for pid, (_, cmd) in procs.items() if folder in cmd and pid != os.getpid()}
    grew = True
    while grew:
        kids = {pid for pid, (ppid, _) in procs.items() if ppid in found} - found
        grew = bool(kids)
        found |= kids
    return sorted(found)


@dataclass
class Node:
    name: str
    folder: str
    resources: dict
    num_cpus: int
    killed: bool = False


@dataclass
class LocalCluster:
    """start() the head, add() workers, kill(name) one like a crashed machine, stop() everything."""
    python_path: str = ""          # PYTHONPATH for the nodes' workers (the checkout under test)
    root: str = field(default_factory=lambda: tempfile.mkdtemp(prefix="ar", dir="/tmp"))  # short: socket paths
    port: int = field(default_factory=free_port)
    # Ray Client's server on the head (ray://); `ray start` refuses the option where grpcio is missing
    client_port: int | None = field(default_factory=lambda: free_port() if _has_grpc() else None)
    nodes: dict = field(default_factory=dict)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def client_address(self) -> str | None:
        """ray://HOST:PORT of the head's Ray Client server, or None without grpcio (no server)."""
        return f"ray://127.0.0.1:{self.client_port}" if self.client_port else None

    def _ray_exe(self) -> str:
        exe = Path(sys.executable).with_name("ray")
        return str(exe) if exe.exists() else "ray"

    def _env(self, node: Node) -> dict:
        env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", ANSORC_CACHE_DIR=os.path.join(node.folder, "cache"))
        if self.python_path:
            env["PYTHONPATH"] = os.pathsep.join(p for p in (self.python_path, env.get("PYTHONPATH", "")) if p)
        return env

    def _start(self, node: Node, args: list) -> None:
        os.makedirs(node.folder, exist_ok=True)
        cmd = [self._ray_exe(), "start", "--node-ip-address", "127.0.0.1", "--num-cpus", str(node.num_cpus),
               "--resources", json.dumps(node.resources), "--temp-dir", node.folder, "--disable-usage-stats",
               "--object-store-memory", str(100 << 20), *args]
        proc = subprocess.run(cmd, env=self._env(node), capture_output=True, text=True, timeout=180)
        if proc.returncode != 0:
            raise RuntimeError(f"ray start failed for {node.name}: {proc.stdout[-1500:]}{proc.stderr[-1500:]}")
        self.nodes[node.name] = node

    def start(self, resources: dict | None = None, num_cpus: int = 1) -> str:
        node = Node("head", os.path.join(self.root, "head"), resources or {}, num_cpus)
        client = ["--ray-client-server-port", str(self.client_port)] if self.client_port else []
        self._start(node, ["--head", "--port", str(self.port), "--include-dashboard=false", *client])
        return self.address

    def add(self, name: str, resources: dict, num_cpus: int = 1) -> Node:
        node = Node(name, os.path.join(self.root, name), resources, num_cpus)
        self._start(node, ["--address", self.address])
        return node

    def kill(self, name: str) -> list:
        """SIGKILL every process of the node (raylet, agents, workers, their measurement processes)."""
        node = self.nodes[name]
        pids = processes_of(node.folder + os.sep)
        if name == "head":
            pids += self._client_server()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        node.killed = True
        return pids

    def _client_server(self) -> list:
        """The head's Ray Client server: `ray start` leaves it an orphan whose command line names the GCS address
        but not the node's folder, so processes_of misses it."""
        if not self.client_port:
            return []
        marks = ("ray.util.client.server", f":{self.port} ", f"--port={self.client_port} ")
        return [pid for pid, (_, cmd) in _processes().items() if all(m in cmd + " " for m in marks)]

    def stop(self) -> None:
        for name in [n for n in self.nodes if n != "head"] + ["head"]:
            if name in self.nodes:
                self.kill(name)
        time.sleep(0.2)
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> "LocalCluster":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


__all__ = ["LocalCluster", "Node", "free_port", "processes_of"]
