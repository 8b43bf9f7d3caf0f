"""onnx's backend node cases of LSTM, GRU and RNN (test_lstm_*, test_gru_*, test_simple_rnn_*,
test_rnn_seq_length): every one through the numpy reference executor and compiled to C. The full conformance run
(test_conformance.py) compiles only every fourth case."""
import functools

import pytest

from ansorc.net.backend import compiled, reference
from ansorc.net.ops import SUPPORT

from .conformance import node_cases, run_all

RECURRENT = ("LSTM", "GRU", "RNN")


def recurrent_cases() -> list:
    return [c for c in node_cases() if c.model is not None and c.model.graph.node[0].op_type in RECURRENT]


@pytest.mark.parametrize("executor", ["reference", "compiled"])
def test_recurrent_node_cases_pass(executor):
    cases = recurrent_cases()
    assert len(cases) >= 18, [c.name for c in cases]  # onnx 1.1x has 18; fewer means the loader changed
    run = {"reference": reference, "compiled": compiled}[executor]
    report = run_all(SUPPORT, cases, executor=functools.partial(run, table=SUPPORT))
    assert len(report.by("passed")) == len(cases), report.text()
