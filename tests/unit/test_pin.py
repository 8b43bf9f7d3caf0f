"""pin_operands: the weights vector a register tile's rows share is pinned in a register on AVX2 while the tile
leaves room for it, and nowhere else."""
from __future__ import annotations

import re

import ansorc
from ansorc import workloads
from ansorc.codegen import simd
from ansorc.codegen.c import lower_for_target
from ansorc.ir.lowering.lower import LowerOptions, lower
from ansorc.ir.schedule.state import replay
from ansorc.ir.schedule.steps import (Annotate, CacheWrite, ComputeAt, FollowSplit, Fuse, Pragma, Reorder, Split)
from ansorc.ir.passes.vector import VDecl, VLoad, walk_all

PIN = '__asm__("" : "+x"('


def _tile(rows: int, vectors: int, n: int = 56, k: int = 64):
    """C = A @ B with a register tile of `rows` x `vectors` AVX2 vectors, accumulated over all of k."""
    tensors = workloads.matmul(n, 8 * vectors * 2, k)
    steps = [CacheWrite("C", "local"), Split("C.local", "i", (rows,)), Split("C.local", "j", (8 * vectors,)),
             Reorder("C.local", ("j.0", "i.0", "k", "i.1", "j.1")), FollowSplit("C", "i", 1, 1),
             FollowSplit("C", "j", 2, 1), Reorder("C", ("j.0", "i.0", "i.1", "j.1")),
             ComputeAt("C.local", "C", "i.0"), Fuse("C", ("j.0", "i.0")), Annotate("C", "j.0@i.0", "parallel"),
             Annotate("C.local", "j.1", "vectorize"), Annotate("C", "j.1", "vectorize"),
             Pragma("C.local", "j.0", "auto_unroll_max_step", 512)]
    return tensors, steps


def _pinned(tensors, steps, isa: str) -> list:
    """The pinned registers of the program's one register tile (the peel of an overrunning last tile, lowering/peel.py,
    would add a copy of the tile with pins of its own)."""
    func = lower(replay(ansorc.ComputeDAG(tensors), steps), "kernel", options=LowerOptions(peel=False))
    return [v for s in walk_all(lower_for_target(func, isa).body) if isinstance(s, VDecl) and s.pin
            for v, _ in s.decls]


def test_a_tile_with_room_pins_each_shared_weights_vector():
    tensors, steps = _tile(4, 2)
    pinned = _pinned(tensors, steps, "avx2")
    assert len(pinned) == 2 and all(v.lanes == 8 for v in pinned)
    code = ansorc.generate_source(tensors, steps, target="avx2").code
    for v in pinned:   # declared from the load, then pinned; the FMAs read the register, not the load
        assert re.search(rf"__m256 {v.name} = _mm256_loadu_ps\(", code)
        assert PIN + v.name + "))" in code
        assert code.count(f", {v.name}, ") == 4   # one FMA per row of the tile


def test_only_what_fits_is_pinned():
    tensors, steps = _tile(7, 2)   # 14 accumulators + a broadcast leave room for one of the two operands
    assert len(_pinned(tensors, steps, "avx2")) == 1
    tensors, steps = _tile(8, 2)   # 16 accumulators: none
    assert _pinned(tensors, steps, "avx2") == []


def test_pins_fit_the_register_file():
    for rows in range(1, 8):
        tensors, steps = _tile(rows, 2)
        assert rows * 2 + len(_pinned(tensors, steps, "avx2")) + 1 <= simd.ISAS["avx2"][2]


def test_isas_without_a_pin_template_keep_the_compiler_choice():
    tensors, steps = _tile(4, 2)
    assert _pinned(tensors, steps, "avx512") == []
    assert PIN not in ansorc.generate_source(tensors, steps, target="avx512").code


def test_a_load_in_an_arm_of_a_select_is_not_pinned():
    # a padding read `inside ? A[i - 1] : 0` may point outside A when not taken: hoisted into a pinned register
    # it would always run (an ONNX MobileNet's padded depthwise conv failed check_in_bounds after the pass)
    from ansorc.ir.program.expr import Compare, Const, Var
    from ansorc.ir.passes.pin import _shared_loads
    from ansorc.ir.passes.vector import Broadcast, VAssign, VFma, VSelect, VVar
    caps = simd.caps("avx2")
    i = Var("i")
    load = VLoad("A", i, 8, "float32")
    zero = Broadcast(Const(0.0, "float32"), 8, "float32")
    padded = VSelect(Compare(">", i, Const(0, "int32")), load, zero, 8, "float32")
    accs = [VVar(f"acc{k}", 8, "float32") for k in range(2)]
    stmts = [VAssign(a, VFma(padded, zero, a, 8, "float32")) for a in accs]
    assert _shared_loads(stmts, caps) == {}
    plain = [VAssign(a, VFma(load, zero, a, 8, "float32")) for a in accs]
    assert _shared_loads(plain, caps) == {load: [0, 1]}
