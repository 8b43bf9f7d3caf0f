"""ONNX LSTM, GRU and RNN lowered to te (ops_recurrent.py), evaluated with numpy, against onnxruntime: layouts,
directions, initial states, sequence_lens (run-time and constant), peepholes, clip, input_forget,
linear_before_reset, other activations, and the one-line refusals."""
import numpy as np
import pytest

from ansorc.net.network import UnsupportedError

from .nn_harness import check_op, lower_and_run, model_of, run_ort

RNG = np.random.default_rng(5)
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def r(*shape, scale=0.5):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def inputs(op, seq=5, batch=3, inp=4, hidden=6, dirs=1, layout=0, bias=True, lens=None, h0=False, c0=False,
           peep=False):
    """X, W, R, B, sequence_lens, initial_h, initial_c, P (None where omitted; trailing Nones dropped)."""
    g = GATES[op]
    x = r(batch, seq, inp) if layout else r(seq, batch, inp)
    state = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
    out = [x, r(dirs, g * hidden, inp), r(dirs, g * hidden, hidden), r(dirs, 2 * g * hidden) if bias else None,
           None if lens is None else np.array(lens, np.int32), r(*state) if h0 else None,
           r(*state) if c0 else None, r(dirs, 3 * hidden) if peep else None]
    while out[-1] is None:
        out.pop()
    return out


N_OUT = {"LSTM": 3, "GRU": 2, "RNN": 2}


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_directions_with_initial_state(op, direction):
    dirs = 2 if direction == "bidirectional" else 1
    ins = inputs(op, dirs=dirs, h0=True, c0=op == "LSTM")
    check_op(op, ins, {"hidden_size": 6, "direction": direction}, n_out=N_OUT[op], opset=14)


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_sequence_lens_at_run_time_mask_and_carry(op, direction):
    """Entries shorter than seq output 0 past their length and keep their state; reverse runs within it."""
    dirs = 2 if direction == "bidirectional" else 1
    ins = inputs(op, dirs=dirs, lens=[5, 2, 3], h0=True, c0=op == "LSTM")
    check_op(op, ins, {"hidden_size": 6, "direction": direction}, n_out=N_OUT[op], opset=14)


def check_layout_1(op, ins, attrs, consts=()):
    """onnxruntime has no layout 1: compare with its layout-0 run on the transposed inputs and outputs."""
    swap = [None if a is None else a.swapaxes(0, 1) if i in (0, 5, 6) else a for i, a in enumerate(ins)]
    want = run_ort(model_of(op, swap, N_OUT[op], attrs, 14), swap)
    want = [want[0].transpose(2, 0, 1, 3)] + [w.swapaxes(0, 1) for w in want[1:]]
    got, _ = lower_and_run(op, ins, [w.shape for w in want], {**attrs, "layout": 1}, 14, consts)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
    if len(ins) <= 4 or ins[4] is None:  # onnx's reference evaluator has layout 1 but ignores sequence_lens
        from onnx.reference import ReferenceEvaluator
        model = model_of(op, ins, N_OUT[op], {**attrs, "layout": 1}, 14)
        feeds = {f"x{i}": a for i, a in enumerate(ins) if a is not None}
        for g, w in zip(got, ReferenceEvaluator(model).run(None, feeds)):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_sequence_lens_constant_with_layout_1_and_no_initial_state():
    ins = inputs("LSTM", dirs=2, layout=1, lens=[1, 5, 4])
    check_layout_1("LSTM", ins, {"hidden_size": 6, "direction": "bidirectional"}, consts=(1, 2, 3, 4))


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_layout_1_with_initial_state(op):
    ins = inputs(op, dirs=2, layout=1, h0=True, c0=op == "LSTM")
    check_layout_1(op, ins, {"hidden_size": 6, "direction": "bidirectional"})


def test_lstm_peepholes_clip_and_input_forget():
    ins = inputs("LSTM", h0=True, c0=True, peep=True, lens=[5, 5, 5])
    check_op("LSTM", [i * 3 if i is not None and i.dtype == np.float32 else i for i in ins],
             {"hidden_size": 6, "clip": 0.7, "input_forget": 1}, n_out=3, opset=14)


@pytest.mark.parametrize("lbr", [0, 1])
def test_gru_linear_before_reset_with_and_without_initial_state(lbr):
    for h0 in (False, True):
        check_op("GRU", inputs("GRU", dirs=2, h0=h0), {"hidden_size": 6, "direction": "bidirectional",
                                                         "linear_before_reset": lbr}, n_out=2, opset=14)


def test_other_activations_take_alpha_and_beta_in_order():
    acts = {"activations": ["HardSigmoid", "ScaledTanh", "LeakyRelu"], "activation_alpha": [0.3, 0.8, 0.05],
            "activation_beta": [0.4, 1.2]}
    check_op("LSTM", inputs("LSTM", h0=True), {"hidden_size": 6, **acts}, n_out=3, opset=14)
    check_op("RNN", inputs("RNN", dirs=2), {"hidden_size": 6, "direction": "bidirectional",
                                            "activations": ["Relu", "Sigmoid"]}, n_out=2, opset=14)


def _lower(op, ins, attrs):
    return lower_and_run(op, ins, [None, (1, 3, 6)], attrs, 14, (), None, "rnn1")


def test_refusals_name_the_node_in_one_line():
    with pytest.raises(UnsupportedError, match=r"node 'rnn1' \(RNN\).*activation 'Gelu'"):
        _lower("RNN", inputs("RNN"), {"hidden_size": 6, "activations": ["Gelu"]})
    with pytest.raises(UnsupportedError, match=r"node 'rnn1' \(GRU\).*more than the 256 steps"):
        _lower("GRU", inputs("GRU", seq=300, batch=1), {"hidden_size": 6})
    with pytest.raises(UnsupportedError, match=r"node 'rnn1' \(LSTM\).*sequence_lens \[6, 1, 1\]"):
        lower_and_run("LSTM", inputs("LSTM", lens=[6, 1, 1]), [None, (1, 3, 6)], {"hidden_size": 6}, 14, (4,),
                      None, "rnn1")


def test_constant_weights_states_and_peepholes_as_torch_exports_them():
    """torch.onnx.export passes W, R, B, initial_h/c (and here P) as initializers: the constant paths."""
    ins = inputs("LSTM", dirs=2, h0=True, c0=True, peep=True)
    assert len(ins) == 8 and ins[4] is None
    check_op("LSTM", ins, {"hidden_size": 6, "direction": "bidirectional"}, n_out=3, opset=14,
             consts=(1, 2, 3, 5, 6, 7))
