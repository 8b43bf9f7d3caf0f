"""Run ONNX's own backend node test cases (onnx.backend.test, built in memory) whose single node is an operator
of a given table, through the lowering and the numpy evaluator; classify each case."""
from __future__ import annotations

import numpy as np

from ansorc.errors import AnsorcError
from ansorc.net.lowering import NET_DTYPES as DTYPES  # the element types models may use
from ansorc.net.network import UnsupportedError

from . import onnx_node_harness
from .nn_harness import attrs_of, lower_and_run


def node_cases(ops) -> list:
    """The single-node cases of onnx's node test suite whose op type is in `ops` (default domain only)."""
    return [c for c in onnx_node_harness.node_cases()
            if c.model.graph.node[0].op_type in ops and c.model.graph.node[0].domain in ("", "ai.onnx")]


def _opset(model) -> int:
    return next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))


def run_case(case) -> tuple:
    """(outcome, detail): outcome is pass | unsupported | rejected (another one-line AnsorcError) | wrong |
    crash (any other exception: a bug)."""
    g = case.model.graph
    node = g.node[0]
    for inputs, outputs in case.data_sets:
        values = {vi.name: np.asarray(a) for vi, a in zip(g.input, inputs)}
        ins = [values[n] if n else None for n in node.input]
        # integer inputs after the first (axes, shapes) are import-time constants, as after the importer's folding
        consts = tuple(i for i, a in enumerate(ins) if i > 0 and a is not None and a.dtype.kind in "iu")
        odd = [str(a.dtype) for a in ins if a is not None and str(a.dtype) not in DTYPES]
        if odd:  # the importer rejects these dtypes before any lowering
            return "unsupported", f"dtype {odd[0]}"
        want = {vi.name: np.asarray(a) for vi, a in zip(g.output, outputs)}
        shapes = [want[n].shape if n in want else None for n in node.output]
        dtypes = [str(want[n].dtype) if n in want else None for n in node.output]
        try:
            got, _ = lower_and_run(node.op_type, ins, shapes, attrs_of(node), _opset(case.model),
                                   consts, dtypes, node.name or f"{node.op_type}_0")
        except UnsupportedError as e:
            return "unsupported", str(e)
        except AnsorcError as e:
            return "rejected", f"{type(e).__name__}: {e}"
        except Exception as e:  # noqa: BLE001 - classified, reported by the test
            return "crash", f"{type(e).__name__}: {e}"
        for name, arr in zip(node.output, got):
            if name not in want:
                continue
            ref = want[name]
            if arr.shape != ref.shape:
                return "wrong", f"output {name}: shape {arr.shape}, expected {ref.shape}"
            if not np.allclose(arr, ref, rtol=max(case.rtol, 1e-4), atol=max(case.atol, 1e-6)):
                return "wrong", f"output {name}: max abs diff {np.max(np.abs(arr - ref))}"
    return "pass", ""
