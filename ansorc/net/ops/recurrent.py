"""ONNX LSTM, GRU and RNN lowered to te, statically unrolled over the time steps (ONNX opset 7-22 semantics, as
onnxruntime computes them).

Per direction: the input projection X W^T for all time steps is one matmul (tag "matmul"); each step then has one
recurrence matmul H_{t-1} R^T (tag "dense"; none at the first step without initial_h) and one or two element-wise
stages for the gates and the new state. With sequence_lens, a batch entry's steps past its length keep its state
and output 0 in Y; the reverse direction runs over each entry's own first `length` steps, last to first (as
onnxruntime). Y picks each time step's state with a binary tree of selects (log2(seq) per element)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...ir.program import te
from ...ir.program.expr import binary, const
from .nn_util import FLOATS, spec

MAX_STEPS = 256          # time steps x directions unrolled; beyond, the te graph (3-4 stages a step) gets too big
_GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
_DEFAULT_ACTS = {"LSTM": ("Sigmoid", "Tanh", "Tanh"), "GRU": ("Sigmoid", "Tanh"), "RNN": ("Tanh",)}


def _clamp01(e):
    return binary("min", binary("max", e, const(0, e.dtype)), const(1, e.dtype))


# activation name (lower case) -> (fn(x, alpha, beta), default alpha or None when it takes none, default beta)
_ACTS = {
    "sigmoid": (lambda x, a, b: te.sigmoid(x), None, None),
    "tanh": (lambda x, a, b: te.tanh(x), None, None),
    "relu": (lambda x, a, b: binary("max", x, const(0, x.dtype)), None, None),
    "affine": (lambda x, a, b: x * a + b, 1.0, 0.0),
    "leakyrelu": (lambda x, a, b: te.if_then_else(x < 0, x * a, x), 0.01, None),
    "thresholdedrelu": (lambda x, a, b: te.if_then_else(x > a, x, const(0, x.dtype)), 1.0, None),
    "scaledtanh": (lambda x, a, b: te.tanh(x * b) * a, 1.0, 1.0),
    "hardsigmoid": (lambda x, a, b: _clamp01(x * a + b), 0.2, 0.5),
    "elu": (lambda x, a, b: te.if_then_else(x < 0, (te.exp(x) - 1.0) * a, x), 1.0, None),
    "softsign": (lambda x, a, b: x / (te.abs(x) + 1.0), None, None),
    "softplus": (lambda x, a, b: te.log(te.exp(x) + 1.0), None, None),
}


@dataclass(frozen=True)
class _Rnn:
    """The node's shapes and attributes, checked."""
    op: str
    seq: int
    batch: int
    hidden: int
    dirs: int
    reverse: tuple      # per direction: runs last step first
    layout: int
    acts: tuple         # per direction: the activation functions (x -> Expr), in the op's order
    clip: float | None
    dtype: str


def _activations(node, op: str, dirs: int) -> tuple:
    """The activation functions per direction; alphas and betas are taken in order by those that use them."""
    n = len(_DEFAULT_ACTS[op])
    names = list(node.attrs.get("activations") or _DEFAULT_ACTS[op] * dirs)
    if len(names) == n and dirs == 2:
        names = names * 2
    if len(names) != n * dirs:
        raise node.unsupported(f"activations={names} should have {n * dirs} entries")
    alphas = [float(a) for a in node.attrs.get("activation_alpha") or ()]
    betas = [float(b) for b in node.attrs.get("activation_beta") or ()]
    fns = []
    for name in names:
        if str(name).lower() not in _ACTS:
            raise node.unsupported(f"activation {name!r} (supported: {', '.join(sorted(_ACTS))})")
        fn, da, db = _ACTS[str(name).lower()]
        a = (alphas.pop(0) if alphas else da) if da is not None else None
        b = (betas.pop(0) if betas else db) if db is not None else None
        fns.append(lambda x, fn=fn, a=a, b=b: fn(x, a, b))
    return tuple(tuple(fns[d * n:(d + 1) * n]) for d in range(dirs))


def _params(node, op: str) -> _Rnn:
    sx, sw, sr = (tuple(node.in_shapes[i]) for i in range(3))
    layout = int(node.attrs.get("layout", 0))
    direction = node.attrs.get("direction", "forward")
    dirs = {"forward": 1, "reverse": 1, "bidirectional": 2}.get(direction)
    if layout not in (0, 1) or dirs is None:
        raise node.unsupported(f"layout={layout}, direction={direction!r}")
    if len(sx) != 3 or len(sw) != 3 or len(sr) != 3:
        raise node.unsupported(f"X, W and R should be 3-D, got {list(sx)}, {list(sw)}, {list(sr)}")
    seq, batch = (sx[1], sx[0]) if layout else (sx[0], sx[1])
    hidden = sr[2]
    gh = _GATES[op] * hidden
    if "hidden_size" in node.attrs and int(node.attrs["hidden_size"]) != hidden:
        raise node.unsupported(f"hidden_size={node.attrs['hidden_size']} but R has shape {list(sr)}")
    if sw != (dirs, gh, sx[2]) or sr != (dirs, gh, hidden):
        raise node.unsupported(f"W {list(sw)} / R {list(sr)} do not match X {list(sx)}, {dirs} direction(s), "
                               f"hidden size {hidden}")
    if seq < 1 or batch < 1:
        raise node.unsupported(f"X of shape {list(sx)} has no time steps or no batch entries")
    if seq * dirs > MAX_STEPS:
        raise node.unsupported(f"{seq} time steps x {dirs} direction(s) is more than the {MAX_STEPS} steps "
                               "unrolled")
    clip = node.attrs.get("clip")
    rev = (direction == "reverse",) if dirs == 1 else (False, True)
    return _Rnn(op, seq, batch, hidden, dirs, rev, layout, _activations(node, op, dirs),
                None if clip is None else float(clip), node.in_dtypes[0])


def _weight_reader(x, d: int, ctx, hint: str):
    """(k, j) -> W[d, j, k]: a constant is stored transposed (K, N) so the product reads b[k, j]."""
    if isinstance(x, np.ndarray):
        t = ctx.weight(np.ascontiguousarray(x[d].T), hint)
        return lambda k, j: t[k, j]
    return lambda k, j: x[d, j, k]


def _vector_reader(x, d: int, ctx, hint: str):
    """j -> x[d, j] (None for an omitted input)."""
    if x is None:
        return None
    if isinstance(x, np.ndarray):
        t = ctx.weight(np.ascontiguousarray(x[d]), hint)
        return lambda j: t[j]
    return lambda j: x[d, j]


def _state_reader(x, d: int, p: _Rnn, ctx, hint: str):
    """(b, h) -> the initial state of direction d (None when omitted: zeros)."""
    if x is None:
        return None
    if isinstance(x, np.ndarray):
        x = ctx.weight(np.ascontiguousarray(x[:, d] if p.layout else x[d]), hint)
        return lambda b, h: x[b, h]
    return (lambda b, h: x[b, d, h]) if p.layout else (lambda b, h: x[d, b, h])


class _Dir:
    """One direction's readers: the input projection, biases, recurrence weights, lengths and step mask."""

    def __init__(self, node, ins, p: _Rnn, d: int, ctx, lbr: bool):
        self.p, self.d, self.node, self.ctx = p, d, node, ctx
        name = f"{node.name}_d{d}"
        x = ins[0] if not isinstance(ins[0], np.ndarray) else ctx.weight(ins[0], f"{name}_X")
        w = _weight_reader(ins[1], d, ctx, f"{name}_W")
        self.r = _weight_reader(ins[2], d, ctx, f"{name}_R")
        gh, K = _GATES[p.op] * p.hidden, node.in_shapes[0][2]
        k = te.reduce_axis((0, K), "k")
        shape = (p.batch, p.seq, gh) if p.layout else (p.seq, p.batch, gh)
        self.xw = te.compute(shape, lambda a, b, j: te.sum(x[a, b, k.var] * w(k.var, j), axis=k),
                             name=ctx.name(f"{name}_xw"), tag="matmul")
        self.bias_x, self.bias_r = _biases(ins[3] if len(ins) > 3 else None, d, p, ctx, name, lbr)
        self.lens = _lengths(node, ins[4] if len(ins) > 4 else None, p, ctx)

    def x_proj(self, s: int, b, j):
        """The gate pre-activation from X (with its bias) for step s of batch entry b, output column j."""
        p = self.p
        if not p.reverse[self.d]:
            t = s
        elif self.lens is None:
            t = p.seq - 1 - s
        else:  # the entry's own steps, last first; a step past the length reads step 0 and is masked
            length = self.lens(b)
            t = te.checked_index(te.if_then_else(length > s, length - (s + 1), const(0, "int32")), p.seq)
        v = self.xw[b, t, j] if p.layout else self.xw[t, b, j]
        return v if self.bias_x is None else v + self.bias_x(j)

    def valid(self, s: int, b):
        """Whether step s runs for batch entry b (None: always)."""
        return None if self.lens is None else self.lens(b) > s

    def matmul(self, h, cols: int, first: int, s: int, what: str):
        """(batch, cols): h[b, :] R^T over R's rows first..first+cols."""
        k = te.reduce_axis((0, self.p.hidden), "k")
        return te.compute((self.p.batch, cols),
                          lambda b, j: te.sum(h(b, k.var) * self.r(k.var, j + first if first else j), axis=k),
                          name=self.ctx.name(f"{self.node.name}_d{self.d}_s{s}_{what}"), tag="dense")

    def stage(self, fn, s: int, what: str):
        return te.compute((self.p.batch, self.p.hidden), fn, name=self.ctx.name(f"{self.node.name}_d{self.d}_s{s}_"
                                                                                 f"{what}"), tag="rnn_cell")

    def clip(self, e):
        c = self.p.clip
        return e if c is None else binary("min", binary("max", e, const(-c, e.dtype)), const(c, e.dtype))


def _biases(b, d: int, p: _Rnn, ctx, name: str, lbr: bool):
    """(x-side bias j -> Wb + Rb, recurrence-side bias j -> Rb of GRU's h gate with linear_before_reset)."""
    if b is None:
        return None, None
    gh, H = _GATES[p.op] * p.hidden, p.hidden
    if isinstance(b, np.ndarray):
        xb = b[d, :gh] + b[d, gh:]
        if lbr:
            xb[2 * H:] = b[d, 2 * H:gh]
        xt = ctx.weight(np.ascontiguousarray(xb), f"{name}_B")
        rt = ctx.weight(np.ascontiguousarray(b[d, gh + 2 * H:]), f"{name}_Rbh") if lbr else None
        return (lambda j: xt[j]), (None if rt is None else (lambda j: rt[j]))
    if lbr:
        return ((lambda j: te.if_then_else(j < 2 * H, b[d, j] + b[d, gh + j], b[d, j])),
                (lambda j: b[d, gh + 2 * H + j]))
    return (lambda j: b[d, j] + b[d, gh + j]), None


def _lengths(node, lens, p: _Rnn, ctx):
    """b -> the batch entry's length (an int32 expr, checked to be in [0, seq]); None when all are seq."""
    if lens is None:
        return None
    if isinstance(lens, np.ndarray):
        if lens.shape != (p.batch,) or lens.min() < 0 or lens.max() > p.seq:
            raise node.unsupported(f"sequence_lens {lens.tolist()} should be {p.batch} lengths in [0, {p.seq}]")
        if (lens == p.seq).all():
            return None
        t = ctx.weight(lens.astype(np.int32), f"{node.name}_lens")
        return lambda b: t[b]
    return lambda b: te.checked_index(lens[b].astype("int32"), p.seq + 1)


def _keep(dr: _Dir, s: int, b, new, old):
    """The masked state: `new` where step s runs for b, else the carried `old` (0 when there is none)."""
    ok = dr.valid(s, b)
    if ok is None:
        return new
    return te.if_then_else(ok, new, old if old is not None else const(0, new.dtype))


def _reads(t):
    return lambda b, j: t[b, j]


def _plus(v, mm, b, col):
    return v if mm is None else v + mm[b, col]


def _lstm_step(dr: _Dir, s: int, h, c, peep, input_forget: bool):
    """One LSTM step (gates i, o, f, c; peepholes i, o, f): the new (H, C) tensors."""
    H, (f, g, act_h) = dr.p.hidden, dr.p.acts[dr.d]
    mm = dr.matmul(h, 4 * H, 0, s, "mm") if h is not None else None

    def pre(b, gate, j, extra=None):
        v = _plus(dr.x_proj(s, b, gate * H + j), mm, b, gate * H + j)
        return dr.clip(v if extra is None else v + extra)

    def peephole(gate, j, state):
        return None if peep is None or state is None else peep(gate * H + j) * state

    def cell(b, j):
        cp = c(b, j) if c is not None else None
        i = f(pre(b, 0, j, peephole(0, j, cp)))
        cand = g(pre(b, 3, j)) * i
        if cp is None:
            return _keep(dr, s, b, cand, None)
        fg = 1.0 - i if input_forget else f(pre(b, 2, j, peephole(2, j, cp)))
        return _keep(dr, s, b, fg * cp + cand, cp)
    C = dr.stage(cell, s, "c")

    def hidden(b, j):
        cn = C[b, j]
        o = f(pre(b, 1, j, peephole(1, j, cn)))
        return _keep(dr, s, b, o * act_h(cn), h(b, j) if h is not None else None)
    return dr.stage(hidden, s, "h"), C


def _gru_step(dr: _Dir, s: int, h, lbr: bool):
    """One GRU step (gates z, r, h): the new H tensor."""
    H, (f, g) = dr.p.hidden, dr.p.acts[dr.d]
    mm = dr.matmul(h, (3 if lbr else 2) * H, 0, s, "mm") if h is not None else None

    def gate(b, k, j):
        return f(dr.clip(_plus(dr.x_proj(s, b, k * H + j), mm, b, k * H + j)))
    if lbr:
        def candidate(b, j):
            rec = mm[b, 2 * H + j] if mm is not None else None
            if dr.bias_r is not None:
                rec = dr.bias_r(j) if rec is None else rec + dr.bias_r(j)
            v = dr.x_proj(s, b, 2 * H + j)
            return g(dr.clip(v if rec is None else v + gate(b, 1, j) * rec))
    else:
        mmh = None
        if h is not None:
            rh = dr.stage(lambda b, j: gate(b, 1, j) * h(b, j), s, "rh")
            mmh = dr.matmul(_reads(rh), H, 2 * H, s, "mmh")

        def candidate(b, j):
            return g(dr.clip(_plus(dr.x_proj(s, b, 2 * H + j), mmh, b, j)))

    def hidden(b, j):
        z = gate(b, 0, j)
        new = (1.0 - z) * candidate(b, j)
        old = h(b, j) if h is not None else None
        return _keep(dr, s, b, new if old is None else new + z * old, old)
    return dr.stage(hidden, s, "h")


def _rnn_step(dr: _Dir, s: int, h):
    f = dr.p.acts[dr.d][0]
    mm = dr.matmul(h, dr.p.hidden, 0, s, "mm") if h is not None else None
    old = (lambda b, j: h(b, j)) if h is not None else (lambda b, j: None)
    return dr.stage(lambda b, j: _keep(dr, s, b, f(dr.clip(_plus(dr.x_proj(s, b, j), mm, b, j))), old(b, j)),
                    s, "h")


def _pick(steps, s, lo: int, hi: int, b, j):
    """steps[s][b, j] for a run-time step s in [lo, hi): a balanced tree of selects."""
    if hi - lo == 1:
        return steps[lo][b, j]
    mid = (lo + hi) // 2
    return te.if_then_else(s < mid, _pick(steps, s, lo, mid, b, j), _pick(steps, s, mid, hi, b, j))


def _y_of(dr: _Dir, steps, t, b, j):
    """Y[t] of one direction: the state after the step that read time t (0 past the entry's length)."""
    p = dr.p
    if not p.reverse[dr.d]:
        s = t
    else:
        s = (p.seq - 1 - t) if dr.lens is None else dr.lens(b) - (t + 1)
    v = _pick(steps, s, 0, p.seq, b, j)
    return v if dr.lens is None else te.if_then_else(dr.lens(b) > t, v, const(0, v.dtype))


def _by_dir(d, per_dir):
    """per_dir[d] for a loop index d over at most two directions."""
    return per_dir[0]() if len(per_dir) == 1 else te.if_then_else(d < 1, per_dir[0](), per_dir[1]())


def _outputs(node, p: _Rnn, dirs: list, steps: list, cells: list, ctx) -> list:
    """[Y, Y_h, Y_c] (None for outputs the node does not ask for)."""
    want = [i < len(node.out_shapes) and node.out_shapes[i] is not None for i in range(3)]
    outs = [None, None, None]
    if want[0]:
        def y(t, d, b, j):
            return _by_dir(d, [lambda k=k: _y_of(dirs[k], steps[k], t, b, j) for k in range(p.dirs)])
        shape = (p.batch, p.seq, p.dirs, p.hidden) if p.layout else (p.seq, p.dirs, p.batch, p.hidden)
        body = (lambda b, t, d, j: y(t, d, b, j)) if p.layout else y
        outs[0] = te.compute(shape, body, name=ctx.name(f"{node.name}_Y"), tag="rnn_output")
    for i, last in ((1, [st[-1] for st in steps]), (2, cells)):
        if want[i] and last:
            outs[i] = _final(node, p, last, "hc"[i - 1], ctx)
    return outs if p.op == "LSTM" else outs[:2]


def _final(node, p: _Rnn, last: list, what: str, ctx):
    """Y_h / Y_c: each direction's last state."""
    def fin(d, b, j):
        return _by_dir(d, [lambda k=k: last[k][b, j] for k in range(p.dirs)])
    shape = (p.batch, p.dirs, p.hidden) if p.layout else (p.dirs, p.batch, p.hidden)
    body = (lambda b, d, j: fin(d, b, j)) if p.layout else fin
    return te.compute(shape, body, name=ctx.name(f"{node.name}_Y{what}"), tag="rnn_output")


def _lowering(op: str):
    def lower(node, ins, ctx):
        ins = list(ins) + [None] * (8 - len(ins))
        p = _params(node, op)
        lbr = op == "GRU" and bool(node.attrs.get("linear_before_reset", 0))
        input_forget = op == "LSTM" and bool(node.attrs.get("input_forget", 0))
        dirs, steps, cells = [], [], []
        for d in range(p.dirs):
            dr = _Dir(node, ins, p, d, ctx, lbr)
            h = _state_reader(ins[5], d, p, ctx, f"{node.name}_h0")
            c = _state_reader(ins[6], d, p, ctx, f"{node.name}_c0") if op == "LSTM" else None
            peep = _vector_reader(ins[7], d, ctx, f"{node.name}_P") if op == "LSTM" else None
            hs = []
            for s in range(p.seq):
                if op == "LSTM":
                    ht, ct = _lstm_step(dr, s, h, c, peep, input_forget)
                    c = _reads(ct)
                else:
                    ht = _gru_step(dr, s, h, lbr) if op == "GRU" else _rnn_step(dr, s, h)
                hs.append(ht)
                h = _reads(ht)
            dirs.append(dr)
            steps.append(hs)
            cells.append(ct if op == "LSTM" else None)
        return _outputs(node, p, dirs, steps, [x for x in cells if x is not None], ctx)
    lower.__name__ = f"lower_{op.lower()}"
    lower.__doc__ = f"ONNX {op}, unrolled over its time steps (module docstring)."
    return lower


_COMMON = ("activation_alpha", "activation_beta", "activations", "clip", "direction", "hidden_size", "layout")
_NOTE = (f"unrolled: seq x directions <= {MAX_STEPS}; layout 0/1, all directions, sequence_lens, initial states, "
         "clip, activations {}")
OPS = {
    "LSTM": spec(_lowering("LSTM"), FLOATS, _COMMON + ("input_forget",),
                 _NOTE.format("(Sigmoid/Tanh/Relu/HardSigmoid/ScaledTanh/...), peepholes, input_forget"), 3),
    "GRU": spec(_lowering("GRU"), FLOATS, _COMMON + ("linear_before_reset",),
                _NOTE.format("(Sigmoid/Tanh/Relu/HardSigmoid/ScaledTanh/...), linear_before_reset"), 3),
    "RNN": spec(_lowering("RNN"), FLOATS, _COMMON, _NOTE.format("(Tanh/Relu/Sigmoid/...)"), 3),
}
