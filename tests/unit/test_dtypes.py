"""One dtype table: codegen, the evaluator, the targets and the features agree on sizes and types."""
import numpy as np
import pytest

from ansorc.codegen import c, header, simd
from ansorc.codegen.target import ISA_SPECS, Target, library_flags
from ansorc.ir.program import dtypes
from ansorc.ir.program import evaluate
from ansorc.ir.program.expr import DTYPES
from ansorc.measure import builder


def test_every_ir_dtype_has_one_entry_and_numpy_agrees_on_its_size():
    assert set(dtypes.DTYPE_TABLE) == set(DTYPES)
    for name, d in dtypes.DTYPE_TABLE.items():
        assert np.dtype(d.np_dtype).itemsize == d.itemsize, name
        assert d.is_float == (name.startswith("float") or name == "bfloat16")
        assert d.compute in (None, "int32", "float32") and (d.compute is None) == (d.itemsize >= 4 or name == "bool")
    assert dtypes.np_dtype("bool") is np.bool_ and dtypes.c_type("bool") == "uint8_t"
    # 16-bit floats are their bits in C; numpy has float16, and bfloat16 is held as its uint16 bits
    assert dtypes.c_type("float16") == dtypes.c_type("bfloat16") == "uint16_t"
    assert dtypes.np_dtype("float16") is np.float16 and dtypes.np_dtype("bfloat16") is np.uint16
    assert [dtypes.DTYPE_TABLE[n].int_range for n in ("int8", "uint8", "int16", "int32")] == \
        [(-128, 127), (0, 255), (-32768, 32767), (-2**31, 2**31 - 1)]
    with pytest.raises(ValueError, match="unknown dtype"):
        dtypes.itemsize("float8")


def test_codegen_and_evaluator_read_the_table():
    assert c.C_TYPE is dtypes.C_TYPE and c.ITEMSIZE is dtypes.ITEMSIZE
    assert evaluate.NP_DTYPES is dtypes.NP_DTYPE
    assert all(simd.C_SCALAR[d] == dtypes.c_type(d) for d in simd.C_SCALAR)
    assert Target.from_name("avx2").lanes("float64") == 32 // 8


def test_compiler_flags_are_written_once():
    assert builder.DEFAULT_CFLAGS == library_flags() == ("-O3", "-march=native", "-fopenmp", "-shared", "-fPIC",
                                                         "-std=c99")
    assert header.BUILD_FLAGS == " ".join(library_flags()) + " -lm"
    for isa, spec in ISA_SPECS.items():
        assert Target.from_name(isa).flags == library_flags(spec.flags)
        assert Target.from_name(isa).vector_registers == spec.vector_registers
