"""Sliding-window geometry shared by Conv and the pools: output sizes and pads from ONNX's auto_pad, pads,
strides, dilations and ceil_mode, and the padded-input stage (a select on the border, inlinable, as the
workloads' "pad" computes)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ...ir.program import te
from .nn_util import compute, ints


@dataclass(frozen=True)
class Window:
    kernel: tuple
    strides: tuple
    dilations: tuple
    before: tuple      # pads in front, per spatial dim
    after: tuple       # pads at the end as ONNX gives them (the window may stop short of them)
    out: tuple         # output sizes

    def span(self, d: int) -> int:
        return self.dilations[d] * (self.kernel[d] - 1) + 1

    def needed(self, d: int) -> int:
        """Extent of the padded input the windows read along spatial dim d."""
        return (self.out[d] - 1) * self.strides[d] + self.span(d)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def window(node, sizes, kernel, ceil_mode: bool = False) -> Window:
    """The window of a Conv/pool node over spatial `sizes` with `kernel` (attributes read from node.attrs)."""
    nd = len(sizes)
    strides = ints(node, "strides", (1,) * nd, nd)
    dilations = ints(node, "dilations", (1,) * nd, nd)
    pads = ints(node, "pads", (0,) * 2 * nd, 2 * nd)
    if min(strides + dilations + kernel) < 1 or min(pads) < 0:
        raise node.unsupported(f"strides {list(strides)}, dilations {list(dilations)}, kernel {list(kernel)} must "
                               f"be positive and pads {list(pads)} non-negative")
    auto = node.attrs.get("auto_pad", "NOTSET")
    spans = [d * (k - 1) + 1 for d, k in zip(dilations, kernel)]
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        out = tuple(ceil_div(n, s) for n, s in zip(sizes, strides))
        total = [max(0, (o - 1) * s + sp - n) for o, s, sp, n in zip(out, strides, spans, sizes)]
        small = [t // 2 for t in total]
        before = tuple(small) if auto == "SAME_UPPER" else tuple(t - h for t, h in zip(total, small))
        after = tuple(t - b for t, b in zip(total, before))
    elif auto in ("NOTSET", "VALID"):
        before, after = (pads[:nd], pads[nd:]) if auto == "NOTSET" else ((0,) * nd, (0,) * nd)
        out = tuple(_out_size(n + b + a, sp, s, b + n, ceil_mode)
                    for n, b, a, sp, s in zip(sizes, before, after, spans, strides))
    else:
        raise node.unsupported(f"auto_pad={auto!r} is not supported")
    if min(out) < 1:
        raise node.unsupported(f"input size {list(sizes)} with kernel {list(kernel)} leaves no output")
    return Window(tuple(kernel), strides, dilations, before, after, out)


def _out_size(padded: int, span: int, stride: int, last_start: int, ceil_mode: bool) -> int:
    if not ceil_mode:
        return (padded - span) // stride + 1
    out = ceil_div(padded - span, stride) + 1
    # a window that would start inside the end padding is dropped (ONNX, onnxruntime and PyTorch agree)
    return out - 1 if (out - 1) * stride >= last_start else out


def pad_spatial(x, sizes, win: Window, fill, name: str, channels_last: bool = False):
    """x (N, C, *sizes), or (N, *sizes, C) when channels_last, padded to cover every window read: `fill`
    outside the input, or x itself when no read leaves the input."""
    before = win.before
    after = tuple(win.needed(d) - b - n for d, (b, n) in enumerate(zip(before, sizes)))
    if not any(before) and max(after) <= 0:
        return x
    if channels_last:
        shape = (x.shape[0],) + tuple(n + b + a for n, b, a in zip(sizes, before, after)) + (x.shape[-1],)
        return compute(shape, lambda n, *i: padded_at(x, sizes, before, after, fill, [n], i[:-1], i[-1:]), name,
                       "pad")
    return pad_nchw(x, sizes, before, after, fill, name)


def pad_nchw(x, sizes, before, after, fill, name: str):
    """x (N, C, *sizes) with `before` / `after` positions of `fill` around each spatial dim (negatives crop)."""
    shape = tuple(x.shape[:2]) + tuple(n + b + a for n, b, a in zip(sizes, before, after))
    return compute(shape, lambda n, c, *pos: padded_at(x, sizes, before, after, fill, [n, c], pos, ()), name, "pad")


def padded_at(x, sizes, before, after, fill, head, pos, tail):
    """x at the padded position: `head` indices, the spatial `pos` shifted by the front pads, `tail` indices."""
    conds, src = [], list(head)
    for p, size, b, a in zip(pos, sizes, before, after):
        if b:
            conds.append(p >= b)
        if a > 0:
            conds.append(p < b + size)
        src.append(p - b if b else p)
    read = x[tuple(src) + tuple(tail)]
    return te.if_then_else(te.all(*conds), read, fill) if conds else read


def taps(o, r, win: Window, d: int):
    """Position in the padded input of output o, tap r along spatial dim d (no `* 1` nodes)."""
    s, dil = win.strides[d], win.dilations[d]
    r = r.var if hasattr(r, "var") else r
    return (o if s == 1 else o * s) + (r if dil == 1 else r * dil)


def live_taps(win: Window, sizes) -> tuple:
    """Per spatial dim, the (first, last) kernel taps that read the input for at least one output: a tap whose
    every read falls in the padding only adds zeros (DeepLabV3's atrous rates 24 and 36 over a 14x14 map leave
    the centre tap alone). Tap r reads positions o*s + r*d - before; a dead tap between live ones (strides wider
    than the input) stays in the span."""
    spans = []
    for d, size in enumerate(sizes):
        s, dil, b, out = win.strides[d], win.dilations[d], win.before[d], win.out[d]
        live = [r for r in range(win.kernel[d])
                if any(0 <= o * s + r * dil - b < size for o in _first_last_reads(r * dil - b, s, out, size))]
        spans.append((live[0], live[-1]) if live else (0, 0))
    return tuple(spans)


def _first_last_reads(offset: int, stride: int, out: int, size: int):
    """The outputs whose reads at `offset` come nearest the input from each side (enough to decide a hit)."""
    lo = max(0, min(out - 1, ceil_div(-offset, stride)))
    return {lo, min(out - 1, max(0, (size - 1 - offset) // stride))}


def trimmed(win: Window, sizes, taps: tuple) -> Window:
    """The window of the kernel cut to `taps` (live_taps): the same outputs, pads shifted by the dropped taps."""
    kernel = tuple(hi - lo + 1 for lo, hi in taps)
    before = tuple(b - lo * d for b, (lo, _), d in zip(win.before, taps, win.dilations))
    cut = Window(kernel, win.strides, win.dilations, before, win.after, win.out)
    return dataclasses.replace(cut, after=tuple(cut.needed(d) - before[d] - n for d, n in enumerate(sizes)))
