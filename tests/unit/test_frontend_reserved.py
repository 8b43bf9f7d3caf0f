"""Names C rejects or that shadow the C library (issue 12 row 7): the expression-file checker refuses them with one
line naming the name and why; names given to the te API are renamed in the generated C instead."""
from __future__ import annotations

import pytest

from ansorc.frontend import TeError, parse_text
from ansorc.ir.program import te
from ansorc.ir.program.c_reserved import reserved_reason
from ansorc.ir.program.names import c_ident

RESERVED = {  # name -> a fragment of the reason
    "expf": "C library", "sqrtf": "C library", "malloc": "C library", "memset": "C library", "INFINITY": "C library",
    "y0": "C library", "main": "C library", "int32_t": "stdint.h", "uint8_t": "stdint.h", "INT32_MAX": "stdint.h",
    "float32x4_t": "arm_neon.h", "_mm256_add_ps": "immintrin.h", "omp_get_num_threads": "OpenMP",
    "while": "C keyword", "restrict": "C keyword", "ansorc_status": "ansorc_", "ANSORC_PRELUDE": "ansorc_",
    "__x": "reserved in C", "_Foo": "reserved in C",
}
ALLOWED = ("A", "B", "Pad", "expf2", "my_exp", "data", "out", "Wt", "x", "_tmp", "int24", "sum_t", "vec")


@pytest.mark.parametrize("name", sorted(RESERVED))
def test_reserved_name_as_tensor_is_one_line_naming_it_and_why(name):
    text = f"input {name}: float32[4]\noutput C[i] = {name}[i] + 1.0\n"
    with pytest.raises(TeError) as info:
        parse_text(text, "r.te")
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith("r.te:1:") and f"'{name}'" in msg and RESERVED[name] in msg


@pytest.mark.parametrize("name", ["expf", "int32_t", "INFINITY", "ansorc_i"])
def test_reserved_name_as_index_or_output_is_rejected(name):
    with pytest.raises(TeError, match=f"'{name}'.*cannot name an index"):
        parse_text(f"input A: float32[4]\noutput C[{name}] = A[{name}]\n", "r.te")
    with pytest.raises(TeError, match=f"'{name}'"):
        parse_text(f"input A: float32[4]\noutput {name}[i] = A[i]\n", "r.te")


@pytest.mark.parametrize("name", ALLOWED)
def test_ordinary_names_are_accepted(name):
    assert reserved_reason(name) is None
    prog = parse_text(f"input {name}: float32[4]\noutput Out[i] = {name}[i]\n", "ok.te")
    assert [t.name for t in prog.inputs] == [name]


@pytest.mark.parametrize("name", sorted(RESERVED))
def test_c_ident_renames_what_would_shadow_the_c_library(name):
    ident = c_ident(name)
    assert ident != name and ident.endswith(name) and reserved_reason(ident) is None


def test_te_names_reach_c_renamed():
    from ansorc.codegen.pipeline import render
    a = te.placeholder((8,), "float64", name="exp")
    b = te.compute((8,), lambda i: te.exp(a[i]), name="INFINITY")
    code = render([a, b], None, "memset").code
    assert "u_exp[" in code and "u_INFINITY[" in code and "int u_memset(" in code
    assert "exp(u_exp[" in code  # the library function is still reachable
