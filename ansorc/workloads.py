"""The benchmark workloads of the Ansor paper (shared/bench/workloads.md), defined once.

Each function takes the paper's parameters in the paper's order and returns the kernel's tensors in argument
order: inputs, then the output (as TVM's te_workload does). Padding is its own compute named "pad" (a select on
the bounds, inlinable), skipped when there is none. WORKLOADS maps each benchmark name to its function and its
four shapes (LOW_PRECISION the int8 and bf16 ones; ALL_WORKLOADS both); `smallest(name)` gives the cheapest one,
which is what quick tests want.
"""
from __future__ import annotations

import math

from .errors import ExpressionError, UnknownNameError
from .ir.program import te
from .ir.program.expr import IterVar
from .ir.program.phases import PhaseAxis
from .ir.program.te import ComputeOp, PlaceholderOp, Tensor


def _out(size: int, k: int, stride: int, pad: int, dilation: int = 1) -> int:
    out = (size + 2 * pad - dilation * (k - 1) - 1) // stride + 1
    if out <= 0:
        raise ExpressionError(f"input size {size} with kernel {k}, stride {stride}, pad {pad}, dilation {dilation} "
                         "leaves no output")
    return out


def _scaled(x, c: int):
    """x * c without a `* 1` node, so that the IR reads like the formula."""
    x = x.var if isinstance(x, IterVar) else x
    return x if c == 1 else x * c


def _pad(data: Tensor, before, after=None, name: str = "pad") -> Tensor:
    """data shifted by `before` and zero-filled up to `before + size + after` per dim (negatives crop)."""
    after = before if after is None else after
    if not any(before) and not any(after):
        return data
    shape = tuple(s + b + a for s, b, a in zip(data.shape, before, after))
    zero = te.const(0, data.dtype)

    def body(*idx):
        conds, src = [], []
        for i, s, b, a in zip(idx, data.shape, before, after):
            if b == 0 and a == 0:
                src.append(i)
            else:
                conds += [i >= b, i < b + s]
                src.append(i - b)
        return te.if_then_else(te.all(*conds), data[tuple(src)], zero)
    return te.compute(shape, body, name=name)


# ----------------------------------------------------------------------------- matmul family

def matmul(N: int, M: int, K: int, dtype: str = "float32") -> list:
    """C[i, j] = sum_k A[i, k] * B[k, j]."""
    A = te.placeholder((N, K), dtype, "A")
    B = te.placeholder((K, M), dtype, "B")
    k = te.reduce_axis((0, K), "k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return [A, B, C]


def matmul_relu(N: int, M: int, K: int, dtype: str = "float32") -> list:
    A, B, C = matmul(N, M, K, dtype)
    D = te.compute((N, M), lambda i, j: te.max(C[i, j], 0.0), name="relu")
    return [A, B, D]


def gmm(B: int, N: int, M: int, K: int, dtype: str = "float32") -> list:
    """Batched matmul: C[b, i, j] = sum_k A[b, i, k] * B[b, k, j]."""
    X = te.placeholder((B, N, K), dtype, "A")
    Y = te.placeholder((B, K, M), dtype, "B")
    k = te.reduce_axis((0, K), "k")
    Z = te.compute((B, N, M), lambda b, i, j: te.sum(X[b, i, k] * Y[b, k, j], axis=k), name="C")
    return [X, Y, Z]


def matmul_u8s8(M: int, N: int, K: int) -> list:
    """C[i, j] = sum_k int32(A[i, k]) * int32(B[k, j]), A uint8, B int8: ONNX MatMulInteger (zero points 0).
    Exact in int32 for K < 2^16 (|a * b| < 2^15)."""
    A = te.placeholder((M, K), "uint8", "A")
    B = te.placeholder((K, N), "int8", "B")
    k = te.reduce_axis((0, K), "k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k].astype("int32") * B[k, j].astype("int32"), axis=k), name="C")
    return [A, B, C]


def matmul_bf16(M: int, N: int, K: int) -> list:
    """C[i, j] = sum_k float32(A[i, k]) * float32(B[k, j]), A and B bfloat16, a float32 result."""
    A = te.placeholder((M, K), "bfloat16", "A")
    B = te.placeholder((K, N), "bfloat16", "B")
    k = te.reduce_axis((0, K), "k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k].astype("float32") * B[k, j].astype("float32"), axis=k),
                   name="C")
    return [A, B, C]


# ----------------------------------------------------------------------------- convolutions (channels last)

def c1d(N, L, CI, CO, K, stride, pad, dilation=1, dtype="float32") -> list:
    data = te.placeholder((N, L, CI), dtype, "data")
    kernel = te.placeholder((K, CI, CO), dtype, "kernel")
    OL = _out(L, K, stride, pad, dilation)
    padded = _pad(data, (0, pad, 0))
    rl, rc = te.reduce_axis((0, K), "rl"), te.reduce_axis((0, CI), "rc")
    conv = te.compute((N, OL, CO), lambda n, l, co: te.sum(
        padded[n, _scaled(l, stride) + _scaled(rl, dilation), rc] * kernel[rl, rc, co], axis=[rl, rc]), name="conv")
    return [data, kernel, conv]


def c2d(N, H, W, CI, CO, K, stride, pad, dilation=1, groups=1, dtype="float32") -> list:
    """NHWC conv, weight K x K x CI/groups x CO; output channel co reads the input channels of its group."""
    if CI % groups or CO % groups:
        raise ExpressionError(f"groups={groups} must divide CI={CI} and CO={CO}")
    data = te.placeholder((N, H, W, CI), dtype, "data")
    kernel = te.placeholder((K, K, CI // groups, CO), dtype, "kernel")
    OH, OW = _out(H, K, stride, pad, dilation), _out(W, K, stride, pad, dilation)
    padded = _pad(data, (0, pad, pad, 0))
    rh, rw = te.reduce_axis((0, K), "rh"), te.reduce_axis((0, K), "rw")
    rc = te.reduce_axis((0, CI // groups), "rc")

    def body(n, h, w, co):
        ci = rc if groups == 1 else co // (CO // groups) * (CI // groups) + rc.var
        return te.sum(padded[n, _scaled(h, stride) + _scaled(rh, dilation), _scaled(w, stride) +
                             _scaled(rw, dilation), ci] * kernel[rh, rw, rc, co], axis=[rh, rw, rc])
    return [data, kernel, te.compute((N, OH, OW, CO), body, name="conv")]


def conv2d_u8s8(N, H, W, CI, CO, K, stride, pad) -> list:
    """C2D's NHWC conv on uint8 data and int8 weights (K x K x CI x CO), an int32 result: ONNX ConvInteger with
    zero points 0 (the padding is 0 too)."""
    data = te.placeholder((N, H, W, CI), "uint8", "data")
    kernel = te.placeholder((K, K, CI, CO), "int8", "kernel")
    OH, OW = _out(H, K, stride, pad), _out(W, K, stride, pad)
    padded = _pad(data, (0, pad, pad, 0))
    rh, rw, rc = te.reduce_axis((0, K), "rh"), te.reduce_axis((0, K), "rw"), te.reduce_axis((0, CI), "rc")
    return [data, kernel, te.compute((N, OH, OW, CO), lambda n, h, w, co: te.sum(
        padded[n, _scaled(h, stride) + rh, _scaled(w, stride) + rw, rc].astype("int32") *
        kernel[rh, rw, rc, co].astype("int32"), axis=[rh, rw, rc]), name="conv")]


def grp(N, H, W, CI, CO, K, stride, pad, dilation=1, groups=4, dtype="float32") -> list:
    return c2d(N, H, W, CI, CO, K, stride, pad, dilation, groups, dtype)


def dil(N, H, W, CI, CO, K, stride, pad, dilation=2, groups=1, dtype="float32") -> list:
    return c2d(N, H, W, CI, CO, K, stride, pad, dilation, groups, dtype)


def c3d(N, D, H, W, CI, CO, K, stride, pad, dilation=1, dtype="float32") -> list:
    """NDHWC conv, weight K x K x K x CI x CO, the same stride/pad/dilation on all three spatial dims."""
    data = te.placeholder((N, D, H, W, CI), dtype, "data")
    kernel = te.placeholder((K, K, K, CI, CO), dtype, "kernel")
    OD, OH, OW = (_out(x, K, stride, pad, dilation) for x in (D, H, W))
    padded = _pad(data, (0, pad, pad, pad, 0))
    rd, rh, rw = (te.reduce_axis((0, K), n) for n in ("rd", "rh", "rw"))
    rc = te.reduce_axis((0, CI), "rc")

    def at(o, r):
        return _scaled(o, stride) + _scaled(r, dilation)
    conv = te.compute((N, OD, OH, OW, CO), lambda n, d, h, w, co: te.sum(
        padded[n, at(d, rd), at(h, rh), at(w, rw), rc] * kernel[rd, rh, rw, rc, co], axis=[rd, rh, rw, rc]),
        name="conv")
    return [data, kernel, conv]


def dep(N, H, W, C, K, stride, pad, dilation=1, dtype="float32") -> list:
    """Depthwise NHWC conv, weight 1 x K x K x C."""
    data = te.placeholder((N, H, W, C), dtype, "data")
    kernel = te.placeholder((1, K, K, C), dtype, "kernel")
    OH, OW = _out(H, K, stride, pad, dilation), _out(W, K, stride, pad, dilation)
    padded = _pad(data, (0, pad, pad, 0))
    rh, rw = te.reduce_axis((0, K), "rh"), te.reduce_axis((0, K), "rw")
    conv = te.compute((N, OH, OW, C), lambda n, h, w, c: te.sum(
        padded[n, _scaled(h, stride) + _scaled(rh, dilation), _scaled(w, stride) + _scaled(rw, dilation), c] *
        kernel[0, rh, rw, c], axis=[rh, rw]), name="conv")
    return [data, kernel, conv]


def t2d(N, H, W, CI, CO, K, stride, pad, dtype="float32") -> list:
    """Transposed NHWC conv, weight K x K x CI x CO, out = (in - 1) * stride - 2 * pad + K.

    O[n, h*s + kh - p, w*s + kw - p, co] += I[n, h, w, ci] * W[kh, kw, ci, co], gathered per output over the
    taps that hit a real input pixel only (ir.phases: output row o = q*s + r, phase r, is reached by kernel rows
    kh = (r + p) % s + s*t, t < ceil(K/s), from input row q + (r + p) // s - t). The zero-insertion form iterates
    all K*K taps and multiplies s*s - 1 of every s*s by inserted zeros; this one computes the same function with
    K*K/s^2 taps (the useful FLOPs). With s > 1 each of the s*s output phases is an ordinary convolution with its
    own kernel taps ("conv_phases"[n, ph, pw, qh, qw, co]), interleaved into the output by a copy: computed in place,
    neighbouring outputs of a register tile would need different taps (slower: docs/perf-notes.md, T2D 16x16).
    "pad" adds the input rows that taps of border outputs reach outside the image."""
    data = te.placeholder((N, H, W, CI), dtype, "data")
    kernel = te.placeholder((K, K, CI, CO), dtype, "kernel")
    OH, OW = (H - 1) * stride - 2 * pad + K, (W - 1) * stride - 2 * pad + K
    if OH <= 0 or OW <= 0:
        raise ExpressionError(f"transposed conv of {H}x{W} with kernel {K}, stride {stride}, pad {pad} has no output")
    s, ah, aw = stride, PhaseAxis(H, OH, K, stride, pad), PhaseAxis(W, OW, K, stride, pad)
    padded = _pad(data, (0, ah.front, aw.front, 0), (0, ah.back, aw.back, 0))
    th, tw, rc = te.reduce_axis((0, ah.taps), "rh"), te.reduce_axis((0, aw.taps), "rw"), te.reduce_axis((0, CI), "rc")
    zero = te.const(0, dtype)

    def tap(n, ph, pw, qh, qw, co):   # output (qh*s + ph, qw*s + pw): the sum over its taps th, tw
        kh, kw = ah.kernel_at(ph, th), aw.kernel_at(pw, tw)
        prod = padded[n, ah.input_at(qh, ph, th), aw.input_at(qw, pw, tw), rc] * kernel[kh, kw, rc, co]
        if K % s:   # the last tap of some phases falls past the kernel
            prod = te.if_then_else(te.all(kh < K, kw < K), prod, zero)
        return te.sum(prod, axis=[th, tw, rc])
    if s == 1:
        return [data, kernel, te.compute((N, OH, OW, CO), lambda n, h, w, co: tap(n, 0, 0, h, w, co), name="conv")]
    phases = te.compute((N, s, s, ah.positions, aw.positions, CO), tap, name="conv_phases")
    out = te.compute((N, OH, OW, CO), lambda n, h, w, co: phases[n, h % s, w % s, h // s, w // s, co], name="conv")
    return [data, kernel, out]


def cap(N, H, W, CI, CO, K, stride, pad, capsule=4, dtype="float32") -> list:
    """Capsule conv: O[n,h,w,i,j,co] = sum_{rh,rw,k,rc} pad(I)[n, h*s+rh, w*s+rw, i, k, rc] * W[rh,rw,k,j,rc,co]."""
    data = te.placeholder((N, H, W, capsule, capsule, CI), dtype, "data")
    kernel = te.placeholder((K, K, capsule, capsule, CI, CO), dtype, "kernel")
    OH, OW = _out(H, K, stride, pad), _out(W, K, stride, pad)
    padded = _pad(data, (0, pad, pad, 0, 0, 0))
    rh, rw = te.reduce_axis((0, K), "rh"), te.reduce_axis((0, K), "rw")
    rk, rc = te.reduce_axis((0, capsule), "cap_k"), te.reduce_axis((0, CI), "rc")
    conv = te.compute((N, OH, OW, capsule, capsule, CO), lambda n, h, w, cap_i, cap_j, co: te.sum(
        padded[n, _scaled(h, stride) + rh.var, _scaled(w, stride) + rw.var, cap_i, rk, rc] *
        kernel[rh, rw, rk, cap_j, rc, co], axis=[rh, rw, rk, rc]), name="conv")
    return [data, kernel, conv]


# ----------------------------------------------------------------------------- reductions and subgraphs

def nrm(B, M, N, dtype="float32") -> list:
    """D[b] = sqrt(sum_{i,j} A[b,i,j]^2), as two computes (a reduction is a whole compute body)."""
    A = te.placeholder((B, M, N), dtype, "A")
    i, j = te.reduce_axis((0, M), "i"), te.reduce_axis((0, N), "j")
    sq = te.compute((B,), lambda b: te.sum(A[b, i, j] * A[b, i, j], axis=[i, j]), name="sq_sum")
    return [A, te.compute((B,), lambda b: te.sqrt(sq[b]), name="norm")]


def cbr(N, H, W, CI, CO, K, stride, pad, dtype="float32") -> list:
    """Conv + bias + batch-norm scale and offset + ReLU, each its own element-wise compute."""
    data, kernel, conv = c2d(N, H, W, CI, CO, K, stride, pad, dtype=dtype)
    bias, scale, offset = (te.placeholder((CO,), dtype, n) for n in ("bias", "bn_scale", "bn_offset"))
    shape = conv.shape
    t = te.compute(shape, lambda n, h, w, c: conv[n, h, w, c] + bias[c], name="bias_add")
    t = te.compute(shape, lambda n, h, w, c: t[n, h, w, c] * scale[c], name="bn_mul")
    t = te.compute(shape, lambda n, h, w, c: t[n, h, w, c] + offset[c], name="bn_add")
    out = te.compute(shape, lambda n, h, w, c: te.max(t[n, h, w, c], 0.0), name="relu")
    return [data, kernel, bias, scale, offset, out]


def tbg(B, seq, heads, hidden, dtype="float32") -> list:
    """Attention scores: S[b,h,i,j] = sum_d Q[b,i,h,d] * K[b,j,h,d] through transposed copies, Q' (B, heads, seq,
    hidden) and K'^T (B, heads, hidden, seq) as in TVM's te_workload: the reduction then reads K'^T contiguously
    along j, the output's vector axis (a K' with d innermost could only be gathered lane by lane)."""
    q = te.placeholder((B, seq, heads, hidden), dtype, "query")
    k = te.placeholder((B, seq, heads, hidden), dtype, "key")
    qt = te.compute((B, heads, seq, hidden), lambda b, h, i, d: q[b, i, h, d], name="query_T")
    kt = te.compute((B, heads, hidden, seq), lambda b, h, d, j: k[b, j, h, d], name="key_T")
    r = te.reduce_axis((0, hidden), "r")
    s = te.compute((B, heads, seq, seq), lambda b, h, i, j: te.sum(qt[b, h, i, r] * kt[b, h, r, j], axis=r),
                   name="scores")
    return [q, k, s]


def sfm(M, N, dtype="float32") -> list:
    """Row softmax: max, exp(x - max), sum, divide."""
    A = te.placeholder((M, N), dtype, "A")
    k1, k2 = te.reduce_axis((0, N), "k"), te.reduce_axis((0, N), "k")
    mx = te.compute((M,), lambda i: te.max(A[i, k1], axis=k1), name="row_max")
    ex = te.compute((M, N), lambda i, j: te.exp(A[i, j] - mx[i]), name="exp")
    sm = te.compute((M,), lambda i: te.sum(ex[i, k2], axis=k2), name="row_sum")
    return [A, te.compute((M, N), lambda i, j: ex[i, j] / sm[i], name="softmax")]


# ----------------------------------------------------------------------------- the benchmark table

_C2D_SHAPES = [(1, 224, 224, 3, 64, 7, 2, 3), (1, 56, 56, 64, 64, 1, 1, 0), (1, 14, 14, 256, 256, 3, 1, 1),
               (1, 7, 7, 512, 512, 3, 1, 1)]

WORKLOADS = {
    "GMM": (gmm, [(1, 128, 128, 128), (1, 512, 32, 512), (1, 512, 512, 512), (1, 1024, 1024, 1024)]),
    "C1D": (c1d, [(1, 256, 64, 128, 3, 2, 1), (1, 128, 128, 256, 1, 2, 0), (1, 64, 256, 256, 5, 1, 2),
                  (1, 32, 512, 512, 3, 1, 1)]),
    "C2D": (c2d, _C2D_SHAPES),
    "C3D": (c3d, [(1, 16, 224, 224, 3, 64, 7, 2, 3), (1, 16, 56, 56, 64, 64, 1, 1, 0),
                  (1, 16, 14, 14, 256, 256, 3, 1, 1), (1, 16, 7, 7, 512, 512, 3, 1, 1)]),
    "GRP": (grp, [(1, 56, 56, 64, 128, 3, 2, 1), (1, 56, 56, 64, 64, 1, 1, 0), (1, 14, 14, 256, 256, 3, 1, 1),
                  (1, 7, 7, 512, 512, 3, 1, 1)]),
    "DIL": (dil, _C2D_SHAPES),
    "DEP": (dep, [(1, 112, 112, 32, 3, 1, 1), (1, 112, 112, 64, 3, 2, 1), (1, 14, 14, 512, 3, 2, 1),
                  (1, 7, 7, 1024, 3, 1, 1)]),
    "T2D": (t2d, [(1, 4, 4, 512, 256, 4, 2, 1), (1, 8, 8, 256, 128, 4, 2, 1), (1, 16, 16, 128, 64, 4, 2, 1),
                  (1, 32, 32, 64, 3, 4, 2, 1)]),
    "CAP": (cap, [(1, 16, 16, 32, 32, 3, 2, 1), (1, 8, 8, 32, 32, 3, 1, 1), (1, 16, 16, 8, 16, 3, 2, 1),
                  (1, 8, 8, 16, 16, 3, 1, 1)]),
    "NRM": (nrm, [(1, 256, 256), (1, 512, 512), (1, 1024, 1024), (1, 4096, 1024)]),
    "CBR": (cbr, [(1, 224, 224, 3, 64, 7, 2, 3), (1, 56, 56, 64, 128, 3, 2, 1), (1, 28, 28, 128, 256, 1, 2, 0),
                  (1, 7, 7, 512, 512, 3, 1, 1)]),
    "TBG": (tbg, [(1, 128, 12, 64), (1, 128, 16, 64), (1, 64, 12, 128), (1, 128, 12, 128)]),
    "SFM": (sfm, [(256, 256), (512, 512), (1024, 1024), (2048, 2048)]),
}


# The low-precision rows, reported in a table of their own (suite/table.py): narrow inputs, an int32 or float32
# result, their peers the libraries' integer and bf16 paths. GMM-I8 and GMM-BF16 take GMM's shapes as (M, N, K);
# C2D-I8 takes ResNet's 3x3 and 1x1 layers (a 3-channel stem has no group of 4 to feed the int8 instruction).
_LOWP_GEMM_SHAPES = [(128, 128, 128), (512, 32, 512), (512, 512, 512), (1024, 1024, 1024)]
LOW_PRECISION = {
    "GMM-I8": (matmul_u8s8, _LOWP_GEMM_SHAPES),
    "GMM-BF16": (matmul_bf16, _LOWP_GEMM_SHAPES),
    "C2D-I8": (conv2d_u8s8, [(1, 56, 56, 64, 64, 3, 1, 1), (1, 56, 56, 64, 64, 1, 1, 0),
                             (1, 14, 14, 256, 256, 3, 1, 1), (1, 7, 7, 512, 512, 3, 1, 1)]),
}
# every listed benchmark, float32 first
ALL_WORKLOADS = {**WORKLOADS, **LOW_PRECISION}
# inputs held constant besides WEIGHT_NAMES: a quantized model's MatMulInteger / bf16 MatMul weight
_LOWP_WEIGHTS = {"GMM-I8": ("B",), "GMM-BF16": ("B",)}


def _entry(name: str):
    key = name.upper()
    if key not in ALL_WORKLOADS:
        raise UnknownNameError(f"unknown workload {name!r}; known: {', '.join(ALL_WORKLOADS)}")
    return ALL_WORKLOADS[key]


def make(name: str, index: int = 0, **kwargs) -> list:
    """The tensors of benchmark `name` at its `index`-th listed shape."""
    fn, shapes = _entry(name)
    return fn(*shapes[index], **kwargs)


# the inputs that hold a layer's parameters: constant from call to call where the operator runs in a model
WEIGHT_NAMES = ("kernel", "bias", "bn_scale", "bn_offset")


def weights(tensors, name: str | None = None) -> list:
    """Names of the weight inputs among `tensors` (for ansorc.compile(..., constants=...)); `name`, the benchmark
    they were made for, adds its own (a low-precision GEMM's B)."""
    names = WEIGHT_NAMES + _LOWP_WEIGHTS.get((name or "").upper(), ())
    return [t.name for t in tensors if t.name in names and isinstance(t.op, PlaceholderOp)]


def work(tensors) -> int:
    """Iteration points over all compute ops (a size proxy for ordering shapes, not a FLOP count)."""
    seen, total, stack = set(), 0, list(tensors)
    while stack:
        op = stack.pop().op
        if id(op) in seen or not isinstance(op, ComputeOp):
            continue
        seen.add(id(op))
        total += math.prod(op.shape) * math.prod(a.extent for a in op.reduce_axes)
        stack.extend(op.inputs)
    return total


def smallest_args(name: str) -> tuple:
    """The listed shape of `name` with the least work (the first such on a tie)."""
    fn, shapes = _entry(name)
    return min(shapes, key=lambda s: work(fn(*s)))


def smallest(name: str, **kwargs) -> list:
    fn, _ = _entry(name)
    return fn(*smallest_args(name), **kwargs)
