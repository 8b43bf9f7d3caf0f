"""RayBackend: a MeasureBackend whose builds and measurements run on the nodes of a Ray cluster.

Builds are Ray tasks on any node with CPUs (the library's bytes stay in that node's object store until a
runner needs them). Measurement runs in one NodeRunner actor per node advertising the target's resource
(ray_nodes.target_resource), one candidate at a time per machine. The driver hands out candidates one per call
(two queued per runner, so none waits for the driver) and collects each result once: a runner whose node dies
has its unanswered candidates sent to another, and a late or repeated answer is dropped, so the tuner (which
alone writes the log) gets exactly one result per candidate. Usage statistics stay off.
"""
from __future__ import annotations

import os
import socket
import time
from collections import Counter, OrderedDict, deque
from dataclasses import dataclass, field, replace
from typing import Sequence

from ansorc.codegen.source import Source
from ansorc.codegen.target import Target
from ansorc.errors import AnsorcError
from ansorc.measure.builder import DEFAULT_BUILD_TIMEOUT, BuildResult
from ansorc.measure.errors import MeasureErrorNo
from ansorc.measure.ray_nodes import (NODE_BUILT, Item, NodeRunner, build_for_cluster, node_builds,
                                      portable_flags, target_resource)
from ansorc.measure.runner import MeasureResult, RunnerConfig
from ansorc.measure.task import MeasureTask

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")   # before ray is imported: no outbound traffic


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
    env = {"RAY_USAGE_STATS_ENABLED": "0"}
    try:
        kwargs = {} if str(address).startswith("ray://") else {"include_dashboard": False}
        ray.init(address=address, runtime_env={"env_vars": env}, log_to_driver=False,
                 logging_level="WARNING", **kwargs)
    except (ConnectionError, RuntimeError, ValueError, ImportError) as exc:
        raise ClusterError(f"cannot connect to the Ray cluster at {address!r}: "
                           f"{(str(exc).splitlines() or [type(exc).__name__])[0]}") from None
    return True


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
        self._task: tuple | None = None    # (MeasureTask, key, boxed ObjectRef)
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
        if task is not None and (self._task is None or not task.same_as(self._task[0])):
            key = task.key or f"task-{id(task)}-{time.time_ns()}"
            ref_task = task
            if isinstance(task.reference, BuildResult):
                ref_task = replace(task, reference=self._item(task.reference))
            self._task = (task, key, (self.ray.put(ref_task),))
        if self._task is None:
            raise ValueError("RayBackend.run: the first batch must name its task")
        return self._task[1], self._task[2]

    # -- measurement ---------------------------------------------------------------------------------------
    def run(self, builds: Sequence[BuildResult], task: MeasureTask | None = None, *,
            best_seconds: float | None = None, early_cut: bool = True) -> list[MeasureResult]:
        """One result per build, in order; builds that failed come back as their error without a round trip."""
        key, box = self._task_box(task)
        results: list = [None] * len(builds)
        todo = deque()
        for i, b in enumerate(builds):
            if b.ok:
                todo.append(i)
            else:
                results[i] = MeasureResult((), b.error_code, b.error_msg, b.build_seconds, time.time())
        items = {i: self._item(builds[i]) for i in todo}
        best = [best_seconds]
        pending: dict = {}   # ObjectRef -> (node id, candidate index)
        while todo or pending:
            self._dispatch(todo, pending, items, key, box, best, early_cut)
            ready, _ = self.ray.wait(list(pending), num_returns=1, timeout=5.0)
            for ref in ready:
                self._collect(ref, pending, todo, results, best)
        return results

    def _dispatch(self, todo: deque, pending: dict, items: dict, key, box, best: list, early_cut: bool) -> None:
        if todo and not self.runners:
            self._wait_for_runners()
        load = {n: 0 for n in self.runners}
        for node, _ in pending.values():
            load[node] = load.get(node, 0) + 1
        placed = True
        while todo and placed:   # round-robin, one candidate per runner per pass: every node gets work
            placed = False
            for node, actor in list(self.runners.items()):
                if todo and load[node] < self.options.in_flight:
                    i = todo.popleft()
                    pending[actor.measure.remote(key, box, [items[i]], best[0], early_cut)] = (node, i)
                    load[node] += 1
                    placed = True

    def _collect(self, ref, pending: dict, todo: deque, results: list, best: list) -> None:
        node, i = pending.pop(ref)
        try:
            [res] = self.ray.get(ref)
        except self._lost:
            # The node or its runner died: this candidate and every other one queued there go elsewhere.
            self.runners.pop(node, None)
            self.lost_nodes.add(node)
            lost = [i]
            for other, (n, j) in list(pending.items()):
                if n == node:
                    del pending[other]
                    lost.append(j)
            todo.extendleft(sorted((j for j in lost if results[j] is None), reverse=True))
            self.reassigned += len(lost)
            self._refresh_runners()
            return
        except self.ray.exceptions.RayTaskError as exc:   # the runner itself failed on this candidate
            res = MeasureResult((), MeasureErrorNo.UNKNOWN_ERROR, f"runner failed: {str(exc)[-2000:]}", 0.0,
                                time.time())
        if results[i] is None:   # exactly one result per candidate
            results[i] = res
            self.measured_by[node] += 1
            if res.ok and not res.lower_bound and res.costs:
                best[0] = res.median if best[0] is None else min(best[0], res.median)

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
