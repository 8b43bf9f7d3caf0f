"""The row_pad pragma (ir/lowering/layout.py): a workspace stored with each innermost row one cache line longer. Which
workspaces qualify, the lowered buffer (flat indices over the padded rows, bounds over the logical shape), what
ignores it (arguments, GPU programs, the A/B switch), and how the search sets and switches it."""
import random

import pytest

import ansorc
from ansorc import workloads
from ansorc.codegen.target import Target

from ansorc.ir.lowering.layout import aliasing_rows, row_pad
from ansorc.ir.lowering.lower import LowerOptions, lower
from ansorc.ir.schedule.state import State
from ansorc.ir.schedule.steps import Annotate, Pragma, Split
from ansorc.ir.lowering.stmt import Allocate, Buffer, walk_stmt
from ansorc.ir.passes.verify import check_in_bounds
from ansorc.search.annotate import pad_aliasing_rows, row_pad_candidates
from ansorc.search.mutate import mutate_row_pad
from ansorc.search.task import SearchTask
from ansorc.spec import KernelSpec

@pytest.mark.parametrize("shape, dtype, aliases", [
    ((1, 9, 9, 512), "float32", True),      # 9 columns 2 KB apart
    ((18, 16, 16, 256), "float32", True),   # 1 KB columns, but 16 KB rows and 256 KB depth planes
    ((4, 1024), "float64", True),           # 8 KB rows of doubles
    ((1, 57, 57, 256), "float32", False),   # 1 KB columns, 57 KB rows: no stride a multiple of 2 KB
    ((1, 2048), "float32", False),          # one row: nothing beside it to alias with
    ((64, 1, 1024, 16), "float32", False),  # a blocked matmul panel: 64-byte rows, read whole
    ((12, 64, 128), "float32", False),      # 512-byte rows: a line each would cost 12.5%
    ((4096,), "float32", False),
])
def test_a_workspace_qualifies_when_its_long_rows_stride_by_a_multiple_of_2_kb(shape, dtype, aliases):
    assert aliasing_rows(shape, dtype) == aliases

def test_the_padding_is_one_cache_line_and_the_storage_counts_it():
    assert (row_pad("float32"), row_pad("float64"), row_pad("int32")) == (16, 8, 16)
    b = Buffer("p", (3, 9, 512), "float32", "global", 16)
    assert b.storage == (3, 9, 528) and b.size == 3 * 9 * 528 and b.shape == (3, 9, 512)
    assert Buffer("q", (3, 4), "float32", "global").storage == (3, 4)

def conv_state(ci: int, pad_rows: bool = True):
    st = State.initial(ansorc.ComputeDAG(workloads.c2d(1, 5, 5, ci, 8, 3, 1, 1)))
    st = st.apply(Split("pad", "i3", (8,))).apply(Annotate("pad", "i3.1", "vectorize"))
    return st.apply(Pragma("pad", "i0", "row_pad", 1)) if pad_rows else st

def allocations(func) -> dict:
    return {s.buffer.name: s.buffer for s in walk_stmt(func.body) if isinstance(s, Allocate)}

def test_a_padded_input_copy_of_512_channels_is_stored_in_rows_of_528():
    f = lower(conv_state(512))
    assert allocations(f)["pad"].row_pad == 16
    check_in_bounds(f)
    st = conv_state(512)
    code = KernelSpec.of(st.dag, st, Target.from_name("generic")).source("k").code
    assert "3696" in code and "3584" not in code   # a row of the 7 x 7 x 528 copy, not of 7 x 7 x 512
    assert allocations(lower(conv_state(512, pad_rows=False)))["pad"].row_pad == 0

def test_the_switch_arguments_and_gpu_programs_ignore_the_pragma():
    f = lower(conv_state(512))
    assert all(b.row_pad == 0 for b in f.args)
    st = State.initial(conv_state(512).dag).apply(Split("pad", "i3", (64,))) \
        .apply(Annotate("pad", "i3.0", "blockIdx.x")).apply(Annotate("pad", "i3.1", "threadIdx.x")) \
        .apply(Pragma("pad", "i0", "row_pad", 1))
    assert allocations(lower(st))["pad"].row_pad == 0
    assert allocations(lower(conv_state(512)))["pad"].row_pad > 0
    assert allocations(lower(conv_state(512), options=LowerOptions(pad_rows=False)))["pad"].row_pad == 0

def test_annotation_sets_the_pragma_at_random_only_where_rows_alias():
    aliasing = conv_state(512, pad_rows=False)
    assert [s.name for s in row_pad_candidates(aliasing)] == ["pad"]
    seen = {any(isinstance(s, Pragma) and s.key == "row_pad"
                for s in pad_aliasing_rows(None, aliasing, random.Random(seed)).steps) for seed in range(16)}
    assert seen == {True, False}
    plain = conv_state(96, pad_rows=False)
    assert not row_pad_candidates(plain)
    assert pad_aliasing_rows(None, plain, random.Random(0)).steps == plain.steps

def test_the_mutation_switches_the_pragma_on_and_off():
    st = conv_state(512, pad_rows=False)
    task = SearchTask(st.dag)
    on = mutate_row_pad(task, st, random.Random(0))
    assert allocations(lower(on))["pad"].row_pad == 16
    off = mutate_row_pad(task, on, random.Random(0))
    assert off.steps == st.steps
    assert mutate_row_pad(task, conv_state(96, pad_rows=False), random.Random(0)) is None
