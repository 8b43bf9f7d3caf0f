"""The GPU measurement layer without a GPU: the worker's session on a fake device, the runner against a fake
worker process (crash, hang, sticky error, failed start), error mapping and framing."""
from __future__ import annotations

import socket
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from ansorc.codegen.source import ArgSpec, Launch, Source, Workspace
from ansorc.targets.cuda import measure_driver as cuda_driver
from ansorc.targets.cuda.measure_runner import CudaRunner, CudaRunnerConfig
from ansorc.targets.cuda.measure_worker import Session, replay_count
from ansorc.measure.errors import MeasureErrorNo
from ansorc.targets.cuda.measure_nvcc import CudaBuildResult
from ansorc.measure.zygote import WorkerDied, WorkerTimeout, read_frame, send_frame

sys.path.insert(0, str(Path(__file__).parent))
from fake_cuda import FakeDevice  # noqa: E402

N = 1000
ARGS = (ArgSpec("A", (N,), "float32", False), ArgSpec("B", (N,), "float32", False),
        ArgSpec("C", (N,), "float32", True))
CONFIG = {"repeats": 3, "warmup_replays": 1, "min_replay_seconds": 1e-3, "max_graph_launches": 50}
FAKE_WORKER = (sys.executable, "-u", str(Path(__file__).with_name("fake_cuda_worker.py")))


def _inputs():
    rng = np.random.default_rng(1)
    return [rng.standard_normal(N).astype(np.float32) for _ in range(2)]


def _task_msg(reference=True):
    a, b = _inputs()
    return {"op": "task", "names": ["A", "B", "C"], "args": [(s.shape, s.dtype, s.is_output) for s in ARGS],
            "inputs_by_arg": [a, b, None], "reference_outputs": [a + b] if reference else None,
            "rtol": 1e-4, "atol": 1e-4}


def _run_msg(tmp_path, kernels, launches, workspaces=(), cut=0.0):
    cubin = tmp_path / f"{'_'.join(kernels)}.cubin"
    cubin.write_text(" ".join(kernels))
    return {"op": "run", "cubin": str(cubin), "launches": launches, "workspace_bytes": list(workspaces),
            "config": CONFIG, "cut_seconds": cut}


def _one(kernel):
    return [(kernel, (4, 1, 1), (256, 1, 1), (0, 1, 2), 0)]


@pytest.fixture
def session():
    s = Session(FakeDevice())
    assert s.set_task(_task_msg()) == {"ok": True}
    return s


def test_correct_candidate_is_timed_with_graph_replays(session, tmp_path):
    reply = session.run(_run_msg(tmp_path, ["add"], _one("add")))
    assert reply["error_code"] == MeasureErrorNo.NO_ERROR, reply
    assert len(reply["costs"]) == CONFIG["repeats"] and not reply["lower_bound"]
    assert 1 <= reply["number"] <= CONFIG["max_graph_launches"]
    assert session.dev.modules_loaded == 0 and not session.dev.graphs  # module unloaded, graph destroyed


@pytest.mark.parametrize("kernel, words", [("add_wrong", "differ"), ("nothing", "differ"),
                                           ("clobber_input", "input A was modified")])
def test_wrong_silent_or_clobbering_kernels_are_wrong_answers(session, tmp_path, kernel, words):
    reply = session.run(_run_msg(tmp_path, [kernel], _one(kernel)))
    assert reply["error_code"] == MeasureErrorNo.WRONG_ANSWER and words in reply["error_msg"]
    # the clobbered input was restored: the next candidate is right again
    assert session.run(_run_msg(tmp_path, ["add"], _one("add")))["error_code"] == MeasureErrorNo.NO_ERROR


def test_poisoned_outputs_catch_an_unwritten_output_without_reference(tmp_path):
    s = Session(FakeDevice())
    s.set_task(_task_msg(reference=False))
    reply = s.run(_run_msg(tmp_path, ["nothing"], _one("nothing")))
    assert reply["error_code"] == MeasureErrorNo.WRONG_ANSWER and "never written" in reply["error_msg"]
    assert s.run(_run_msg(tmp_path, ["add"], _one("add")))["error_code"] == MeasureErrorNo.NO_ERROR


def test_two_launches_through_a_workspace(session, tmp_path):
    launches = [("scale_to_ws", (1, 1, 1), (32, 1, 1), (0, 3), 0), ("ws_plus_b", (1, 1, 1), (32, 1, 1), (3, 1, 2), 0)]
    reply = session.run(_run_msg(tmp_path, ["scale_to_ws", "ws_plus_b"], launches, workspaces=[4 * N]))
    assert reply["error_code"] == MeasureErrorNo.NO_ERROR, reply


def test_sticky_error_is_runtime_device_and_flagged(session, tmp_path):
    reply = session.run(_run_msg(tmp_path, ["illegal"], _one("illegal")))
    assert reply["error_code"] == MeasureErrorNo.RUNTIME_DEVICE and reply["sticky"]
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in reply["error_msg"]


def test_missing_kernel_is_runtime_device_not_sticky(session, tmp_path):
    reply = session.run(_run_msg(tmp_path, ["add"], _one("nothing")))  # the cubin lacks the launched kernel
    assert reply["error_code"] == MeasureErrorNo.RUNTIME_DEVICE and not reply["sticky"]


def test_early_cut_of_a_far_slower_run_needs_no_graph(session, tmp_path):
    reply = session.run(_run_msg(tmp_path, ["slow"], _one("slow"), cut=1e-4))
    assert reply["error_code"] == MeasureErrorNo.NO_ERROR and reply["lower_bound"] and len(reply["costs"]) == 1
    assert reply["number"] == 1 and not session.dev.graphs


def test_early_cut_stops_after_one_replay(session, tmp_path, monkeypatch):
    from ansorc.targets.cuda import measure_worker as cuda_worker
    # the warm run's sleep can overshoot past the no-graph cut on a loaded machine; this test is about the replays
    monkeypatch.setattr(cuda_worker, "SLOW_RUN_SECONDS", 10.0)
    launches_before = session.dev.launches
    reply = session.run(_run_msg(tmp_path, ["slow"], _one("slow"), cut=1.5e-3))  # a run takes >= 2 ms
    assert reply["error_code"] == MeasureErrorNo.NO_ERROR and reply["lower_bound"] and len(reply["costs"]) == 1
    # checked run, warm run, the sizing replay, the warm-up replay, one timed replay: no further repeats
    assert session.dev.launches - launches_before == 5 and reply["number"] == 1


def test_graph_is_resized_when_the_first_run_was_slow(session, tmp_path):
    msg = _run_msg(tmp_path, ["cold"], _one("cold"))
    msg["config"] = dict(CONFIG, min_replay_seconds=0.02)  # the first run (50 ms) asks for 1 run per replay
    reply = session.run(msg)
    assert reply["error_code"] == MeasureErrorNo.NO_ERROR, reply
    assert reply["number"] == CONFIG["max_graph_launches"]  # from the fast replays, not the slow first run
    assert not session.dev.graphs  # both graphs destroyed


def test_replay_count_fills_the_minimum_replay_time_within_the_cap():
    cfg = {"min_replay_seconds": 1e-3, "max_graph_launches": 100}
    assert replay_count(1e-5, cfg, 1) == 100
    assert replay_count(1e-5, cfg, 4) == 25
    assert replay_count(2e-4, cfg, 1) == 5
    assert replay_count(0.5, cfg, 1) == 1


def test_sticky_errors_follow_the_header():
    assert cuda_driver.is_sticky(700) and cuda_driver.is_sticky(719) and cuda_driver.is_sticky(999)
    assert not cuda_driver.is_sticky(1) and not cuda_driver.is_sticky(701)  # invalid value, out of resources
    err = cuda_driver.CudaError(700, "CUDA_ERROR_ILLEGAL_ADDRESS", "cuCtxSynchronize")
    assert "cuCtxSynchronize" in str(err) and "CUDA_ERROR_ILLEGAL_ADDRESS" in str(err) and err.code == 700


def test_frames_round_trip_and_time_out():
    a, b = socket.socketpair()
    payload = {"op": "run", "data": np.arange(100000, dtype=np.float32)}  # larger than a socket buffer
    sender = threading.Thread(target=send_frame, args=(a, payload))
    sender.start()
    got = read_frame(b, time.monotonic() + 5)
    sender.join()
    assert np.array_equal(got["data"], payload["data"])
    with pytest.raises(WorkerTimeout):
        read_frame(b, time.monotonic() + 0.05)
    a.close()
    with pytest.raises(WorkerDied):
        read_frame(b, time.monotonic() + 5)
    b.close()


# --- the runner against a fake worker process -----------------------------------------------------------------

def _build(tmp_path, kernels, launches=None, workspaces=()):
    cubin = tmp_path / f"{'_'.join(kernels)}.cubin"
    cubin.write_text(" ".join(kernels))
    launches = launches or (Launch(kernels[0], (4, 1, 1), (256, 1, 1), (0, 1, 2)),)
    src = Source("// fake\n" + " ".join(kernels), "entry", ARGS, "cuda", tuple(launches), tuple(workspaces))
    return CudaBuildResult(src, str(cubin), MeasureErrorNo.NO_ERROR, "", 0.0)


def _runner(timeout=10.0):
    runner = CudaRunner(CudaRunnerConfig(timeout=timeout, repeats=3, worker_command=FAKE_WORKER))
    a, b = _inputs()
    runner.set_task([a, b], [a + b])
    return runner


def test_runner_restarts_the_worker_after_a_crash_and_a_sticky_error(tmp_path):
    with _runner() as runner:
        results = runner.run([_build(tmp_path, ["add"]), _build(tmp_path, ["crash"]), _build(tmp_path, ["add"]),
                              _build(tmp_path, ["illegal"]), _build(tmp_path, ["add"])])
        codes = [r.error_code for r in results]
        assert codes == [0, MeasureErrorNo.RUNTIME_DEVICE, 0, MeasureErrorNo.RUNTIME_DEVICE, 0], results
        assert "died" in results[1].error_msg and "ILLEGAL_ADDRESS" in results[3].error_msg
        assert runner.worker_starts == 3
        assert all(r.costs and r.number >= 1 for r in results if r.ok)


def test_runner_kills_a_hanging_candidate_and_goes_on(tmp_path):
    with _runner(timeout=1.5) as runner:
        start = time.monotonic()
        hang, ok = runner.run([_build(tmp_path, ["hang"]), _build(tmp_path, ["add"])])
        assert hang.error_code == MeasureErrorNo.RUN_TIMEOUT and ok.ok
        assert time.monotonic() - start < 30
        assert runner.worker_starts == 2


def test_runner_serves_a_second_task_and_a_workspace_program(tmp_path):
    ws = Workspace("W", "float32", N)
    two = (Launch("scale_to_ws", (1, 1, 1), (32, 1, 1), (0, 3)), Launch("ws_plus_b", (1, 1, 1), (32, 1, 1), (3, 1, 2)))
    with _runner() as runner:
        assert runner.run([_build(tmp_path, ["scale_to_ws", "ws_plus_b"], two, (ws,))])[0].ok
        a, b = _inputs()
        runner.set_task([a, b], [a - b])  # the same program is wrong for this task
        wrong = runner.run([_build(tmp_path, ["add"])])[0]
        assert wrong.error_code == MeasureErrorNo.WRONG_ANSWER
        assert runner.worker_starts == 1


def test_runner_passes_failed_builds_through_and_rejects_other_signatures(tmp_path):
    failed = CudaBuildResult(_build(tmp_path, ["add"]).source, None, MeasureErrorNo.COMPILE_DEVICE, "nvcc: boom", 1.0)
    other = _build(tmp_path, ["add"])
    other = CudaBuildResult(Source(other.source.code, "e", ARGS[:2] + (ArgSpec("C", (N + 1,), "float32", True),),
                                   "cuda", other.source.launches), other.lib_path, 0, "", 0.0)
    with _runner() as runner:
        r_ok, r_failed, r_other = runner.run([_build(tmp_path, ["add"]), failed, other])
        assert r_ok.ok and r_failed.error_code == MeasureErrorNo.COMPILE_DEVICE and r_failed.error_msg == "nvcc: boom"
        assert r_other.error_code == MeasureErrorNo.INSTANTIATION_ERROR


def test_runner_without_a_gpu_says_so_in_one_error(tmp_path, monkeypatch):
    monkeypatch.setenv("ANSORC_FAKE_CUDA_FAIL_START", "1")
    with _runner() as runner:
        with pytest.raises(RuntimeError, match="cannot use the GPU.*NO_DEVICE"):
            runner.run([_build(tmp_path, ["add"])])


def test_no_gpu_here_is_reported_without_raising():
    if cuda_driver.available():
        pytest.skip("this machine has a GPU")
    assert cuda_driver.device_limits() is None
