"""Workspaces whose rows alias in L1 are stored with each innermost row one cache line longer (ir/layout.py): the
rule, the lowered buffer, flat indices over the padded rows, bounds over the logical shape; arguments, prepared
copies, local tiles and GPU programs keep their layout."""
import pytest

import ansorc
from ansorc import workloads
from ansorc.codegen.target import Target
from ansorc.ir import lower as lower_mod
from ansorc.ir.layout import row_pad
from ansorc.ir.lower import lower
from ansorc.ir.state import State
from ansorc.ir.steps import Annotate, Split
from ansorc.ir.stmt import Allocate, Buffer, walk_stmt
from ansorc.ir.verify import check_in_bounds
from ansorc.spec import KernelSpec


@pytest.mark.parametrize("shape, dtype, pad", [
    ((1, 9, 9, 512), "float32", 16),      # 9 columns 2 KB apart
    ((18, 16, 16, 256), "float32", 16),   # 1 KB columns, but 16 KB rows and 256 KB depth planes
    ((4, 1024), "float64", 8),            # 8 KB rows of doubles
    ((1, 58, 58, 64), "float32", 0),      # 256 B columns, 14.5 KB rows: no stride a multiple of 2 KB
    ((1, 2048), "float32", 0),            # one row: nothing beside it to alias with
    ((64, 1, 1024, 16), "float32", 0),    # a blocked matmul panel: 64-byte rows, read whole
    ((12, 64, 128), "float32", 0),        # 512-byte rows: a line each would cost 12.5%
    ((4096,), "float32", 0),
])
def test_a_workspace_row_is_padded_by_a_line_when_an_outer_stride_is_a_multiple_of_2_kb(shape, dtype, pad):
    assert row_pad(shape, dtype) == pad


def test_the_storage_shape_and_size_count_the_padding():
    b = Buffer("p", (3, 9, 512), "float32", "global", 16)
    assert b.storage == (3, 9, 528) and b.size == 3 * 9 * 528 and b.shape == (3, 9, 512)
    assert Buffer("q", (3, 4), "float32", "global").storage == (3, 4)


def conv_state(ci: int):
    tensors = workloads.c2d(1, 5, 5, ci, 8, 3, 1, 1)
    st = State.initial(ansorc.ComputeDAG(tensors))
    return st.apply(Split("pad", "i3", (8,))).apply(Annotate("pad", "i3.1", "vectorize"))


def allocations(func) -> dict:
    return {s.buffer.name: s.buffer for s in walk_stmt(func.body) if isinstance(s, Allocate)}


def test_a_padded_input_copy_of_512_channels_is_stored_in_rows_of_528():
    f = lower(conv_state(512))
    assert allocations(f)["pad"].row_pad == 16
    check_in_bounds(f)
    st = conv_state(512)
    code = KernelSpec.of(st.dag, st, Target.from_name("generic")).source("k").code
    assert "3696" in code and "3584" not in code   # a row of the 7 x 7 x 528 copy, not of 7 x 7 x 512


def test_a_copy_whose_rows_do_not_alias_and_the_switch_keep_the_plain_layout(monkeypatch):
    assert allocations(lower(conv_state(96)))["pad"].row_pad == 0
    monkeypatch.setattr(lower_mod, "PAD_ROWS", False)
    assert allocations(lower(conv_state(512)))["pad"].row_pad == 0


def test_arguments_and_gpu_programs_keep_their_layout():
    f = lower(conv_state(512))
    assert all(b.row_pad == 0 for b in f.args)
    st = conv_state(512)
    st = State.initial(st.dag).apply(Split("pad", "i3", (64,))).apply(Annotate("pad", "i3.0", "blockIdx.x")) \
        .apply(Annotate("pad", "i3.1", "threadIdx.x"))
    assert allocations(lower(st))["pad"].row_pad == 0
