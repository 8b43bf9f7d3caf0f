"""Masked vector loads (ir/passes/masks.py): a row reduction whose vector tile overhangs the row (197 keys in tiles
of 32) reads each tile with contiguous loads, the last one masked, and matches numpy; masked-out lanes are never
read: under AddressSanitizer, and with the row's end (or start) against a page that faults on any access. AVX-512
kernels are compiled here but run only where the CPU has AVX-512."""
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

import ansorc
from ansorc import te
from ansorc.api import generate_source
from ansorc.codegen.target import host_isas
from ansorc.ir.program.evaluate import evaluate
from ansorc.ir.schedule.steps import Annotate, ComputeAt, Reorder, Rfactor, Split

from .helpers import check_sanitized

LANES = {"avx512": 16, "avx2": 8}
RUNNABLE = [isa for isa in ("avx512", "avx2") if isa in host_isas()]
pytestmark = pytest.mark.skipif(not RUNNABLE, reason="this CPU runs neither AVX2 nor AVX-512 kernels")
OPS = {"sum": (te.sum, np.sum), "max": (te.max, np.max)}
MASKED = {"avx512": "_mm512_mask", "avx2": "_mm256_maskload_ps"}


def _piece(n: int, isa: str) -> int:
    return next(p for p in (4 * LANES[isa], 2 * LANES[isa], LANES[isa], LANES[isa] // 2) if p < n)


def guarded_rows(rows: int, n: int, op: str, isa: str):
    """A row reduction split by the widest tile of up to 4 vectors shorter than the row (a guarded last tile:
    none of them divides 197, 61 or 13), factored into vector accumulators; (tensors, steps)."""
    x = te.placeholder((rows, n), name="x")
    k = te.reduce_axis((0, n), "k")
    s = te.compute((rows,), lambda i: OPS[op][0](x[i, k], axis=k), name="s")
    piece = _piece(n, isa)
    assert n % piece
    steps = [Split("s", "k", (piece,)), Rfactor("s", "k.1", 1), Reorder("s.rf", ("i", "k.0", "k.1.v")),
             ComputeAt("s.rf", "s", "i"), Annotate("s.rf", "k.1.v", "vectorize"), Annotate("s", "k.1.v", "vectorize"),
             Annotate("s", "i", "parallel")]
    return [x, s], steps


def padded_rows(rows: int, n: int, piece: int):
    """y[i, j] = x[i, j - 2] for 2 <= j < n + 2, else 0.5, in tiles of `piece` lanes: the first tile's first lanes
    would read before the row, the last tile's last lanes past it (both sides masked in one load)."""
    x = te.placeholder((rows, n), name="x")
    y = te.compute((rows, n + 4), lambda i, j: te.if_then_else(te.all(j >= 2, j < n + 2), x[i, j - 2], 0.5),
                   name="y")
    return [x, y], [Split("y", "j", (piece,)), Annotate("y", "j.1", "vectorize")]


def rows_with_edges(rows: int, n: int) -> np.ndarray:
    """Random rows, with infinities at the rows' ends and a huge first element in the row after each of them, which
    a lane read past its row's end would add in (or take as the max)."""
    x = (np.random.default_rng(n).standard_normal((rows, n)) * 10).astype(np.float32)
    x[0, n - 1] = np.inf               # the last lane of the masked tile counts
    x[1, :] = -np.inf                  # max -inf, sum -inf
    x[2, 0], x[2, n - 1] = -np.inf, np.inf   # sum NaN (inf - inf), max +inf
    x[4, 0] = 1e30                     # what row 3 would pick up past its end
    return x


def _state(tensors, steps):
    return ansorc.replay(ansorc.ComputeDAG(tensors), steps)


@pytest.mark.parametrize("isa", RUNNABLE)
@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("n", [197, 61, 13])
def test_guarded_row_reductions_use_masked_loads_and_match_numpy(isa, op, n):
    tensors, steps = guarded_rows(7, n, op, isa)
    kern = ansorc.build(tensors, _state(tensors, steps), target=isa, name=f"rows_{op}_{n}_{isa}")
    # a tile narrower than the ISA's vector (13 on AVX-512: 8 lanes) runs 256-bit vectors and their masked load
    masked = MASKED[isa] if _piece(n, isa) >= LANES[isa] else MASKED["avx2"]
    assert masked in kern.source and "(const float[" not in kern.source   # no per-lane gathers
    x = rows_with_edges(7, n)
    with np.errstate(invalid="ignore"):
        want = OPS[op][1](x, axis=1)
    out = ansorc.empty((7,))
    kern(ansorc.array(x), out)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-3, equal_nan=True)


def test_avx512_masked_loads_compile():
    """Rendered for AVX-512 (16-lane __mmask16 loads, 8-lane AVX ones for the short row), compiled with its flags."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    for n, op in ((197, "max"), (197, "sum"), (13, "max")):
        tensors, steps = guarded_rows(5, n, op, "avx512")
        code = generate_source(tensors, _state(tensors, steps), target="avx512").code
        want = {"max": "_mm512_mask_loadu_ps", "sum": "_mm512_maskz_loadu_ps"}[op] if n > 16 else "_mm256_maskload_ps"
        assert want in code and "(const float[" not in code, code
        src = Path(tempfile.mkdtemp()) / "k.c"
        src.write_text(code)
        cmd = ["gcc", "-O2", "-std=c99", "-mavx512f", "-mfma", "-fopenmp", "-c", str(src), "-o",
               str(src.with_suffix(".o"))]
        res = subprocess.run(cmd, capture_output=True, text=True)
        assert res.returncode == 0, res.stderr[-2000:]


@pytest.mark.parametrize("op", sorted(OPS))
def test_no_access_past_the_buffer_under_asan(op):
    """The driver allocates x exactly, so the last row ends at the allocation's end (ASan checks every plain load,
    including the unmasked copy of each tile; it does not see inside a masked load, the next test does)."""
    isa = RUNNABLE[0]
    tensors, steps = guarded_rows(6, 197, op, isa)
    dag = ansorc.ComputeDAG(tensors)
    source = generate_source(tensors, _state(tensors, steps), target=isa)
    inputs = {"x": rows_with_edges(6, 197)}
    check_sanitized(dag, source, inputs, evaluate(list(dag.outputs), inputs), f"guarded {op} rows")


# a child process (a fault kills it, not pytest) runs the kernel on x placed against a PROT_NONE page
_AGAINST_A_PAGE = r"""
import ctypes, mmap, sys
import numpy as np
lib, entry, side, xpath, ypath, ysize = sys.argv[1:7]
x = np.load(xpath)
page = mmap.PAGESIZE
span = -(-x.nbytes // page) * page
m = mmap.mmap(-1, span + 2 * page)
base = ctypes.addressof(ctypes.c_char.from_buffer(m))
at = page + (span - x.nbytes if side == "end" else 0)     # the data ends at, or starts right after, a guard page
np.frombuffer(m, np.float32, x.size, at)[:] = x.ravel()
libc = ctypes.CDLL(None)
libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
assert libc.mprotect(base, page, 0) == 0 and libc.mprotect(base + page + span, page, 0) == 0
y = np.zeros(int(ysize), np.float32)
fn = getattr(ctypes.CDLL(lib), entry)
fn.argtypes = (ctypes.c_void_p, ctypes.c_void_p)
assert fn(base + at, y.ctypes.data) == 0
np.save(ypath, y)
"""


def _run_against_a_page(kern, x: np.ndarray, side: str, ysize: int) -> np.ndarray:
    with tempfile.TemporaryDirectory() as tmp:
        xpath, ypath = f"{tmp}/x.npy", f"{tmp}/y.npy"
        np.save(xpath, x)
        proc = subprocess.run([sys.executable, "-c", _AGAINST_A_PAGE, kern.lib_path, kern.name, side, xpath, ypath,
                               str(ysize)], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, f"the kernel faulted or failed ({proc.returncode}): {proc.stderr[-2000:]}"
        return np.load(ypath)


@pytest.mark.parametrize("isa", RUNNABLE)
@pytest.mark.parametrize("n", [197, 13])
def test_masked_lanes_past_the_row_end_are_never_read(isa, n):
    tensors, steps = guarded_rows(3, n, "max", isa)
    kern = ansorc.build(tensors, _state(tensors, steps), target=isa, name=f"page_end_{n}_{isa}")
    x = rows_with_edges(5, n)[2:]
    got = _run_against_a_page(kern, x, "end", 3)
    np.testing.assert_array_equal(got, np.max(x, axis=1))


@pytest.mark.parametrize("isa", RUNNABLE)
@pytest.mark.parametrize("side", ["start", "end"])
@pytest.mark.parametrize("n, piece", [(13, 8), (29, 16)])
def test_a_padded_copy_never_reads_before_or_after_its_rows(isa, side, n, piece):
    tensors, steps = padded_rows(3, n, piece)
    kern = ansorc.build(tensors, _state(tensors, steps), target=isa, name=f"pad_{n}_{piece}_{isa}")
    assert "maskload" in kern.source or "_mm512_mask_loadu_ps" in kern.source
    x = rows_with_edges(5, n)[:3]
    got = _run_against_a_page(kern, x, side, 3 * (n + 4)).reshape(3, n + 4)
    np.testing.assert_array_equal(got, evaluate([tensors[1]], {"x": x})["y"])
