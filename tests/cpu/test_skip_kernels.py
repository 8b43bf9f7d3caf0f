"""Kernels that skip identity steps (ir/passes/skip.py) compute what numpy computes: random programs of a zero-padded
conv (sum), a -inf-padded max-plus conv (max) and a causal matmul (a reduction's `where`, guards relaxed to
whole blocks); mostly ones with skip guards or copies without the selects (at least three of each), so that
the test checks the code it is about."""
import pytest

from ansorc import te, workloads
from ansorc.api import generate_source
from ansorc.ir.program.expr import Logic
from ansorc.ir.lowering.lower import lower
from ansorc.ir.lowering.stmt import IfThenElse, walk_stmt
from ansorc.search.annotate import sample
from ansorc.search.task import HardwareParams, SearchTask

from .helpers import check_in_worker

FLAGS = ("-O1", "-march=native", "-fopenmp", "-shared", "-fPIC", "-std=c99")


def max_plus_conv(H=6, W=6, C=64, K=32):
    """A max-plus conv (morphological dilation over channels) with -inf padding, the identity of max."""
    data = te.placeholder((H, W, C), name="data")
    weight = te.placeholder((3, 3, C, K), name="weight")
    pad = te.compute((H + 2, W + 2, C), lambda h, w, c: te.if_then_else(
        te.all(h >= 1, h < H + 1, w >= 1, w < W + 1), data[h - 1, w - 1, c], float("-inf")), name="pad")
    rh, rw, rc = te.reduce_axis((0, 3), "rh"), te.reduce_axis((0, 3), "rw"), te.reduce_axis((0, C), "rc")
    out = te.compute((H, W, K), lambda h, w, k: te.max(pad[h + rh, w + rw, rc] + weight[rh, rw, rc, k],
                                                       axis=[rh, rw, rc]), name="mpconv")
    return [data, weight, out]


def causal_matmul(N=96):
    a, b = te.placeholder((N, N), name="a"), te.placeholder((N, N), name="b")
    k = te.reduce_axis((0, N), "k")
    return [a, b, te.compute((N, N), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k, where=k <= i), name="cm")]


CASES = {
    "causal_matmul": causal_matmul,
    "conv": lambda: workloads.c2d(1, 6, 6, 64, 32, 3, 1, 1),
    "max_plus_conv": max_plus_conv,
}


def _skips(dag, state) -> int:
    return sum(isinstance(s, IfThenElse) and s.skip for s in walk_stmt(lower(state, "k", passes=False).body))


def _versions(dag, state) -> int:
    """Copies of a reduction's loops without its index selects (the other copy runs under `!cond`)."""
    return sum(isinstance(s, IfThenElse) and isinstance(s.cond, Logic) and s.cond.op == "!"
               for s in walk_stmt(lower(state, "k", passes=False).body))


@pytest.mark.parametrize("case", sorted(CASES))
def test_random_programs_with_skip_guards_match_numpy(case):
    task = SearchTask(CASES[case](), hw=HardwareParams(num_cores=2))
    progs = sample(task, 40, seed=7)
    guarded = [p for p in progs if _skips(task.dag, p) or _versions(task.dag, p)]
    assert sum(1 for p in progs if _skips(task.dag, p)) >= 3, f"{case}: fewer than 3 programs skip steps"
    assert sum(1 for p in progs if _versions(task.dag, p)) >= 3, f"{case}: fewer than 3 programs have copies"
    progs = guarded[:16] + [p for p in progs if p not in guarded][:4]
    sources = [generate_source(task.dag, p, name=f"{case}_{k}") for k, p in enumerate(progs)]
    check_in_worker(task.dag, progs, sources, FLAGS, case)
