"""Inlining a stage its readers read many times per element copies its body into each read: such stages stay
materialized (ir/schedule/inline_cost.py), in the default schedule and in the sketch rules alike."""
from ansorc import te
from ansorc.ir.program.dag import ComputeDAG
from ansorc.ir.schedule.inline_cost import INLINE_GROWTH, inline_growth, inlining_bloats, uses
from ansorc.ir.schedule.state import State
from ansorc.net.ops.trig import _TRIG
from ansorc.search.default_schedule import default_cpu_schedule
from ansorc.search.rules import SKIP, AlwaysInline


def _many_reads(x, k):
    terms = [x * float(j) for j in range(k + 1)]   # x read k + 1 times, summed pairwise (a shallow tree)
    while len(terms) > 1:
        terms = [a + b for a, b in zip(terms[::2], terms[1::2])] + terms[len(terms) // 2 * 2:]
    return terms[0]


def _program(reads: int):
    a = te.placeholder((64,), name="a")
    t = te.compute((64,), lambda i: te.tanh(a[i]), name="t")
    b = te.compute((64,), lambda i: _many_reads(t[i], reads), name="b")
    return ComputeDAG([a, b])


def test_a_stage_read_once_inlines_and_one_read_thousands_of_times_does_not():
    few, many = State.initial(_program(1)), State.initial(_program(3000))
    assert uses(few, "t") == 2 and not inlining_bloats(few, "t")
    assert uses(many, "t") == 3001 and inline_growth(many, "t") > INLINE_GROWTH and inlining_bloats(many, "t")
    assert default_cpu_schedule(_program(1), "avx2").stage("t").compute_at == "inline"
    assert default_cpu_schedule(_program(3000), "avx2").stage("t").compute_at != "inline"
    i = [s.name for s in many.stages].index("t")
    assert AlwaysInline().condition(None, many, i) == SKIP


def test_trigonometric_ops_read_their_input_a_bounded_number_of_times():
    from ansorc.ir.program.expr import Read, walk
    a = te.placeholder((8,), name="a")
    for name, fn in _TRIG.items():
        body = te.compute((8,), lambda i: fn(a[i]), name="y").op.body
        n = sum(isinstance(e, Read) for e in walk(body))
        assert n <= 256, (name, n)   # nested selects once read it 2,925 times (Asin)
