"""ONNX backend node tests through ansorc's backend: which cases the support table covers, and whether they pass
when compared as onnx's runner compares (onnx.backend.test.runner.Runner.assert_similar_outputs: same count,
shapes and dtypes, np.testing.assert_allclose with the case's rtol/atol, 1e-3/1e-7 by default)."""
from __future__ import annotations

import collections
import functools
import re
from dataclasses import dataclass, field

import numpy as np
from onnx import numpy_helper
from onnx.backend.test.runner import Runner

from ansorc.net.backend import AnsorcBackend, reference, supported
from ansorc.net.network import UnsupportedError


@functools.lru_cache(maxsize=1)
def node_cases() -> tuple:
    """onnx's node test cases (built in memory by onnx, ~1,900 of them), in name order."""
    import warnings

    from onnx.backend.test.loader import load_model_tests
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the case builders overflow casts on purpose
        return tuple(sorted(load_model_tests(kind="node"), key=lambda c: c.name))


@dataclass
class Result:
    name: str
    status: str      # "unsupported" | "passed" | "failed"
    detail: str = ""


@dataclass
class Report:
    results: list = field(default_factory=list)

    def by(self, status: str) -> list:
        return [r for r in self.results if r.status == status]

    def missing(self) -> collections.Counter:
        """Why cases are unsupported, by case count: the missing operator, else the reason's kind."""
        out = collections.Counter()
        for r in self.by("unsupported"):
            m = re.search(r"operator (\w+) is not supported", r.detail)
            out[m.group(1) if m else _kind(r.detail)] += 1
        return out

    def text(self, top: int = 40) -> str:
        lines = [f"onnx node tests: {len(self.results)} cases, {len(self.by('unsupported'))} unsupported, "
                 f"supported {len(self.results) - len(self.by('unsupported'))}: {len(self.by('passed'))} passed, "
                 f"{len(self.by('failed'))} failed"]
        lines += [f"  FAILED {r.name}: {r.detail}" for r in self.by("failed")]
        lines.append("missing, by case count: " + ", ".join(f"{k} {n}" for k, n in self.missing().most_common(top)))
        return "\n".join(lines)


def _kind(detail: str) -> str:
    for pat in (r"dtype \w+", r"attribute '\w+'", r"domain '[\w.]+'", r"empty tensors", r"not a tensor"):
        m = re.search(pat, detail)
        if m:
            return m.group(0)
    return detail.split(": ")[-1][:50] or "?"


def _arrays(values) -> list | None:
    out = []
    for v in values:
        v = numpy_helper.to_array(v) if hasattr(v, "raw_data") else v
        v = np.asarray(v) if isinstance(v, np.generic) else v
        if not isinstance(v, np.ndarray):
            return None  # sequences and optionals are outside ansorc
        out.append(v)
    return out


def run_case(case, table: dict, executor=None) -> Result:
    sets = [(_arrays(i), _arrays(o)) for i, o in case.data_sets]
    if any(i is None or o is None for i, o in sets):
        return Result(case.name, "unsupported", "a sequence or optional value")
    ok, why = supported(case.model, table, inputs=sets[0][0])
    if not ok:
        return Result(case.name, "unsupported", why)
    try:
        rep = AnsorcBackend.prepare(case.model, executor=executor or functools.partial(reference, table=table))
        for inputs, refs in sets:
            Runner.assert_similar_outputs(refs, list(rep.run(inputs)), rtol=case.rtol, atol=case.atol)
    except UnsupportedError as e:  # a lowering's own limit (an attribute value, a non-constant shape)
        return Result(case.name, "unsupported", str(e))
    except Exception as e:  # noqa: BLE001 - any other error fails the case, with its first line
        return Result(case.name, "failed", f"{type(e).__name__}: {_first_line(e)}")
    return Result(case.name, "passed")


def _first_line(e: BaseException) -> str:
    lines = [s for s in str(e).splitlines() if s.strip()]
    return " | ".join(lines[:3])[:300]


def run_all(table: dict, cases=None, executor=None) -> Report:
    return Report([run_case(c, table, executor) for c in (node_cases() if cases is None else cases)])
