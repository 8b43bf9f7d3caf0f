"""One fuzzed ONNX graph checked end to end: onnxruntime's answer (or its refusal) against ansorc's network path
(import, fuse, default schedules, trials=0) whose whole-model library is built with -fsanitize=address,undefined
and run by the embedding example (examples/embed_net/main.c) as a subprocess: a sanitized library cannot be
loaded into this Python process. Used by test_fuzz_onnx.py (CI) and bench/fuzz_onnx.py (the long run).

Outcomes (`check_graph` returns one of them with a detail line):
  passed      both computed, the outputs agree
  rejected    onnxruntime refused the graph (at load or run time) and so did ansorc, with one line: an AnsorcError
              at compile time, or the library's run-time status (an index out of range)
  coverage    onnxruntime computed, ansorc refused with one line (a missing feature, counted, not a failure)
  reference   onnxruntime refused, ansorc computed what onnx's ReferenceEvaluator computes
  ort_differs both computed, ansorc agrees with the ReferenceEvaluator where onnxruntime does not
  failure kinds: sanitizer, crash, traceback (a non-ansorc exception), multiline (an error of more than one
              line), mismatch, accepted (both onnx references refuse a graph ansorc computed)
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ansorc.errors import AnsorcError
from ansorc.measure.builder import cache_root
from ansorc.measure.sanitize import REPORT_MARKERS, RUN_ENV, SANITIZE_FLAGS
from ansorc.measure.sealed import install, intact

MAIN = Path(__file__).resolve().parents[2] / "examples" / "embed_net" / "main.c"
FAILURES = ("sanitizer", "crash", "traceback", "multiline", "mismatch", "accepted")
RUN_STATUS_EXIT = range(21, 21 + 2000)  # main.c exits 20 + <model>_run's status: a kernel's checked error


@dataclass(frozen=True)
class Outcome:
    kind: str      # passed, rejected, coverage, reference, ort_differs, or one of FAILURES
    detail: str    # the error line, report or mismatch; "" when passed

    @property
    def failed(self) -> bool:
        return self.kind in FAILURES


def run_onnxruntime(model, feeds: dict):
    """(outputs, None) or (None, the error line)."""
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.log_severity_level = 4
    opts.intra_op_num_threads = 1
    try:
        sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        return sess.run(None, feeds), None
    except Exception as e:  # noqa: BLE001 - ort raises its own types for every refusal
        return None, " ".join(str(e).split())[:300]


def run_reference(model, feeds: dict):
    """onnx's ReferenceEvaluator: (outputs, None) or (None, the error line)."""
    from onnx.reference import ReferenceEvaluator
    try:
        return [np.asarray(o) for o in ReferenceEvaluator(model).run(None, feeds)], None
    except Exception as e:  # noqa: BLE001 - the reference raises anything on a bad graph
        return None, f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"


def compile_library(model, outdir: Path) -> tuple:
    """ansorc's network path without the optimized build: (paths of <m>.c/.h/.weights, signature)."""
    from ansorc.net.api import schedule_groups
    from ansorc.net.fuse import fuse
    from ansorc.net.importer import import_model
    from ansorc.net.library import emit_library
    from ansorc.net.weights import write_weights
    net = import_model(model)
    groups = fuse(net)
    schedules, _ = schedule_groups(net, groups)
    lib = emit_library(net, groups, schedules, "native", "fz")
    (outdir / "fz.c").write_text(lib.code)
    (outdir / "fz.h").write_text(lib.header)
    write_weights(outdir / "fz.weights", net.weights, lib.weight_order, lib.digest)
    return lib, outdir / "fz.weights"


def build_sanitized_app(lib, outdir: Path) -> Path:
    """main.c + the model library under ASan+UBSan (cached by the library's text)."""
    flags = [*SANITIZE_FLAGS, "-march=native"]
    key = hashlib.sha256("\0".join([lib.code, lib.header, MAIN.read_text(), *flags]).encode()).hexdigest()[:24]
    cache = cache_root() / "sanitize_net"
    cache.mkdir(parents=True, exist_ok=True)
    exe = cache / f"{key}.exe"
    if intact(exe):
        return exe
    tmp = outdir / "app"
    cmd = ["gcc", *flags, f"-I{outdir}", '-DMODEL_HEADER="fz.h"', str(MAIN), str(outdir / "fz.c"), "-o", str(tmp),
           "-lm"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"sanitized model build failed:\n{proc.stderr[-3000:]}")
    install(tmp, exe)
    return exe


def run_sanitized_app(exe: Path, weights: Path, sig: dict, feeds: dict, outdir: Path):
    """(outputs, None), or (None, (exit code, stderr)) when the program failed or reported."""
    files = []
    for k, spec in enumerate(sig["inputs"]):
        path = outdir / f"in{k}.bin"
        np.ascontiguousarray(feeds[spec["name"]], dtype=spec["dtype"]).tofile(path)
        files.append(str(path))
    env = {**os.environ, **RUN_ENV}
    env.pop("LD_PRELOAD", None)
    (outdir / "out").mkdir(exist_ok=True)
    proc = subprocess.run([str(exe), str(weights), str(outdir / "out"), *files], capture_output=True, text=True,
                          timeout=120, env=env)
    if proc.returncode != 0 or any(m in proc.stderr for m in REPORT_MARKERS):
        return None, (proc.returncode, proc.stderr[-3000:])
    return [np.fromfile(outdir / "out" / f"out{k}.bin", spec["dtype"]).reshape(spec["shape"])
            for k, spec in enumerate(sig["outputs"])], None


def _mismatch(got: list, want: list, rtol: float, atol: float) -> str:
    if len(got) != len(want):
        return f"{len(got)} outputs, expected {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        w = np.asarray(w)
        if g.shape != w.shape:
            return f"output {k}: shape {g.shape}, expected {w.shape}"
        if w.dtype.kind in "fc":
            if not np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True):
                err = np.abs(g.astype(np.float64) - w)
                worst = np.max(np.where(np.isnan(err), np.inf, err))   # a NaN on one side only counts as inf
                return f"output {k}: max abs error {worst:.3g} (rtol {rtol}, atol {atol})"
        elif not np.array_equal(g, w.astype(g.dtype) if w.dtype != g.dtype else w):
            return f"output {k}: {int((g != w).sum())} of {g.size} elements differ"
    return ""


def _ansorc(model, feeds: dict, workdir: Path):
    """('ok', outputs) | ('error', line) | ('status', line) | one of FAILURES with a detail."""
    try:
        lib, weights = compile_library(model, workdir)
    except AnsorcError as e:
        text = str(e)
        return ("multiline", text[:2000]) if "\n" in text.strip() else ("error", text)
    except Exception as e:  # noqa: BLE001 - a traceback is a finding
        import traceback
        return "traceback", f"{type(e).__name__}: {e}\n{traceback.format_exc()[-2500:]}"
    exe = build_sanitized_app(lib, workdir)
    outs, err = run_sanitized_app(exe, weights, lib.signature, feeds, workdir)
    if err is None:
        return "ok", outs
    code, stderr = err
    if any(m in stderr for m in REPORT_MARKERS):
        return "sanitizer", stderr
    if code in RUN_STATUS_EXIT and "run failed with status" in stderr:
        return "status", stderr.strip().splitlines()[-1]
    return "crash", f"exit {code}: {stderr}"


def check_graph(model, feeds: dict, rtol: float = 1e-4, atol: float = 1e-5) -> Outcome:
    """Compile and run `model` both ways on `feeds` (input name -> array) and classify what happened."""
    want, ort_error = run_onnxruntime(model, feeds)
    with tempfile.TemporaryDirectory(prefix="ansorc_fzonnx_") as tmp:
        kind, got = _ansorc(model, feeds, Path(tmp))
    if kind in FAILURES:
        return Outcome(kind, got)
    if ort_error is None:
        if kind != "ok":
            return Outcome("coverage" if kind == "error" else "mismatch", f"ort computed; ansorc: {got}")
        bad = _mismatch(got, want, rtol, atol)
        if not bad:
            return Outcome("passed", "")
        ref, _ = run_reference(model, feeds)   # onnxruntime is not always the spec (MVN of one element: NaN)
        if ref is not None and not _mismatch(got, ref, rtol, atol):
            return Outcome("ort_differs", f"ansorc computes what the onnx reference does; ort: {bad}")
        return Outcome("mismatch", bad)
    if kind != "ok":
        return Outcome("rejected", f"ort: {ort_error} | ansorc: {got}")
    ref, ref_error = run_reference(model, feeds)
    if ref_error is not None:
        return Outcome("accepted", f"ort: {ort_error} | reference: {ref_error}")
    bad = _mismatch(got, ref, rtol, atol)
    return Outcome("mismatch", f"against the onnx reference: {bad}") if bad else Outcome("reference", ort_error)
