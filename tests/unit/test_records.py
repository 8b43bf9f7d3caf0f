"""Tuning records: JSON round trip, tolerant loading, best-of queries, dedup keys. No compiler needed."""
import importlib.util
import json
import math
import re
import time
import warnings
from pathlib import Path
from dataclasses import replace

import pytest

from ansorc import te
from ansorc.measure.errors import MeasureErrorNo, error_name
from ansorc.measure.record import (RECORD_FORMAT_VERSION, Record, RecordLog, best, load, measured_steps, records_for,
                                   steps_key)


def rec(costs=(1.0,), steps=(("SP", "C", "i", [8]),), wk="wk1", target="llvm -mcpu=native", code=0, lower=False):
    return Record(wk, target, steps_key([list(s) for s in steps]), tuple(costs), code, lower_bound=lower,
                  timestamp=1.5, all_cost=0.25)


def test_round_trip_keeps_every_field():
    r = Record("wk", "cpu", steps_key([["SP", "C", "i", [32, 8]], ["PR", "C", "i.0", "auto_unroll_max_step", 16]]),
               (1e-3, 2e-3), 0, "",
               0.5, 123.25, True, 2.0e9, "first round")
    line = r.to_json()
    assert "\n" not in line
    obj = json.loads(line)
    assert obj["v"] == RECORD_FORMAT_VERSION and obj["steps"][0] == ["SP", "C", "i", [32, 8]]
    assert obj["lower_bound"] is True and obj["flop"] == 2.0e9
    assert Record.from_json(line) == r


def test_a_records_signature_round_trips_and_older_logs_read_without_one():
    r = replace(rec(), signature="A[4,4] B[4,4] const -> C[4,4]")
    assert json.loads(r.to_json())["signature"] == r.signature and Record.from_json(r.to_json()) == r
    assert "signature" not in json.loads(rec().to_json()) and Record.from_json(rec().to_json()).signature == ""
    with pytest.raises(ValueError, match="signature"):
        Record.from_json(r.to_json().replace('"A[4,4] B[4,4] const -> C[4,4]"', "7"))


def test_a_dags_signature_names_its_arguments_briefly():
    from ansorc.ir.program.dag import SIGNATURE_CHARS, ComputeDAG
    a, w = te.placeholder((2, 3), name="A"), te.placeholder((3,), name="W", dtype="float64")
    b = te.compute((2, 3), lambda i, j: a[i, j] * 2.0, name="B")
    assert ComputeDAG([a, w, b], constants=[w]).signature == "A[2,3] W[3]:float64 const -> B[2,3]"
    many = [te.placeholder((7,) * 4, name=f"input_{k}") for k in range(20)]
    long = ComputeDAG([*many, te.compute((7,), lambda i: many[0][i, 0, 0, 0], name="out")]).signature
    assert len(long) == SIGNATURE_CHARS and long.endswith("...")


def test_steps_are_data_and_canonical():
    a = rec(steps=(("FU", "C", ["i", "j"]),))
    b = Record.from_json(json.dumps({"v": 1, "workload_key": "wk1", "target": "llvm -mcpu=native",
                                     "steps": [["FU", "C", ["i", "j"]]], "costs": [1.0], "error_code": 0}, indent=2))
    assert a.steps_json == b.steps_json
    steps = a.steps
    steps.append("mutated")
    assert a.steps != steps  # the record hands out copies


def test_from_measure_copies_the_result():
    class Result:
        costs, error_code, error_msg, all_cost, timestamp, lower_bound = (3e-3, 1e-3, 2e-3), 0, "", 0.7, 99.0, False
    r = Record.from_measure("wk", "cpu", [["CA", 1, 2, 3]], Result(), flop=1e6)
    assert r.median == 2e-3 and r.ok and r.steps == [["CA", 1, 2, 3]] and r.flop == 1e6


def test_native_records_say_their_isa_and_another_isa_is_not_this_machines_native(monkeypatch):
    """A log copied from a machine with another ISA: its "native" records are not this machine's "native" (their
    timings rank programs for another machine); records without an isa (older logs) still are."""
    import ansorc.measure.record as record

    class Result:
        costs, error_code, error_msg, all_cost, timestamp, lower_bound = (2e-3,), 0, "", 0.1, 9.0, False
    monkeypatch.setattr(record, "native_isa", lambda: "avx2")
    here = Record.from_measure("wk", "native", [["SP", "C", "i", [8]]], Result())
    assert here.isa == "avx2" and Record.from_json(here.to_json()) == here
    assert Record.from_measure("wk", "avx512", [["SP", "C", "i", [8]]], Result()).isa == ""  # named: no ambiguity
    there = Record("wk", "native", steps_key([["SP", "C", "i", [16]]]), (1e-3,), 0, timestamp=9.0, isa="avx512")
    old = Record("wk", "native", steps_key([["SP", "C", "i", [4]]]), (3e-3,), 0, timestamp=9.0)
    assert "isa" not in json.loads(old.to_json()) and Record.from_json(old.to_json()).isa == ""
    logged = [here, there, old]
    assert [r.isa for r in best(logged, "wk", "native", k=3)] == ["avx2", ""]
    assert len(records_for(logged, "wk", None)) == 3
    assert steps_key([["SP", "C", "i", [16]]]) not in measured_steps(logged, "wk", "native")
    monkeypatch.setattr(record, "native_isa", lambda: "avx512")
    assert [r.isa for r in best(logged, "wk", "native", k=3)] == ["avx512", ""]


def test_median_of_failed_record_is_inf():
    assert math.isinf(rec(costs=(), code=MeasureErrorNo.WRONG_ANSWER).median)


def test_load_skips_corrupt_lines_with_file_and_line(tmp_path):
    path = tmp_path / "log.jsonl"
    good = rec().to_json()
    path.write_text("\n".join([good, "{not json", '{"v": 1, "workload_key": 3}', good, '{"v": 99}', good[:40]]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        records = load(path)
    assert len(records) == 2
    messages = [str(w.message) for w in caught]
    assert [m.split(": ")[0] for m in messages] == [f"{path}:{n}" for n in (2, 3, 5, 6)]


def test_missing_log_is_empty(tmp_path):
    assert load(tmp_path / "nothing.jsonl") == []


def test_append_and_load(tmp_path):
    log = RecordLog(tmp_path / "sub" / "log.jsonl")
    log.append([rec(costs=(1.0,)), rec(costs=(2.0,))])
    log.append([])
    log.append([rec(costs=(3.0,))])
    assert [r.costs[0] for r in log.load()] == [1.0, 2.0, 3.0]
    assert (tmp_path / "sub" / "log.jsonl").read_text().count("\n") == 3


def test_compressed_log_loads_like_the_plain_one_and_refuses_appends(tmp_path):
    import gzip

    import ansorc
    plain = RecordLog(tmp_path / "log.jsonl")
    plain.append([rec(costs=(1.0,)), rec(costs=(2.0,), steps=(("SP", "C", "i", [4]),))])
    packed = tmp_path / "log.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.path.read_bytes()))
    assert load(packed) == load(plain.path) and len(load(packed)) == 2
    with pytest.raises(ansorc.AnsorcError, match="cannot append to a compressed log"):
        RecordLog(packed).append([rec()])
    assert len(load(packed)) == 2
    (tmp_path / "bad.jsonl.gz").write_bytes(b"not gzip")
    with pytest.raises(ansorc.AnsorcError, match="not a readable gzip file"):
        load(tmp_path / "bad.jsonl.gz")


def test_append_after_truncated_line_starts_a_new_line(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text(rec().to_json() + "\n" + rec().to_json()[:25])  # a writer killed mid-line
    RecordLog(path).append([rec(costs=(5.0,))])
    with pytest.warns(UserWarning, match=f"{path}:2"):
        records = load(path)
    assert [r.costs for r in records] == [(1.0,), (5.0,)]


def test_best_by_median_among_error_free_distinct_schedules():
    s = [("SP", "C", "i", [i + 1]) for i in range(5)]
    records = [
        rec(costs=(5.0, 1.0, 6.0), steps=(s[0],)),      # median 5
        rec(costs=(2.0, 2.0, 9.0), steps=(s[1],)),      # median 2
        rec(costs=(3.0,), steps=(s[1],)),               # same schedule, slower: not a second entry
        rec(costs=(), steps=(s[2],), code=MeasureErrorNo.RUN_TIMEOUT),
        rec(costs=(0.5,), steps=(s[3],), lower=True),   # cut early: never a best
        rec(costs=(1.0,), steps=(s[4],), wk="other"),
        rec(costs=(0.1,), steps=(s[4],), target="cuda"),
    ]
    top = best(records, "wk1", "llvm -mcpu=native", k=3)
    assert [r.median for r in top] == [2.0, 5.0]
    assert best(records, "wk1", k=1)[0].target == "cuda"
    assert best(records, "missing") == []


def test_queries_accept_a_path_or_a_log(tmp_path):
    path = tmp_path / "log.jsonl"
    RecordLog(path).append([rec(), rec(wk="wk2"), rec(costs=(), code=MeasureErrorNo.COMPILE_HOST)])
    assert len(records_for(path, "wk1")) == 2
    assert len(records_for(RecordLog(path), "wk2")) == 1
    assert len(records_for(str(path), "wk1", target="cuda")) == 0
    assert measured_steps(path, "wk1") == {rec().steps_json}
    assert steps_key([list(s) for s in (("SP", "C", "i", [8]),)]) in measured_steps(path)


def test_error_codes_match_ansor_and_the_worker():
    assert [e.value for e in MeasureErrorNo] == list(range(9))
    assert MeasureErrorNo.WRONG_ANSWER == 5 and error_name(7) == "RUN_TIMEOUT" and error_name(42) == "UNKNOWN_ERROR(42)"
    worker_path = Path(__file__).resolve().parents[2] / "ansorc" / "measure" / "worker.py"
    spec = importlib.util.spec_from_file_location("ansorc_measure_worker", worker_path)
    worker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(worker)
    assert (worker.NO_ERROR, worker.RUNTIME_DEVICE, worker.WRONG_ANSWER) == (0, 4, 5)


def test_best_ranks_a_retimed_schedule_by_its_latest_retiming():
    from dataclasses import replace
    from ansorc.measure.record import RETIME_NOTE

    def prog(tile, costs, t, note=""):
        return replace(rec(costs=costs, steps=(("SP", "C", "i", [tile]),)), timestamp=t, note=note)
    lucky = prog(8, (1.0,), 1.5)             # one lucky early timing
    steady = prog(16, (1.2,), 1.5)
    never_retimed = prog(32, (1.1,), 1.6)    # not among the top when the session ran... yet faster on paper
    session1 = [prog(8, (1.5, 1.6, 1.4), 2.0, RETIME_NOTE), prog(16, (1.25, 1.2, 1.22), 2.0, RETIME_NOTE)]
    logs = [lucky, steady, never_retimed, *session1]
    top = best(logs, "wk1", k=3)
    assert [r.median for r in top] == [1.22, 1.5, 1.1]  # the session's programs first, by their re-timing
    # A later session replaces the earlier one: the lucky program re-timed again, faster this time.
    session2 = [prog(8, (1.1, 1.15, 1.12), 3.0, RETIME_NOTE), prog(32, (1.3, 1.3, 1.3), 3.0, RETIME_NOTE)]
    top = best(logs + session2, "wk1", k=3)
    assert [r.median for r in top] == [1.12, 1.3, 1.22]
    # A timing newer than the latest session competes on its median.
    newer = prog(64, (1.0,), 4.0)
    assert best(logs + session2 + [newer], "wk1")[0] is newer
    assert best([lucky, steady], "wk1")[0].median == 1.0  # without re-timings: the fastest single timing


def _line(**fields):
    obj = {"v": 1, "workload_key": "wk1", "target": "cpu", "steps": [["SP", "C", "i", [4]]], "costs": [1.0],
           "error_code": 0, "timestamp": 10.0}
    obj.update(fields)
    return json.dumps(obj)


@pytest.mark.parametrize("bad, why", [
    ('{"v": 1, "steps": ' + "[" * 100_000 + "]" * 100_000 + "}", "recursion"),   # nesting 100,000 deep
    (_line(steps=[["SP", "C", "i", [[[[4]]]]]]), "wrong type"),
    (_line(steps=[["PR", "C", "i", "auto_unroll_max_step", "16"]]), "wrong type"),  # a string pragma value
    (_line(steps=[["AN", "C", "i"]]), "expected 3 fields"),
    (_line(steps=[["SP", "C", "i", [0]]]), "wrong type"),
    (_line(steps=[["ZZ"]]), "not a step"),
    (_line(steps=[[True, "C"]]), "not a step"),
    (_line(costs=[float("nan")]), "finite non-negative"),
    (_line(costs=[-1.0]), "finite non-negative"),
    (_line(costs=[float("inf")]), "finite non-negative"),
    (_line(costs=["1.0"]), "finite non-negative"),
    (_line(all_cost=-3.0), "finite non-negative"),
    (_line(flop=float("nan")), "finite non-negative"),
    (_line(timestamp=4102444800.0), "in the future"),                  # 2100-01-01
    (_line(error_code=True), "error_code"),
    (_line(lower_bound="no"), "lower_bound"),
    (_line(error_msg=["x"]), "error_msg"),
    (_line(costs=[10 ** 400]), "too large|finite"),
])
def test_a_bad_record_is_skipped_with_file_and_line_and_the_rest_loads(tmp_path, bad, why):
    path = tmp_path / "log.jsonl"
    good = [_line(costs=[2.0], steps=[["SP", "C", "i", [2]]]), _line(costs=[3.0])]
    path.write_text("\n".join([good[0], bad, good[1]]) + "\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        records = load(path)
    assert [r.costs for r in records] == [(2.0,), (3.0,)]
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1 and messages[0].startswith(f"{path}:2: skipped corrupt record")
    assert re.search(why, messages[0], re.I), messages[0]
    assert best(path, "wk1")[0].costs == (2.0,)  # nothing bad outranks the real best


def test_a_record_from_a_few_minutes_ahead_is_kept(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text(_line(timestamp=time.time() + 120) + "\n")  # clock skew between machines sharing a log
    assert len(load(path)) == 1


def test_a_log_measured_on_another_isa_is_named_when_it_serves_nothing_here(tmp_path, monkeypatch):
    import ansorc.measure.record as record
    from ansorc import te
    from ansorc.autotune import NoRecordError, apply_best
    from ansorc.ir.program.dag import ComputeDAG
    a = te.placeholder((8,), name="A")
    dag = ComputeDAG([a, te.compute((8,), lambda i: a[i] * 2.0, name="B")])
    monkeypatch.setattr(record, "native_isa", lambda: "avx2")
    log = tmp_path / "from_elsewhere.jsonl"
    RecordLog(log).append([Record(dag.workload_key, "native", steps_key([]), (1e-6,), 0, timestamp=1.0,
                                  isa="avx512")])
    with pytest.raises(NoRecordError, match="measured on a machine with avx512; tune it on this one"):
        apply_best(str(log), dag)


def test_a_log_of_other_workloads_says_so_when_it_serves_nothing(tmp_path):
    from ansorc import te
    from ansorc.autotune import NoRecordError, apply_best
    from ansorc.ir.program.dag import ComputeDAG

    def dag_of(n):
        a = te.placeholder((n,), name="A")
        return ComputeDAG([a, te.compute((n,), lambda i: a[i] * 2.0, name="B")])
    log = tmp_path / "other_shape.jsonl"
    RecordLog(log).append([Record(dag_of(n).workload_key, "native", steps_key([]), (1e-6,), 0, timestamp=1.0)
                           for n in (8, 16)])
    with pytest.raises(NoRecordError, match="2 records are of 2 other workloads, this one is A.32. -> B.32.: a "
                       "different shape"):    # records of older logs name no arguments
        apply_best(str(log), dag_of(32))
    RecordLog(log).append([Record(dag_of(4).workload_key, "native", steps_key([]), (1e-6,), 0, timestamp=1.0,
                                  signature=dag_of(4).signature)])
    named = r"3 records are of 3 other workloads \(A\[4\] -> B\[4\]; \.\.\.\), this one"
    with pytest.raises(NoRecordError, match=named):
        apply_best(str(log), dag_of(32))
    RecordLog(log).append([Record(dag_of(32).workload_key, "native", steps_key([]), (), 1, error_msg="boom",
                                  timestamp=1.0)])
    with pytest.raises(NoRecordError) as err:    # its own records all failed: no word of other workloads
        apply_best(str(log), dag_of(32))
    assert "other workload" not in str(err.value)
