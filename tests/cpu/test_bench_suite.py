"""The table (ansorc.suite, bench/suite.py) --quick as a smoke test: two operators at their smallest shapes,
tuned briefly, timed against their peers (numpy always; PyTorch and onnxruntime when installed), results
checked equal, table and chart out."""
import importlib
import importlib.util
import json
import os
from pathlib import Path

import numpy as np
import pytest



def _load(name):
    """A module of ansorc.suite (imported late: importing the table sets OMP_PROC_BIND for this process)."""
    return importlib.import_module(f"ansorc.suite.{name}")


@pytest.mark.slow
def test_quick_suite_writes_the_table_chart_and_logs(tmp_path):
    suite = _load("table")
    every = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, every[:1])   # as an OpenMP runtime with OMP_PROC_BIND leaves its calling thread
    try:
        rc = suite.main(["--quick", "--ops", "NRM", "SFM", "--trials", "4", "--log-dir", str(tmp_path), "--quiet",
                         "--placements", "2"])
    finally:
        os.sched_setaffinity(0, every)
    assert rc == 0
    rows = json.loads((tmp_path / "suite.json").read_text())
    assert [(r["op"], tuple(r["args"])) for r in rows] == [("NRM", (1, 256, 256)), ("SFM", (256, 256))]
    for r in rows:
        assert r["mismatch"] == [], r               # every peer that ran computed what we computed
        assert r["peers_s"]["numpy"] is not None    # numpy is always a peer of these two
        assert r["ratio"] > 0 and r["ours_s"] > 0 and r["trials"] >= 4
        assert r["peak_pct"] is None                # memory-bound rows get no % of peak
        # timed in a fresh process on two placements of the arrays; a contender's time is the median of the two
        assert {"ours", "numpy"} <= set(r["placements_s"])
        assert all(len(v) == 2 for v in r["placements_s"].values())
        assert r["ours_s"] == pytest.approx(float(np.median(r["placements_s"]["ours"])))
        assert r["cpus"] == every    # the timing process ran on all of this process's CPUs, not the one left
    md = (tmp_path / "suite.md").read_text()
    assert md.count("\n| NRM |") == 1 and md.count("\n| SFM |") == 1 and "Geometric mean" in md
    assert (tmp_path / "nrm_0.jsonl.gz").exists() and (tmp_path / "sfm_0.jsonl").exists()
    spent = json.loads((tmp_path / "tuning_seconds.json").read_text())
    assert set(spent) == {"nrm_0", "sfm_0"} and all(r["tuning_s"] == spent[f"{r['op'].lower()}_0"] for r in rows)
    # resumed with the budget already spent: nothing is tuned, the table still comes out
    assert suite.main(["--quick", "--ops", "NRM", "--trials", "4", "--log-dir", str(tmp_path), "--quiet"]) == 0
    again = json.loads((tmp_path / "suite.json").read_text())
    assert again[0]["trials"] == rows[0]["trials"]
    if importlib.util.find_spec("matplotlib"):
        assert (tmp_path / "suite.png").read_bytes()[:4] == b"\x89PNG"


def test_rows_and_geomean():
    suite = _load("table")
    quick = suite.rows(["T2D", "GMM"], None, quick=True)
    assert quick == [("T2D", 3, (1, 32, 32, 64, 3, 4, 2, 1)), ("GMM", 0, (1, 128, 128, 128))]
    assert len(suite.rows(list(suite.workloads.WORKLOADS), None, quick=False)) == 52
    assert suite.rows(["SFM"], [1, 3], quick=False) == [("SFM", 1, (512, 512)), ("SFM", 3, (2048, 2048))]
    assert suite.rows(["C2D-I8", "GMM-BF16"], None, quick=True) == [
        ("C2D-I8", 1, (1, 56, 56, 64, 64, 1, 1, 0)), ("GMM-BF16", 0, (128, 128, 128))]
    assert abs(suite.geomean([2.0, 0.5, None]) - 1.0) < 1e-12


def test_placed_arrays_hold_the_values_on_aligned_fresh_pages():
    timing = _load("timing")
    values = np.arange(3000, dtype=np.float32).reshape(30, 100)
    rng = np.random.default_rng(0)
    got = [timing.placed(values, rng) for _ in range(8)]
    assert all(np.array_equal(g, values) and g.flags.c_contiguous and g.ctypes.data % 64 == 0 for g in got)
    assert len({g.ctypes.data % 4096 for g in got}) > 1      # not every copy at the same offset in its page
    assert len({g.ctypes.data for g in got}) == 8


def test_peers_compute_what_the_workloads_define():
    """Every library peer of a small conv-family row agrees with ansorc's own reference evaluation."""
    timing = _load("timing")
    from ansorc import workloads
    from ansorc.ir.program.dag import ComputeDAG
    from ansorc.ir.program.evaluate import evaluate
    cases = {"T2D": (1, 3, 3, 4, 2, 4, 2, 1), "GRP": (1, 6, 6, 8, 8, 3, 2, 1), "DEP": (1, 6, 6, 4, 3, 2, 1),
             "CAP": (1, 4, 4, 2, 3, 3, 1, 1), "C1D": (1, 9, 4, 3, 3, 2, 1), "CBR": (1, 5, 5, 3, 4, 3, 1, 1),
             "TBG": (1, 8, 2, 4), "C3D": (1, 3, 4, 4, 2, 3, 3, 1, 1), "DIL": (1, 9, 9, 2, 3, 3, 1, 1)}
    rng = np.random.default_rng(0)
    ran = 0
    for op, args in cases.items():
        dag = ComputeDAG(workloads.WORKLOADS[op][0](*args))
        inputs = [rng.standard_normal(t.shape).astype(np.float32) for t in dag.inputs]
        want = evaluate(list(dag.outputs), {t.name: a for t, a in zip(dag.inputs, inputs)})[dag.outputs[0].name]
        for name, (call, back) in timing.peer_calls(op, args, inputs).items():
            assert timing.check(want.astype(np.float32), back(call())), (op, name)
            ran += 1
    assert ran >= len(cases)   # onnxruntime is installed with ansorc's test dependencies


def ort_saturates_pairs() -> bool:
    """Whether onnxruntime's u8 x s8 MatMulInteger runs vpmaddubsw here: x86 without VNNI."""
    from ansorc.codegen.target import cpu_flags, host_arch
    return host_arch() == "x86_64" and not cpu_flags() & {"avx512_vnni", "avx_vnni"}


def pair_saturated_matmul(a, b) -> np.ndarray:
    """u8 (m, k) x s8 (k, n) -> int32 with each pair of adjacent products summed in int16 with saturation."""
    m, k = a.shape
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    if k % 2:
        a64, b64 = np.pad(a64, ((0, 0), (0, 1))), np.pad(b64, ((0, 1), (0, 0)))
    pairs = (a64.reshape(m, -1, 2)[:, :, :, None] * b64.reshape(-1, 2, b.shape[1])[None]).sum(2)
    return np.clip(pairs, -32768, 32767).sum(1).astype(np.int32)


def test_low_precision_peers_compute_what_the_workloads_define():
    """Each low-precision row's peers agree with ansorc's reference on full-range integers and bf16 values; the
    QLinearConv peer's requantized check passes on its result and fails on one a step and a half off. Where
    onnxruntime's u8 x s8 kernels saturate int16 pair sums (x86 without VNNI; docs/codegen.md), its
    MatMulInteger matches a model of that on full-range data, and its peers agree on 7-bit activations."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("torch")
    timing = _load("timing")
    from ansorc import workloads
    from ansorc.ir.program.dag import ComputeDAG
    cases = {"GMM-I8": (9, 24, 40), "GMM-BF16": (9, 24, 40), "C2D-I8": (1, 7, 7, 16, 8, 3, 2, 1)}
    rng = np.random.default_rng(0)
    ran = set()
    for op, args in cases.items():
        dag = ComputeDAG(workloads.LOW_PRECISION[op][0](*args))
        inputs = timing.row_values(dag, rng)
        assert inputs[0].min() < 0 or inputs[0].max() > 127     # integers over their whole range, bf16 values
        peers = timing.peer_calls(op, args, inputs)
        if op.endswith("-I8") and ort_saturates_pairs():
            if op == "GMM-I8":
                call, back = peers["onnxruntime"][:2]
                assert np.array_equal(np.asarray(back(call())).reshape(inputs[0].shape[0], -1),
                                      pair_saturated_matmul(*inputs))
            inputs = [inputs[0] >> 1, *inputs[1:]]              # u8 activations of 7 bits: no pair saturates
            peers = timing.peer_calls(op, args, inputs)
        ran |= check_peers(timing, dag, op, inputs, peers)
    assert ran == {"onnxruntime", "onnxruntime_qlinear", "torch"}


def check_peers(timing, dag, op: str, inputs: list, peers: dict) -> set:
    from ansorc.ir.program.evaluate import evaluate
    want = evaluate(list(dag.outputs), {t.name: a for t, a in zip(dag.inputs, inputs)})[dag.outputs[0].name]
    for name, (call, back, *own) in peers.items():
        same = own[0] if own else (lambda a, b: timing.check(a, b, timing.CHECK_RTOL.get(op, 2e-3)))
        got = back(call())
        assert same(want, got), (op, name)
        if own:   # most outputs inside uint8's range, so the check looks at the sums, not at saturation
            assert np.mean((got > 0) & (got < 255)) > 0.8
            assert not same(want, np.clip(got.astype(np.int32) + 2, 0, 255))
    return set(peers)


def _thread_cpus() -> dict:
    out = {}
    for status in Path("/proc/self/task").glob("*/status"):
        line = next(ln for ln in status.read_text().splitlines() if ln.startswith("Cpus_allowed_list:"))
        out[status.parent.name] = line.split(":")[1].strip()
    return out


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to tell one from all")
def test_peer_thread_pools_get_every_cpu_of_the_process(monkeypatch):
    """Made from a thread that our OpenMP bound to one core, onnxruntime's pool workers inherited that core and
    shared it with their caller (SFM 512 135 us instead of 105); peer_calls makes them with every CPU."""
    pytest.importorskip("onnxruntime")
    timing = _load("timing")
    monkeypatch.setattr(timing, "torch_fns", lambda *a: {})   # only onnxruntime starts threads here
    from ansorc.measure.affinity import _parse, process_cpus
    every = sorted(process_cpus())   # an earlier test's OpenMP may have bound this thread to one core already
    x = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    before, mine = _thread_cpus(), os.sched_getaffinity(0)
    os.sched_setaffinity(0, every[:1])
    try:
        calls = timing.peer_calls("SFM", (64, 64), [x])
    finally:
        os.sched_setaffinity(0, mine)
    new = {tid: cpus for tid, cpus in _thread_cpus().items() if tid not in before}
    assert "onnxruntime" in calls and new    # its intra-op pool started a worker thread
    assert all(sorted(_parse(cpus)) == every for cpus in new.values()), new


def test_row_without_records_is_skipped_not_fatal(tmp_path, capsys):
    suite = _load("table")
    assert suite.main(["--ops", "CAP", "--shapes", "3", "--trials", "0", "--log-dir", str(tmp_path), "--quiet",
                       "--no-peak"]) == 0
    assert "skipped" in capsys.readouterr().out
    assert json.loads((tmp_path / "suite.json").read_text()) == []


def test_merge_takes_the_later_row_and_one_peak(tmp_path):
    suite = _load("table")

    def row(op, idx, ours, peak):
        return {"op": op, "idx": idx, "args": [idx], "ours_s": ours, "peers_s": {"numpy": None, "torch": 2e-3,
                "onnxruntime": None}, "torch_layout": "torch", "ratio": 2e-3 / ours, "gflops": 100.0,
                "peak_pct": 100 * 100.0 / peak, "peak_gflops": peak, "mismatch": [], "tuning_s": 1.0, "trials": 64}
    (tmp_path / "a.json").write_text(json.dumps([row("SFM", 0, 1e-3, 200.0), row("GMM", 1, 4e-3, 200.0)]))
    (tmp_path / "b.json").write_text(json.dumps([row("GMM", 1, 1e-3, 250.0)]))
    assert suite.main(["--merge", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--out", str(tmp_path)]) == 0
    rows = json.loads((tmp_path / "suite.json").read_text())
    assert [(r["op"], r["idx"], r["ours_s"]) for r in rows] == [("GMM", 1, 1e-3), ("SFM", 0, 1e-3)]
    assert [round(r["peak_pct"]) for r in rows] == [40, 40]      # both against the higher peak, 250
    assert "Geometric mean of best peer / ours: 2.00; 2 of 2" in (tmp_path / "suite.md").read_text()


def test_time_row_times_the_peak_loop_alongside_when_asked(monkeypatch):
    timing = _load("timing")

    def default_program(op, idx, log, constant_weights=True):   # the row's default program: no log needed
        dag = timing.row_dag(op, idx, constant_weights)
        kern = timing.ansorc.compile(dag, trials=0, name="gmm_peak_test")
        values = [np.random.default_rng(0).standard_normal(t.shape, dtype=np.float32) for t in dag.inputs]
        return kern, dag, tuple(timing.workloads.WORKLOADS[op][1][idx]), values, \
            [np.zeros(t.shape, np.float32) for t in dag.outputs]
    monkeypatch.setattr(timing, "tuned_row", default_program)
    got = timing.time_row("GMM", 0, None, rounds=2, min_time=0.005, placements=1, peak=True)
    assert timing.PEAK in got["med"] and "ours" in got["med"] and got["med"][timing.PEAK] > 0
    # at least the calibration's floor, 1000 iterations of 12 FMAs (2 FLOPs a lane); no rate is asserted: on a
    # loaded CI machine each OpenMP call of the loop can stall for milliseconds
    assert got["peak_flops"] >= 1000 * 12 * 2
    assert timing.PEAK not in timing.time_row("GMM", 0, None, rounds=1, min_time=0.005, placements=1)["med"]


def test_the_peak_loop_calibration_ignores_a_stalled_reading_and_keeps_its_floor():
    peak = _load("peak")
    stalls = iter([0.03, 0.03])            # the first two calls stall 30 ms (a scheduler slice on a busy machine)
    calls = []

    def seconds_of(iters):                 # 1 ns an iteration after a 10 us parallel-region start
        calls.append(iters)
        return next(stalls, 0.0) + 1e-5 + iters * 1e-9
    got = peak.calibrated_iters(seconds_of, 0.002)
    assert abs(got * 1e-9 + 1e-5 - 0.002) < 2e-4     # about 2 ms a call, as asked
    assert all(n >= 1000 for n in calls)
    # a machine so loaded that every call stalls keeps the floor instead of shrinking the loop to nothing
    assert peak.calibrated_iters(lambda n: 0.03 + n * 1e-9, 0.002) == 1000


def test_the_peak_loop_timed_in_a_row_raises_the_peak_never_lowers_it(tmp_path):
    suite = _load("table")
    # the FMA peak loop timed alongside: 2e9 FLOPs per call in 10 ms -> 200 GFLOP/s; not a peer of the row
    med = {"ours": 1e-3, "torch": 2e-3, suite.PEAK: 1e-2}
    f = suite.timing_fields("GMM", med, 1e8, 150.0, 2e9)
    assert f["row_peak_gflops"] == pytest.approx(200.0) and f["peak_pct"] == pytest.approx(50.0)
    assert f["ratio"] == pytest.approx(2.0) and f["peak_flops"] == 2e9
    # a loop slowed by a degraded stretch (both threads on one core) does not make the kernel look faster
    slow = suite.timing_fields("GMM", med | {suite.PEAK: 4e-2}, 1e8, 200.0, 2e9)
    assert slow["row_peak_gflops"] == pytest.approx(50.0) and slow["peak_pct"] == pytest.approx(50.0)

    def row(op, peak_s, flops=2e9):
        per = {"ours": [1e-3], "torch": [2e-3], suite.PEAK: [peak_s]}
        return {"op": op, "idx": 1, "args": [1], **suite.timing_fields(op, {k: v[0] for k, v in per.items()}, 1e8,
                150.0, flops), "placements_s": per, "mismatch": [], "tuning_s": 1.0, "trials": 64}
    # each timing process calibrates the loop's FLOPs per call: pooled, the times count per FLOP (C2D's two runs: 100
    # GFLOP/s both)
    (tmp_path / "a.json").write_text(json.dumps([row("GMM", 1e-2), row("C2D", 2e-2)]))
    (tmp_path / "b.json").write_text(json.dumps([row("GMM", 2e-2), row("C2D", 8e-2, 8e9)]))
    assert suite.main(["--merge", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--pool",
                       "--out", str(tmp_path)]) == 0
    got = {r["op"]: r for r in json.loads((tmp_path / "suite.json").read_text())}
    assert got["GMM"]["row_peak_gflops"] == pytest.approx(2e9 / 1.5e-2 / 1e9)   # the pooled median loop time
    assert got["C2D"]["row_peak_gflops"] == pytest.approx(100.0)
    # one peak for every row, the highest left after pooling: the runs' start peak, 150 (the loop's pooled 133 and
    # 100 are lower; GMM's 200 in the first run alone is pooled away)
    assert got["GMM"]["peak_pct"] == pytest.approx(100 / 1.5) and got["C2D"]["peak_pct"] == pytest.approx(100 / 1.5)
    md = (tmp_path / "suite.md").read_text()
    assert "fp32 FMA peak: 150 GFLOP/s" in md and "it ran 100-133;" in md
    assert md.count("| 67%* |") == 2     # both rows' loops ran below 90% of 150 in their own rounds


def test_useful_flops_leave_out_the_taps_on_the_padding():
    suite = _load("table")
    assert suite.useful_fraction("GMM", (1, 512, 512, 512)) == 1.0
    assert suite.useful_fraction("C2D", (1, 56, 56, 64, 64, 1, 1, 0)) == 1.0           # 1x1, no padding
    assert suite.useful_fraction("C2D", (1, 7, 7, 512, 512, 3, 1, 1)) == pytest.approx((19 / 21) ** 2)
    assert suite.useful_fraction("C2D-I8", (1, 7, 7, 512, 512, 3, 1, 1)) == pytest.approx((19 / 21) ** 2)
    assert suite.useful_fraction("C3D", (1, 16, 14, 14, 256, 256, 3, 1, 1)) == \
        pytest.approx((46 / 48) * (40 / 42) ** 2)
    # dilation 2 on 7 columns, pad 1: output t reads columns t-1, t+1, t+3; 13 of the 15 taps are inside
    assert suite.useful_fraction("DIL", (1, 7, 7, 512, 512, 3, 1, 1)) == pytest.approx((13 / 15) ** 2)
    # every listed shape of the other convolutions gets a share
    from ansorc import workloads
    for op, idx in [("C1D", 0), ("DEP", 1), ("CAP", 0), ("C3D", 0)]:
        args = workloads.WORKLOADS[op][1][idx]
        assert 0.5 < suite.useful_fraction(op, args) <= 1.0


def test_pool_takes_each_contenders_median_over_every_runs_placements(tmp_path):
    suite = _load("table")

    def row(ours, torch, ort, mismatch=()):
        per = {"ours": ours, "torch": torch, "onnxruntime": ort}
        med = {k: float(np.median(v)) for k, v in per.items() if k not in mismatch}
        return {"op": "GMM", "idx": 0, "args": [1, 128, 128, 128], **suite.timing_fields("GMM", med, 4e6, 200.0),
                "mismatch": list(mismatch), "tuning_s": 1.0, "trials": 64, "placements_s": per}
    (tmp_path / "a.json").write_text(json.dumps([row([1e-3, 2e-3, 9e-3], [3e-3, 3e-3, 3e-3], [5e-3] * 3)]))
    (tmp_path / "b.json").write_text(json.dumps([row([4e-3, 5e-3, 6e-3], [1e-3, 1e-3, 1e-3], [2e-3] * 3,
                                                     mismatch=("onnxruntime",))]))
    assert suite.main(["--merge", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--pool",
                       "--out", str(tmp_path)]) == 0
    r = json.loads((tmp_path / "suite.json").read_text())[0]
    assert r["ours_s"] == pytest.approx(4.5e-3) and r["peers_s"]["torch"] == pytest.approx(2e-3)
    assert r["peers_s"]["onnxruntime"] is None and r["mismatch"] == ["onnxruntime"]   # differed in one run
    assert r["ratio"] == pytest.approx(2e-3 / 4.5e-3) and r["gflops"] == pytest.approx(4e6 / 4.5e-3 / 1e9)
    assert r["runs"] == 2 and len(r["placements_s"]["ours"]) == 6
    # without --pool the later file's row stands
    assert suite.main(["--merge", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--out", str(tmp_path)]) == 0
    assert json.loads((tmp_path / "suite.json").read_text())[0]["ours_s"] == pytest.approx(5e-3)


def test_trials_count_the_rows_own_key_and_fall_back_on_the_per_call_one(tmp_path):
    from ansorc.measure.record import RETIME_NOTE, Record, RecordLog
    suite = _load("table")
    dag = suite.row_dag("C1D", 0)                      # weights declared constant
    plain = dag.with_constants(())
    rec = lambda key, note="": Record(key, "native", "[]", (1e-3,), 0, note=note)  # noqa: E731
    log = tmp_path / "c1d_0.jsonl"
    RecordLog(log).append([rec(plain.workload_key)] * 5)
    assert suite.row_trials(log, dag) == 5            # no constant records: the per-call programs serve it
    RecordLog(log).append([rec(dag.workload_key)] * 3 + [rec(dag.workload_key, RETIME_NOTE)])
    assert suite.row_trials(log, dag) == 3            # its own records only, re-timings not counted
    assert suite.row_trials(log, plain) == 5
    assert suite.row_trials(tmp_path / "missing.jsonl", dag) == 0


def test_low_precision_rows_get_a_table_and_a_peak_of_their_own(tmp_path):
    """An int8 row's % of peak is against the int8 loop's peak, not the FMA's, and it is reported apart."""
    suite = _load("table")

    def row(op, kind, peak):
        med = {"ours": 1e-3, "onnxruntime": 2e-3}
        return {"op": op, "idx": 0, "args": [1], "peak_kind": kind, "mismatch": [], "tuning_s": 1.0, "trials": 8,
                **suite.timing_fields(op, med, 4e8, peak)}
    (tmp_path / "a.json").write_text(json.dumps([row("GMM", "fp32", 200.0), row("GMM-I8", "int8", 800.0)]))
    assert suite.main(["--merge", str(tmp_path / "a.json"), "--out", str(tmp_path)]) == 0
    got = {r["op"]: r for r in json.loads((tmp_path / "suite.json").read_text())}
    assert got["GMM"]["peak_pct"] == pytest.approx(200.0) and got["GMM-I8"]["peak_pct"] == pytest.approx(50.0)
    md = (tmp_path / "suite.md").read_text()
    head, low = md.split("## Low precision")
    assert "| GMM |" in head and "| GMM-I8 |" in low and "| GMM-I8 |" not in head
    assert "fp32 FMA peak: 200 GFLOP/s" in head and "int8 dot-product (suite/peak_dot.py) peak: 800 GOP/s" in low
