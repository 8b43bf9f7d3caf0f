"""A strided transposed convolution by output phases, one spatial dimension's index arithmetic (workloads.t2d and
the ONNX ConvTranspose lowering share it).

Output position o = q*s + r (phase r < s, q < positions) takes kernel taps k = (r + b) % s + s*t (t < taps) from
input position q + (r + b) // s - t, b being the pad in front: each phase is an ordinary convolution with its own
taps, and no product meets a zero inserted between input elements. The input is read `front` positions shifted,
from a copy padded with `front` zeros before and `back` after it.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PhaseAxis:
    size: int      # input positions
    out: int       # output positions
    kernel: int
    stride: int
    before: int    # the pad in front (output position 0 is full position `before`)

    @property
    def taps(self) -> int:
        """Taps per phase: ceil(K / s); where K % s != 0 some phases' last tap falls past the kernel."""
        return -(-self.kernel // self.stride)

    @property
    def positions(self) -> int:
        """Outputs per phase, ceil(out / s): the last phase may overhang the output by one."""
        return -(-self.out // self.stride)

    @property
    def front(self) -> int:
        """Input positions read before position 0 (the largest tap of the first outputs)."""
        return max(0, self.taps - 1 - self.before // self.stride)

    @property
    def back(self) -> int:
        """Input positions read after the last one (bounded per term, as the bounds check sees it)."""
        s = self.stride
        return max(0, self.positions - 1 + (s - 1 + self.before) // s - (self.size - 1))

    def input_at(self, q, r, t):
        """Position in the padded input of phase r's output q at tap t (IterVars or ints)."""
        return q + self._shifted(r) // self.stride + self.front - _var(t)

    def kernel_at(self, r, t):
        """Kernel position of phase r's tap t."""
        if self.stride == 1:
            return _var(t)
        return self._shifted(r) % self.stride + _var(t) * self.stride

    def _shifted(self, r):
        return r + self.before if self.before else r


def _var(t):
    return t.var if hasattr(t, "var") else t
