"""RayBackend: a MeasureBackend whose builds and measurements run on the nodes of a Ray cluster.

Builds are Ray tasks on any node with CPUs (the library's bytes stay in that node's object store until a
runner needs them). Measurement runs in one NodeRunner actor per node advertising the target's resource
(ray_nodes.target_resource), one candidate at a time per machine. The driver hands out candidates one per call
(two queued per runner, so none waits for the driver) and collects each result once: a runner whose node dies
has its unanswered candidates sent to another, and a late or repeated answer is dropped, so the tuner (which
alone writes the log) gets exactly one result per candidate. Usage statistics stay off.

Besides build() and run(), the backend takes whole batches asynchronously (measure.backend.BatchBackend):
submit() starts a batch's builds and returns, wait() and collect() hand back complete batches, so several
batches (of different tasks) are built and measured at once while the driver searches. One event loop (_pump)
serves them all: build results become candidates ready to measure, free runners take from the batch they last
measured (no task switch) or else the oldest (ray_batches.pick).
"""
from __future__ import annotations

import os
import socket
import time
from collections import Counter, OrderedDict
from dataclasses import dataclass, field, replace
from typing import Sequence

from ansorc.codegen.source import Source
from ansorc.codegen.target import Target
from ansorc.errors import AnsorcError
from ansorc.measure.builder import DEFAULT_BUILD_TIMEOUT, BuildResult
from ansorc.measure.errors import MeasureErrorNo
from ansorc.measure.ray_batches import Batch, pick
from ansorc.measure.ray_nodes import (NODE_BUILT, Item, NodeRunner, build_for_cluster, node_builds,
                                      portable_flags, target_resource)
from ansorc.measure.runner import MeasureResult, RunnerConfig
from ansorc.measure.task import MeasureTask

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")   # before ray is imported: no outbound traffic
CLIENT_INIT_ATTEMPTS = 3   # tries of ray.init when the head's client server fails to set this client up


class ClusterError(AnsorcError, RuntimeError):
    """The Ray cluster cannot be reached, or no live node can measure the target."""


@dataclass(frozen=True)
class RayOptions:
    """runner: how each node's runner times and checks; flags / cc: the build (None: the target's, made
    portable); node_wait: seconds to wait for a node offering the target when none is alive; in_flight:
    candidates queued per runner; keep_libraries: references to built libraries the driver keeps (a batch's
    are needed until its run; older ones are released from the nodes' object stores)."""
    runner: RunnerConfig = field(default_factory=RunnerConfig)
    flags: tuple | None = None
    cc: str | None = None
    build_timeout: float = DEFAULT_BUILD_TIMEOUT
    node_wait: float = 60.0
    in_flight: int = 2
    keep_libraries: int = 512


def _ray():
    try:
        import ray
    except ImportError:
        raise ClusterError("distributed tuning needs Ray: pip install 'ansorc[ray]'") from None
    return ray


def _lost_errors(ray) -> tuple:
    """The exceptions that mean a node or worker went away (not the candidate's fault)."""
    ex = ray.exceptions
    names = ("RayActorError", "ActorDiedError", "ActorUnavailableError", "WorkerCrashedError", "NodeDiedError",
             "ObjectLostError", "OwnerDiedError", "ObjectFetchTimedOutError", "LocalRayletDiedError")
    return tuple(getattr(ex, n) for n in names if hasattr(ex, n))


def connect(address: str | None) -> bool:
    """ray.init on `address` ("auto", "HOST:PORT", "ray://HOST:PORT") unless already connected; True if this
    call connected (the backend then disconnects on close)."""
    ray = _ray()
    if ray.is_initialized():
        return False
    _check_reachable(address)
    if str(address).startswith("ray://") and not client_available():
        raise ClusterError(f"{address}: ray:// addresses need Ray Client (grpcio): pip install 'ansorc[ray]', or "
                           "give the head's HOST:PORT from a machine inside the cluster")
    env = {"RAY_USAGE_STATS_ENABLED": "0"}
    kwargs = {} if str(address).startswith("ray://") else {"include_dashboard": False}
    for attempt in range(CLIENT_INIT_ATTEMPTS):
        try:
            ray.init(address=address, runtime_env={"env_vars": env}, log_to_driver=False,
                     logging_level="WARNING", **kwargs)
            break
        except (ConnectionError, RuntimeError, ValueError, ImportError) as exc:
            # a busy head's client server can fail to start this client's proxy in time ("Initialization
            # failure from server", seen once in a 22-minute test run): that one is worth another try
            if "Initialization failure" in str(exc) and attempt + 1 < CLIENT_INIT_ATTEMPTS:
                time.sleep(2.0 * (attempt + 1))
                continue
            raise ClusterError(f"cannot connect to the Ray cluster at {address!r}: "
                               f"{(str(exc).splitlines() or [type(exc).__name__])[0]}") from None
    return True


def client_available() -> bool:
    """Whether Ray Client (ray://) can work here: it needs grpcio, which ray[client] brings."""
    import importlib.util
    return importlib.util.find_spec("grpc") is not None


def _check_reachable(address: str | None, timeout: float = 5.0) -> None:
    """A HOST:PORT nobody listens on fails here at once (ray.init would retry it for minutes)."""
    text = str(address or "auto")
    if text == "auto" or text == "local":
        return
    host, _, port = text.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise ClusterError(f"cluster address {text!r}: expected HOST:PORT, ray://HOST:PORT or auto")
    try:
        socket.create_connection((host, int(port)), timeout).close()
    except OSError as exc:
        raise ClusterError(f"cannot connect to the Ray cluster at {text!r}: {exc}") from None


class RayBackend:
    """Measures `target`'s candidates on the cluster at `address` (see the module docstring). The caller closes
    it; one backend serves every task of a session, as LocalBackend does."""

    def __init__(self, address: str | None = "auto", target: str = "native", options: RayOptions | None = None):
        self.target, self.options = target, options or RayOptions()
        self.ray = _ray()
        self.resource = target_resource(target)
        self.node_built = node_builds(target)
        if not self.node_built:
            tgt = Target.from_name(target)
            self.flags = tuple(self.options.flags or portable_flags(target))
            self.cc = self.options.cc or tgt.cc
        self.owns_connection = connect(address)
        self._build_remote = self.ray.remote(num_cpus=1, max_retries=3)(build_for_cluster).options(num_returns=3)
        self._actor_class = self.ray.remote(NodeRunner)
        self.runners: dict = {}            # node id -> actor handle
        self.lost_nodes: set = set()       # nodes whose runner died: the cluster may report them alive a while
        self._libs: OrderedDict = OrderedDict()   # driver lib key -> (digest, ObjectRef of the bytes)
        self._task: tuple | None = None    # (MeasureTask, key, boxed ObjectRef) of the latest batch
        self._tasks: OrderedDict = OrderedDict()   # task key -> (MeasureTask, key, boxed ObjectRef)
        self._batches: dict = {}           # handle -> Batch, submitted and not yet collected
        self._refs: dict = {}              # ObjectRef -> ("build" | "measure", handle, index, extra)
        self._affinity: dict = {}          # node id -> handle of the batch it last measured for
        self._next_handle = 0
        self.batch_times: dict = {}        # handle -> BatchTimes (submitted, done)
        self.peak_batches = 0              # most batches measured on the nodes at one moment
        self.reassigned = 0                # candidates re-sent after their runner's node died
        self.measured_by: Counter = Counter()   # node id -> candidates it measured
        self._lost = _lost_errors(self.ray)
        self._refresh_runners()

    # -- builds --------------------------------------------------------------------------------------------
    def build(self, sources: Sequence[Source]) -> list[BuildResult]:
        if self.node_built:   # built by the measuring node itself, where its compiler is
            return [BuildResult(s, NODE_BUILT + s.key, MeasureErrorNo.NO_ERROR, "", 0.0) for s in sources]
        ray, opts = self.ray, self.options
        # (result, digest, bytes) each: the driver reads the first two; the bytes stay where they were built
        refs = [self._build_remote.remote(s, self.flags, self.cc, opts.build_timeout) for s in sources]
        out = []
        for src, (res_ref, digest_ref, data_ref) in zip(sources, refs):
            try:
                res, digest = ray.get([res_ref, digest_ref])
            except (*self._lost, ray.exceptions.RayTaskError) as exc:   # retried by Ray, still failing
                msg = f"build failed on the cluster: {(str(exc).splitlines() or [''])[0]}"
                out.append(BuildResult(src, None, MeasureErrorNo.UNKNOWN_ERROR, msg, 0.0))
                continue
            res = replace(res, source=src)
            if res.ok:
                res = replace(res, lib_path=f"ray:{digest}")
                self._keep(res.lib_path, digest, data_ref)
            out.append(res)
        return out

    def _keep(self, key: str, digest: str, ref) -> None:
        self._libs[key] = (digest, ref)
        self._libs.move_to_end(key)
        while len(self._libs) > self.options.keep_libraries:
            self._libs.popitem(last=False)

    def _item(self, build: BuildResult) -> Item:
        if build.ok and build.lib_path in self._libs:
            digest, ref = self._libs[build.lib_path]
            return Item(build, digest, (ref,))
        if build.ok and not str(build.lib_path).startswith(NODE_BUILT):
            return Item(replace(build, lib_path=None, error_code=MeasureErrorNo.UNKNOWN_ERROR,
                                error_msg="library not built by this RayBackend"))
        return Item(build)

    # -- runners -------------------------------------------------------------------------------------------
    def _refresh_runners(self) -> None:
        """One runner actor on each live node that offers the target and has none yet."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
        alive = {n["NodeID"] for n in self.ray.nodes() if n.get("Alive")
                 and n.get("Resources", {}).get(self.resource, 0) > 0} - self.lost_nodes
        for node_id in [n for n in self.runners if n not in alive]:
            del self.runners[node_id]
        for node_id in alive - set(self.runners):
            strategy = NodeAffinitySchedulingStrategy(node_id, soft=False)
            self.runners[node_id] = self._actor_class.options(
                num_cpus=0, resources={self.resource: 0.001}, scheduling_strategy=strategy, max_restarts=0,
                max_task_retries=0).remote(self.target, self.options.runner, self.options.build_timeout, _fetch)

    def _wait_for_runners(self) -> None:
        deadline = time.monotonic() + self.options.node_wait
        while not self.runners:
            self._refresh_runners()
            if self.runners:
                return
            if time.monotonic() > deadline:
                raise ClusterError(f"no live Ray node offers {self.resource} (start one with "
                                   f"ray start --resources '{{\"{self.resource}\": 1}}')")
            time.sleep(1.0)

    def _task_box(self, task: MeasureTask | None) -> tuple:
        """(key, boxed reference) of `task` on the cluster, put once per task (a few kept: batches of several
        tasks are in flight at once); None means the previous batch's task."""
        if task is not None:
            key = task.key or f"task-{id(task)}"
            hit = self._tasks.get(key)
            if hit is None or not task.same_as(hit[0]):
                ref_task = task
                if isinstance(task.reference, BuildResult):
                    ref_task = replace(task, reference=self._item(task.reference))
                hit = self._tasks[key] = (task, key, (self.ray.put(ref_task),))
            self._tasks.move_to_end(key)
            while len(self._tasks) > 8:
                self._tasks.popitem(last=False)
            self._task = hit
        if self._task is None:
            raise ValueError("RayBackend.run: the first batch must name its task")
        return self._task[1], self._task[2]

    # -- batches -------------------------------------------------------------------------------------------
    def _new_batch(self, task, n: int, best_seconds, early_cut: bool) -> tuple:
        key, box = self._task_box(task)
        handle, self._next_handle = self._next_handle, self._next_handle + 1
        batch = self._batches[handle] = Batch(key, box, early_cut, best_seconds, [None] * n, [None] * n)
        self.batch_times[handle] = batch.times
        return handle, batch

    def _ready(self, batch: Batch, i: int, build: BuildResult, item: Item | None = None) -> None:
        if build.ok:
            batch.builds[i], batch.items[i] = build, item or self._item(build)
            batch.todo.append(i)
        else:
            batch.fail(i, build)

    def submit(self, sources: Sequence[Source], task: MeasureTask | None = None, *,
               best_seconds: float | None = None, early_cut: bool = True) -> int:
        """Start building and measuring `sources` and return at once: a handle for wait() and collect()."""
        handle, batch = self._new_batch(task, len(sources), best_seconds, early_cut)
        for i, src in enumerate(sources):
            if self.node_built:
                self._ready(batch, i, BuildResult(src, NODE_BUILT + src.key, MeasureErrorNo.NO_ERROR, "", 0.0))
            else:
                res_ref, digest_ref, data_ref = self._build_remote.remote(src, self.flags, self.cc,
                                                                          self.options.build_timeout)
                self._refs[res_ref] = ("build", handle, i, (src, digest_ref, data_ref))
        self._dispatch()
        return handle

    def wait(self, handles: Sequence[int], timeout: float | None = None) -> list[int]:
        """The handles among `handles` whose batch is complete; blocks until one is (or `timeout` passes)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            done = [h for h in handles if self._batches[h].complete]
            left = None if deadline is None else deadline - time.monotonic()
            if done or (left is not None and left <= 0):
                return done
            self._pump(5.0 if left is None else min(left, 5.0))

    def collect(self, handle: int) -> tuple[list, list]:
        """A complete batch's (builds, results), once."""
        batch = self._batches.pop(handle)
        self.batch_times.pop(handle, None)
        return batch.builds, batch.results

    def slots(self) -> int:
        """Batches that keep the cluster busy: one per measuring node, plus one searched ahead, so that a node
        whose batch is done takes the next one's candidates instead of waiting for the driver's search."""
        return len(self.runners) + 1

    def run(self, builds: Sequence[BuildResult], task: MeasureTask | None = None, *,
            best_seconds: float | None = None, early_cut: bool = True) -> list[MeasureResult]:
        """One result per build, in order; builds that failed come back as their error without a round trip."""
        handle, batch = self._new_batch(task, len(builds), best_seconds, early_cut)
        for i, b in enumerate(builds):
            self._ready(batch, i, b)
        self.wait([handle])
        return self.collect(handle)[1]

    # -- the event loop ------------------------------------------------------------------------------------
    def _pump(self, timeout: float) -> None:
        """Hand out work, wait up to `timeout` for builds or results, take in all that arrived."""
        self._dispatch()
        if not self._refs:
            return
        ready, _ = self.ray.wait(list(self._refs), num_returns=1, timeout=timeout)
        if ready:
            ready, _ = self.ray.wait(list(self._refs), num_returns=len(self._refs), timeout=0)
        for ref in ready:
            if ref in self._refs:     # a lost node's refs may have been dropped by an earlier one
                kind, handle, i, extra = self._refs.pop(ref)
                (self._on_build if kind == "build" else self._on_measure)(ref, handle, i, extra)
        self._dispatch()

    def _on_build(self, ref, handle: int, i: int, extra: tuple) -> None:
        src, digest_ref, data_ref = extra
        batch = self._batches[handle]
        try:
            res, digest = self.ray.get([ref, digest_ref])
        except (*self._lost, self.ray.exceptions.RayTaskError) as exc:   # retried by Ray, still failing
            msg = f"build failed on the cluster: {(str(exc).splitlines() or [''])[0]}"
            batch.fail(i, BuildResult(src, None, MeasureErrorNo.UNKNOWN_ERROR, msg, 0.0))
            return
        res = replace(res, source=src)
        if res.ok:
            res = replace(res, lib_path=f"ray:{digest}")
            self._keep(res.lib_path, digest, data_ref)
        self._ready(batch, i, res, Item(res, digest, (data_ref,)) if res.ok else None)

    def _dispatch(self) -> None:
        """Each runner with room gets a candidate, least loaded first, one per runner per pass: every node gets work."""
        if any(b.todo for b in self._batches.values()) and not self.runners:
            self._wait_for_runners()
        load = Counter(node for kind, _, _, node in self._refs.values() if kind == "measure")
        placed = True
        while placed:
            placed = False
            # least busy first, then fewest measured: candidates that arrive one at a time as their builds
            # finish would otherwise all go to the first runner while its queue had room
            for node in sorted(self.runners, key=lambda n: (load[n], self.measured_by[n])):
                actor = self.runners[node]
                got = pick(self._batches, self._affinity.get(node)) if load[node] < self.options.in_flight else None
                if got is not None:
                    handle, i = got
                    b = self._batches[handle]
                    b.measuring = b.measuring or time.monotonic()
                    ref = actor.measure.remote(b.key, b.box, [b.items[i]], b.best, b.early_cut)
                    self._refs[ref] = ("measure", handle, i, node)
                    self._affinity[node], load[node], placed = handle, load[node] + 1, True
        measuring = {h for kind, h, _, _ in self._refs.values() if kind == "measure"}
        self.peak_batches = max(self.peak_batches, len(measuring))

    def _on_measure(self, ref, handle: int, i: int, node) -> None:
        try:
            [res] = self.ray.get(ref)
        except self._lost:
            # The node or its runner died: this candidate and every other one queued there go elsewhere.
            self.runners.pop(node, None)
            self.lost_nodes.add(node)
            queued = [r for r, (kind, _, _, n) in self._refs.items() if kind == "measure" and n == node]
            lost = [(handle, i)] + [self._refs.pop(r)[1:3] for r in queued]
            for h, j in sorted(lost, reverse=True):
                if h in self._batches and self._batches[h].results[j] is None:
                    self._batches[h].todo.appendleft(j)
            self.reassigned += len(lost)
            self._refresh_runners()
            return
        except self.ray.exceptions.RayTaskError as exc:   # the runner itself failed on this candidate
            res = MeasureResult((), MeasureErrorNo.UNKNOWN_ERROR, f"runner failed: {str(exc)[-2000:]}", 0.0,
                                time.time())
        batch = self._batches.get(handle)
        if batch is not None and batch.accept(i, res):   # exactly one result per candidate
            self.measured_by[node] += 1

    def nodes(self) -> list:
        """Node ids of the live runners."""
        return list(self.runners)

    def close(self) -> None:
        for actor in self.runners.values():
            try:
                self.ray.kill(actor)
            except Exception:  # noqa: BLE001 - its node may be gone already
                pass
        self.runners = {}
        self._libs.clear()
        if self.owns_connection and self.ray.is_initialized():
            self.ray.shutdown()
            self.owns_connection = False

    def __enter__(self) -> "RayBackend":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _fetch(box: tuple):
    """On a node: the value behind a boxed object reference (boxed, so that Ray passes the reference itself and
    the node fetches the bytes only when its cache lacks them)."""
    import ray
    return ray.get(box[0])


__all__ = ["RayBackend", "RayOptions", "ClusterError", "connect", "target_resource"]
