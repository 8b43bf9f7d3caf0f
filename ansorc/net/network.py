"""The contract between the ONNX importer, the operator table, fusion and the library builder.

A `Network` is a whole model as ONE te graph: model inputs are te placeholders, weights are te placeholders whose
values live in `weights`, every operator is one or more te computes. Fusion cuts this graph into groups; each
group becomes a ComputeDAG (a task); the library builder emits one function per group and a `model_run` that calls
them in order, intermediates in one arena.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field


from ..errors import AnsorcError


class NetError(AnsorcError, ValueError):
    """A model ansorc cannot take: malformed file, unsupported op/dtype/attribute, missing static shape, wrong
    input at run time. The message is one line and names the node (op type and node name) and the model."""


class UnsupportedError(NetError):
    """An operator, dtype or attribute outside the support table (ops.SUPPORT)."""


@dataclass(frozen=True, eq=False)
class Network:
    name: str               # C-safe model name (sanitized)
    inputs: tuple           # te placeholders of the model's inputs, in ONNX graph-input order
    outputs: tuple          # te Tensors of the model's outputs, in ONNX graph-output order (never a placeholder)
    input_names: tuple      # the ONNX names of inputs, same order
    output_names: tuple     # the ONNX names of outputs, same order
    output_shapes: tuple    # the ONNX shapes of outputs (a rank-0 output is held as shape (1,) in te)
    weights: dict = field(default_factory=dict)   # te placeholder name -> np.ndarray (constant, C-contiguous)

    def weight_tensors(self) -> list:
        """The placeholders holding weights, found by walking the graph from the outputs."""
        found = tensors_by_name(self.outputs)
        return sorted((t for n, t in found.items() if n in self.weights), key=lambda t: t.name)


@dataclass(frozen=True)
class Group:
    """A fused group of te compute ops: one kernel function of the model library, one task when tuned."""
    name: str        # C-safe, unique within the network
    ops: tuple       # names of the te compute ops in the group, in topological order
    inputs: tuple    # names of tensors the group reads from outside (model inputs, weights, other groups' outputs)
    outputs: tuple   # names of the group's tensors read outside it or that are model outputs, topological order
    kind: str = "opaque"  # pattern of its anchor op: elemwise|broadcast|injective|reduction|complex|opaque


def tensors_by_name(outputs) -> dict:
    """Every tensor of the graph reachable from `outputs`, by name."""
    found, stack = {}, list(outputs)
    while stack:
        t = stack.pop()
        if t.name not in found:
            found[t.name] = t
            stack.extend(t.op.inputs)
    return found


def group_dag(net: Network, group: Group, constants: bool = True):
    """The ComputeDAG of one group: fresh placeholders (same names, shapes, dtypes) for its inputs, its ops rebuilt
    to read them, arguments = inputs then outputs. Tensor names are kept, so C argument names are tensor names.
    constants: the weights are declared constant (for targets whose kernels keep copies made from them)."""
    from .. import te
    from ..ir.program.dag import ComputeDAG
    from ..ir.program.expr import Read, transform
    from ..ir.program.te import ComputeOp, Tensor
    everything = tensors_by_name(net.outputs)
    new = {n: te.placeholder(everything[n].shape, everything[n].dtype, name=n) for n in group.inputs}

    def reroute(e):
        return Read(e.name, e.indices, e.dtype, new[e.name]) if isinstance(e, Read) and e.name in new else None

    for name in group.ops:
        op = everything[name].op
        body = transform(op.body, reroute)
        inputs = tuple(new[t.name] for t in op.inputs)
        new[name] = Tensor(ComputeOp(op.name, op.axes, op.reduce_axes, body, op.combiner, op.dtype, inputs, op.tag))
    return ComputeDAG([new[n] for n in group.inputs] + [new[n] for n in group.outputs],
                      constants=constant_inputs(net, group) if constants else ())


def constant_inputs(net: Network, group: Group) -> tuple:
    """The group's inputs that are weights of the model, declared constant in its ComputeDAG: what a kernel
    computes from them alone (a blocked copy of a conv's weights) it computes once and keeps, as onnxruntime
    packs its initializers when a session is made. At most MAX_CONSTANTS, the largest first."""
    from ..ir.lowering.prepared import MAX_CONSTANTS
    names = [n for n in group.inputs if n in net.weights]
    return tuple(sorted(names, key=lambda n: -net.weights[n].size)[:MAX_CONSTANTS])


_C_IDENT = re.compile(r"[^A-Za-z0-9_]")


def c_name(text: str, prefix: str = "t") -> str:
    """A C identifier made from a user's name: non [A-Za-z0-9_] characters become '_', never a leading digit, and
    always prefixed (so no user name can collide with C keywords or the C library: `t_malloc`, `t_expf`)."""
    body = _C_IDENT.sub("_", str(text))[:48]
    return f"{prefix}_{body}" if body else prefix

