"""The measurement processes as the runner sees them: a zygote (worker.py) and the one child it has forked for us,
talking in frames (8-byte little-endian length, then a pickle) over Unix sockets, every wait with a deadline."""
from __future__ import annotations

import os
import pickle
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .affinity import worker_env

WORKER_SCRIPT = Path(__file__).with_name("worker.py")


class WorkerDied(Exception):
    pass


class WorkerTimeout(Exception):
    pass


def send_frame(sock: socket.socket, msg: dict) -> None:
    """The worker frame protocol (every runner's): a little-endian length, then the pickled message."""
    data = pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(struct.pack("<Q", len(data)) + data)


def read_frame(sock: socket.socket, deadline: float) -> dict:
    """One frame; WorkerTimeout at the deadline, WorkerDied(None) when the other end is gone."""
    (size,) = struct.unpack("<Q", _read_exact(sock, 8, deadline))
    return pickle.loads(_read_exact(sock, size, deadline))


def _readable(sock: socket.socket, seconds: float) -> bool:
    """poll(), not select(): select fails on descriptors >= 1024, which a host process may well hand us."""
    poller = select.poll()
    poller.register(sock, select.POLLIN | select.POLLHUP | select.POLLERR)
    return bool(poller.poll(max(0, int(seconds * 1000) + 1)))


def _read_exact(sock: socket.socket, size: int, deadline: float) -> bytes:
    chunks, left = [], size
    while left:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not _readable(sock, remaining):
            raise WorkerTimeout()
        try:
            chunk = sock.recv(min(left, 1 << 20))
        except (ConnectionResetError, OSError):
            chunk = b""
        if not chunk:
            raise WorkerDied(None)
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


class WorkerProcess:
    """The zygote subprocess (see worker.py) and the one child it has forked for us at a time.

    Every request has a deadline. A child that crashes or is killed is reaped through the zygote, which knows
    how it died; the next request forks a new one, which costs milliseconds, not a Python start."""

    def __init__(self):
        self.log = tempfile.NamedTemporaryFile(prefix="ansorc-worker-", suffix=".log", delete=False)
        self.ctl, theirs = socket.socketpair()
        # Own session: a Ctrl-C meant for us does not hit a timing run; the zygote exits when its socket closes.
        # numpy's BLAS is never called in the worker; one thread keeps its idle pool off the kernels' cores.
        # And every CPU of this process, whatever the calling thread is bound to (affinity.py). OpenMP's team
        # only evicts cold inputs now (runtime/timer.c; kernels use their own pool, codegen/parallel.py): its
        # threads must sleep, not spin through the timed call beside the kernel's workers.
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", OMP_WAIT_POLICY="passive",
                   **worker_env())
        self.proc = subprocess.Popen([sys.executable, "-u", str(WORKER_SCRIPT), str(theirs.fileno())],
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
                                     pass_fds=(theirs.fileno(),), start_new_session=True, env=env)
        theirs.close()
        self.child: socket.socket | None = None
        self.child_pid: int | None = None
        self.log_offset = 0  # where the current child's part of the shared log starts

    def control(self, msg: dict, timeout: float) -> dict:
        """A request to the zygote. A zygote that does not answer in time is killed: its late reply would
        otherwise be read as the answer to the next request."""
        try:
            send_frame(self.ctl, msg)
            return read_frame(self.ctl, time.monotonic() + timeout)
        except WorkerTimeout:
            self.kill()
            raise WorkerDied(f"measurement zygote did not answer {msg['op']!r} in {timeout:g} s; killed") from None
        except (WorkerDied, OSError):
            raise WorkerDied(f"measurement zygote died ({self._zygote_status()})\n{self.log_tail()}") from None

    def _zygote_status(self) -> str:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "still running"
        return f"signal {-code}" if code < 0 else f"exit code {code}"

    def spawn(self, timeout: float = 30.0) -> None:
        """Fork a fresh child from the zygote."""
        mine, theirs = socket.socketpair()
        try:
            send_frame(self.ctl, {"op": "spawn"})
            socket.send_fds(self.ctl, [b"\0"], [theirs.fileno()])
            reply = read_frame(self.ctl, time.monotonic() + timeout)
        except (WorkerDied, WorkerTimeout, OSError) as exc:
            mine.close()
            self.kill()
            raise WorkerDied(f"measurement zygote failed to fork a worker ({exc!r}, zygote "
                              f"{self._zygote_status()})\n{self.log_tail()}") from None
        finally:
            theirs.close()
        if not reply.get("ok"):
            mine.close()
            raise WorkerDied(f"cannot start a measurement worker: {reply.get('error_msg')}")
        self.child, self.child_pid = mine, reply["pid"]
        self.log_offset = self._log_size()

    @property
    def child_alive(self) -> bool:
        return self.child is not None

    def request(self, msg: dict, deadline: float) -> dict:
        """Send to the child; the first frame of its reply (see read)."""
        try:
            send_frame(self.child, msg)
        except OSError:
            raise WorkerDied(self.end_child()) from None
        return self.read(deadline)

    def read(self, deadline: float) -> dict:
        try:
            return read_frame(self.child, deadline)
        except WorkerDied:
            raise WorkerDied(self.end_child()) from None

    def end_child(self) -> str:
        """Kill and reap the current child (killing first, so that the zygote's wait cannot block on a child
        that is still inside a kernel); returns how it ended and its part of the log."""
        if self.child is None:
            return ""
        sock, pid, self.child, self.child_pid = self.child, self.child_pid, None, None
        sock.close()
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            status = self.control({"op": "reap", "pid": pid}, 30.0).get("status", "ended")
        except (WorkerDied, WorkerTimeout):
            status = "ended"
        return f"worker {status}\n{self.log_tail(since=self.log_offset)}".strip()

    def _log_size(self) -> int:
        try:
            return os.path.getsize(self.log.name)
        except OSError:
            return 0

    def log_tail(self, chars: int = 1500, since: int = 0) -> str:
        try:
            with open(self.log.name, "rb") as f:
                f.seek(max(since, self._log_size() - chars))
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the zygote and every child it forked
        self.proc.wait()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.end_child()
            try:
                send_frame(self.ctl, {"op": "exit"})
            except OSError:
                pass
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                pass
            self.kill()  # children left over (a hung one being reaped) go with the group
        if self.child is not None:
            self.child.close()
            self.child = None
        self.ctl.close()
        self.log.close()
        os.unlink(self.log.name)
