"""Fuzzing the importer: for any mutation of a valid model's bytes, import either returns a Network whose
outputs are computed tensors, or raises a one-line NetError; never any other exception."""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansorc.ir.program.te import ComputeOp
from ansorc.net.importer import import_model
from ansorc.net.network import NetError, Network

from .mini_ops import TABLE
from .test_importer import conv_bn

BASE = conv_bn(np.random.default_rng(0)).SerializeToString()
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def check(data: bytes):
    try:
        net = import_model(data, table=TABLE)
    except NetError as e:
        assert "\n" not in str(e) and str(e)
        return
    assert isinstance(net, Network) and all(isinstance(t.op, ComputeOp) for t in net.outputs)


@FUZZ
@given(st.lists(st.tuples(st.integers(0, len(BASE) - 1), st.integers(0, 255)), min_size=1, max_size=4))
def test_mutated_model_imports_or_raises_net_error(edits):
    data = bytearray(BASE)
    for at, value in edits:
        data[at] = value
    check(bytes(data))


@FUZZ
@given(st.integers(0, len(BASE)), st.binary(max_size=16))
def test_truncated_or_spliced_model_imports_or_raises_net_error(cut, tail):
    check(BASE[:cut] + tail)
