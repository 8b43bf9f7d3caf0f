"""The CLI misuse table (issue 12): every way of holding the command line wrong ends in exit code 2 and exactly one
line on stderr naming the problem, never a traceback. Run in-process (ansorc.cli.main) so the table stays fast."""
from __future__ import annotations

import contextlib
import json
import resource
import shlex

import pytest

from ansorc.cli import main

OK_TE = "param N = 16\ninput A: float32[N]\noutput B[i] = A[i] + 1.0\n"
# Thirty 16.9 GB stages: more memory than any machine has, and each tensor under the 2**31 element limit.
HUGE_TE = "param N = 46000\ninput A: float64[N, N]\n" + "".join(
    f"tensor T{k}: float64[N, N]\nT{k}[i, j] = {'A' if k == 0 else f'T{k - 1}'}[i, j] + 1.0\n" for k in range(30)) \
    + "output O[i, j] = T29[i, j] * 2.0\n"


def _named(name: str) -> str:
    return OK_TE.replace("A", name)


# (id, argv (shell words) with {d} for the scratch folder, fragment of the one error line, environment)
MISUSE = [
    # already handled before issue 12
    ("missing file", "compile {d}/missing.te -o {d}/out", "missing.te", {}),
    ("bad syntax", "compile {d}/bad.te -o {d}/out", "bad.te:2:", {}),
    ("not UTF-8", "compile {d}/binary.te -o {d}/out", "invalid UTF-8", {}),
    ("missing arguments", "compile", "required", {}),
    ("unknown command", "frobnicate {d}/ok.te", "invalid choice", {}),
    ("bad target", "compile {d}/ok.te -o {d}/out --target sparc", "invalid choice: 'sparc'", {}),
    ("--arch without cuda", "compile {d}/ok.te -o {d}/out --arch sm_80", "only for --target cuda", {}),
    ("unknown arch", "compile {d}/ok.te -o {d}/out --target cuda --arch sm_1", "unknown", {}),
    ("bad --seed", "tune {d}/ok.te --log {d}/l.jsonl --seed x", "invalid int value", {}),
    ("negative --trials", "compile {d}/ok.te -o {d}/out --trials -1", ">= 0", {}),
    ("tune --trials 0", "tune {d}/ok.te --log {d}/l.jsonl --trials 0", ">= 1", {}),
    ("tune --minutes 0", "tune {d}/ok.te --log {d}/l.jsonl --minutes 0", "--minutes must be a positive", {}),
    ("tune --minutes nan", "tune {d}/ok.te --log {d}/l.jsonl --minutes nan", "--minutes must be a positive", {}),
    ("--minutes on a .te file", "tune {d}/ok.te --log {d}/l.jsonl --minutes 1", "applies to ONNX models", {}),
    ("unknown size parameter", "compile {d}/ok.te -o {d}/out --trials 0 -D Q=3", "no size parameter named", {}),
    ("-D without value", "compile {d}/ok.te -o {d}/out --trials 0 -D N", "expected NAME=INTEGER", {}),
    ("-D not an integer", "compile {d}/ok.te -o {d}/out --trials 0 -D N=abc", "non-integer", {}),
    ("-D too large", "compile {d}/ok.te -o {d}/out --trials 0 -D N=99999999999", "-D N", {}),
    ("--name not an identifier", "compile {d}/ok.te -o {d}/out --trials 0 --name 2x", "not a valid C identifier", {}),
    ("--name a keyword", "compile {d}/ok.te -o {d}/out --trials 0 --name int", "not a valid C identifier", {}),
    ("show a missing log", "show {d}/nolog.jsonl", "no such file", {}),
    # row 7: output paths, logs, names C rejects or that shadow the C library, memory
    ("-o /dev/null", "compile {d}/ok.te -o /dev/null --trials 0", "not a directory", {}),
    ("-o an existing file", "compile {d}/ok.te -o {d}/afile --trials 0", "not a directory", {}),
    ("-o under a file", "compile {d}/ok.te -o {d}/afile/sub --trials 0", "not a directory", {}),
    ("--log a directory (compile)", "compile {d}/ok.te -o {d}/out --trials 0 --log {d}", "is a directory", {}),
    ("--log a directory (tune)", "tune {d}/ok.te --log {d} --trials 1", "is a directory", {}),
    ("show a directory", "show {d}", "is a directory", {}),
    ("show /dev/null", "show /dev/null", "not a regular file", {}),
    ("--name malloc", "compile {d}/ok.te -o {d}/out --trials 0 --name malloc", "malloc: a C library name", {}),
    ("--name memset", "compile {d}/ok.te -o {d}/out --trials 0 --name memset", "memset: a C library name", {}),
    ("--name int32_t", "compile {d}/ok.te -o {d}/out --trials 0 --name int32_t", "stdint.h", {}),
    ("--name ansorc_", "compile {d}/ok.te -o {d}/out --trials 0 --name ansorc_k", "reserved for ansorc", {}),
    ("--name __k", "compile {d}/ok.te -o {d}/out --trials 0 --name __k", "reserved in C", {}),
    *[(f"tensor named {n}", f"compile {{d}}/{n}.te -o {{d}}/out --trials 0", f"'{n}' is", {})
      for n in ("expf", "sqrtf", "int32_t", "INT32_MAX", "INFINITY", "while", "ansorc_t", "__t", "memcpy")],
    ("huge sizes need too much memory", "tune {d}/huge.te --log {d}/l.jsonl --trials 1 --quiet",
     "tuning needs at least", {}),
    # Low rows: logs that are not logs, -D digits and repeats
    ("--log an expression file", "tune {d}/ok.te --log {d}/ok.te --trials 1", "is an expression file", {}),
    ("--log not a log (compile)", "compile {d}/ok.te -o {d}/out --trials 0 --log {d}/notes.txt", "not a tuning log",
     {}),
    ("--log not a log (tune)", "tune {d}/ok.te --log {d}/notes.txt --trials 1", "not a tuning log", {}),
    # issue 50.5: found only after the tuning ran (exit 1); /proc/self refuses new files even to root
    ("--log unwritable (tune)", "tune {d}/ok.te --log /proc/self/l.jsonl --trials 1 --quiet", "not a writable folder",
     {}),
    ("show an expression file", "show {d}/ok.te", "is an expression file", {}),
    ("-D Unicode digits", "compile {d}/ok.te -o {d}/out --trials 0 -D N=\u0661\u0662\u0668", "ASCII digits", {}),
    ("-D fullwidth digits", "compile {d}/ok.te -o {d}/out --trials 0 -D N=\uff11\uff16", "ASCII digits", {}),
    ("-D repeated", "compile {d}/ok.te -o {d}/out --trials 0 -D N=8 -D N=16", "-D N is given twice", {}),
    # the compiler
    ("--cc not installed", "compile {d}/ok.te -o {d}/out --trials 0 --cc no-such-cc", "compiler not found", {}),
    ("--cc with options", "compile {d}/ok.te -o {d}/out --trials 0 --cc 'gcc -O0'", "no options", {}),
    ("CC with options", "compile {d}/ok.te -o {d}/out --trials 0", "CC 'gcc -O0'", {"CC": "gcc -O0"}),
    ("CC not installed", "compile {d}/ok.te -o {d}/out --trials 0", "CC no-such-cc", {"CC": "no-such-cc"}),
]


def _scratch(d):
    (d / "ok.te").write_text(OK_TE)
    (d / "bad.te").write_text("input A: float32[4]\noutput B[i] = A[i] +\n")
    (d / "binary.te").write_bytes(b"param N = 4\n\xff\xfe\x00")
    (d / "huge.te").write_text(HUGE_TE)
    (d / "afile").write_text("not a folder\n")
    (d / "notes.txt").write_text("my notes about tuning\n")
    for n in ("expf", "sqrtf", "int32_t", "INT32_MAX", "INFINITY", "while", "ansorc_t", "__t", "memcpy"):
        (d / f"{n}.te").write_text(_named(n))


@contextlib.contextmanager
def _address_space_capped(on: bool):
    """Without the memory check, the huge row would allocate until the machine swaps or the OOM killer comes; under
    a cap of 4 GiB more than now, it fails fast with a MemoryError instead."""
    if not on:
        yield
        return
    import ansorc.search.tuner  # noqa: F401 - imported before the cap: libraries map a lot of address space
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        now = int(f.read().split()[0]) * resource.getpagesize()
    cap = now + 4 * 2**30
    resource.setrlimit(resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@pytest.mark.parametrize("argv, fragment, env", [pytest.param(*row[1:], id=row[0]) for row in MISUSE])
def test_misuse_exits_2_with_one_line(argv, fragment, env, tmp_path, capsys, monkeypatch):
    _scratch(tmp_path)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    with _address_space_capped("huge.te" in argv):
        code = main(shlex.split(argv.format(d=tmp_path)))
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "Traceback" not in out
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert code == 2 and lines[0].startswith("ansorc: error: ") and fragment in lines[0], (code, err)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before  # nothing written
    assert not (tmp_path / "out").exists() and not (tmp_path / "l.jsonl").exists()


def test_show_escapes_terminal_control_characters(tmp_path, capsys):
    log = tmp_path / "evil.jsonl"
    rec = {"v": 1, "workload_key": "wk\x1b]0;pwned\x07\x1b[2J", "target": "native\u202e\x9b31m", "steps": [],
           "costs": [0.001], "error_code": 0, "error_msg": "", "all_cost": 0.1, "timestamp": 1.0, "flop": 1e6,
           "signature": "A[4]\x1b[2J -> B[4]"}
    log.write_text(json.dumps(rec) + "\n")
    assert main(["show", str(log)]) == 0
    out = capsys.readouterr().out
    assert not any(c in out for c in "\x1b\x07\x9b\u202e") and "A[4]\\x1b[2J -> B[4]" in out
    assert "wk\\x1b]0;pwned\\x07\\x1b[2J" in out and "native\\u202e\\x9b31m" in out
    assert main(["show", str(log), "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["workloads"][0]
    assert row["workload_key"] == rec["workload_key"]  # JSON escapes them itself and keeps the data exact


def test_show_keeps_a_tiny_kernels_gflops_above_zero(tmp_path, capsys):
    # 128 FLOPs in 45 us: 0.0028 GFLOP/s, which two decimals printed as 0.0 (a JSON reader saw a dead kernel)
    log = tmp_path / "tiny.jsonl"
    rec = {"v": 1, "workload_key": "tiny", "target": "native", "steps": [], "costs": [4.5e-5], "error_code": 0,
           "error_msg": "", "all_cost": 0.1, "timestamp": 1.0, "flop": 128}
    log.write_text(json.dumps(rec) + "\n")
    assert main(["show", str(log), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["workloads"][0]["best_gflops"] == 0.002844
    assert main(["show", str(log)]) == 0
    assert " 0.0028 GFLOP/s  -\n" in capsys.readouterr().out   # "-": the record names no arguments


def test_a_log_whose_record_does_not_replay_warns_in_one_line_naming_it_and_builds_the_default(tmp_path, capsys):
    # issue 50.5: exit 1 with "no stage named ..." and no word of the log (a model compile fell back instead)
    from ansorc.frontend import load
    from ansorc.ir.program.dag import ComputeDAG
    from ansorc.measure.record import Record, RecordLog, steps_key
    _scratch(tmp_path)
    dag, log = ComputeDAG(load(str(tmp_path / "ok.te"), {}).tensors), tmp_path / "stale.jsonl"
    RecordLog(log).append([Record(dag.workload_key, "native", steps_key([["SP", "gone", "i", [4]]]), (1e-6,), 0,
                                  timestamp=1.0)])
    code = main(["compile", str(tmp_path / "ok.te"), "-o", str(tmp_path / "out"), "--trials", "0", "--log", str(log)])
    err = capsys.readouterr().err
    assert code == 0 and (tmp_path / "out" / "libok.so").exists(), err
    [line] = err.splitlines()   # one line: no Python file path, no source line
    assert line.startswith(f"ansorc: warning: {log}: the best logged program of workload {dag.workload_key} does "
                           "not replay (") and line.endswith("using the default program"), line


def test_show_and_compile_report_integer_work_in_gop_per_second(tmp_path, capsys):
    import ansorc
    from ansorc import workloads
    from ansorc.cli import rate_unit_of
    assert rate_unit_of("A[8,8]:uint8 B[8,8]:int8 const -> C[8,8]:int32") == "GOP/s"
    assert rate_unit_of("A[8,8]:bfloat16 B[8,8]:bfloat16 -> C[8,8]") == "GFLOP/s"     # float32 goes unwritten
    assert rate_unit_of("X[4] idx[2]:int32 -> Y[2]") == "GFLOP/s" and rate_unit_of("") == "GFLOP/s"
    log = tmp_path / "i8.jsonl"
    kern = ansorc.compile(workloads.matmul_u8s8(16, 16, 16), trials=2, log=str(log))
    assert "GOP/s" in kern.spec.provenance_dict and "GFLOP/s" not in kern.spec.provenance_dict
    assert main(["show", str(log)]) == 0
    assert " GOP/s  A[16,16]:uint8" in capsys.readouterr().out
    assert main(["show", str(log), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["workloads"][0]["unit"] == "GOP/s"
