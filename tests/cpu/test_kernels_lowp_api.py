"""The narrow element types through the Python API, the header and measurement: bfloat16 arrays are uint16 bits
(or ml_dtypes bfloat16 arrays, seen as their bits), headers say what a uint16_t argument holds, and the runner
draws inputs and checks outputs of every type (16-bit floats within a unit in their last place)."""
import numpy as np
import pytest

import ansorc
from ansorc import te
from ansorc.codegen.header import read_signature, render_header
from ansorc.ir.program.convert import from_bfloat16, to_bfloat16
from ansorc.measure.builder import build
from ansorc.measure.errors import MeasureErrorNo as E
from ansorc.measure.runner import Runner


def _scale(dtype: str, n: int = 64, k: float = 3.0, c: float = 1.0):
    x = te.placeholder((n,), dtype, "x")
    y = te.compute((n,), lambda i: (x[i].astype("float32") * k + c).astype(dtype), name="y")
    return [x, y]


def test_bfloat16_arguments_are_uint16_bits_or_ml_dtypes_arrays():
    kern = ansorc.build(_scale("bfloat16"), name="api_bf16")
    x = ansorc.array(to_bfloat16(np.arange(64, dtype=np.float32)))
    y = kern(x)
    assert y.dtype == np.uint16 and np.array_equal(from_bfloat16(y), np.arange(64, dtype=np.float32) * 3 + 1)
    assert ansorc.empty((3,), "bfloat16").dtype == np.uint16
    with pytest.raises(ansorc.AnsorcError, match="must have dtype bfloat16"):
        kern(np.zeros(64, np.float32))
    ml_dtypes = pytest.importorskip("ml_dtypes")
    xb, out = x.view(ml_dtypes.bfloat16), np.zeros(64, ml_dtypes.bfloat16)
    kern(xb, out)   # written in place through the uint16 view
    assert np.array_equal(out.view(np.uint16), y)


def test_headers_say_what_a_16_bit_float_argument_holds():
    x, y = _scale("float16")
    z = te.compute(x.shape, lambda i: x[i].astype("bfloat16"), name="z")
    text = render_header(ansorc.generate_source([x, y, z], name="h16"))
    assert "typedef uint16_t h16_x_t;  /* float16: the IEEE half bits */" in text
    assert "typedef uint16_t h16_z_t;  /* bfloat16: a float's high 16 bits */" in text
    assert [a["dtype"] for a in read_signature(text)["args"]] == ["float16", "float16", "bfloat16"]
    plain = render_header(ansorc.generate_source(_scale("float32"), name="h32"))
    assert "typedef float h32_x_t;\n" in plain and "/*" not in plain.split("typedef", 1)[1].split("\n")[0]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "int8", "uint8", "int16"])
def test_the_runner_measures_and_checks_every_type(dtype, tmp_path, monkeypatch):
    monkeypatch.setenv("ANSORC_CACHE_DIR", str(tmp_path / "cache"))
    if dtype in ("bfloat16", "float16"):
        good, wrong = _scale(dtype, c=1.001), _scale(dtype, k=2.0)   # 1.001: a unit in the last place apart
    else:
        x = te.placeholder((64,), dtype, "x")
        good = [x, te.compute((64,), lambda i: te.saturate_cast(x[i] * 3, dtype), name="y")]
        wrong = [x, te.compute((64,), lambda i: te.saturate_cast(x[i] * 2, dtype), name="y")]
    ref = _scale(dtype) if dtype in ("bfloat16", "float16") else good
    sources = [ansorc.generate_source(t, name=f"run_{dtype}_{k}") for k, t in enumerate((ref, good, wrong))]
    ref, same, bad = build(sources)
    with Runner(reference=ref, min_repeat_ms=1) as runner:   # random inputs of the type, outputs from `ref`
        ok, off = runner.run([same, bad])
    assert ok.error_code == E.NO_ERROR and off.error_code == E.WRONG_ANSWER, (ok, off)
