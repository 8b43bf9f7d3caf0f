"""ComputeDAG: the ops of a tensor program in topological order, plus the analyses the sketch rules need.

The predicates follow Ansor's access analyzer (ansor-reference.md section 1.2) in our own terms.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cached_property

import networkx as nx

from ...errors import AnsorcError
from .expr import Binary, Call, CheckedIndex, Compare, Const, Expr, Read, Select, Var, children, is_float, walk
from .dtypes import DTYPE_TABLE
from .graph import postorder
from .simplify import simplify
from .te import ComputeOp, PlaceholderOp, Tensor

MAX_CONSTANTS = 16   # constant inputs of one kernel: the keys a prepared copy is checked against (codegen/prepared.py)


SIGNATURE_CHARS = 200


class DagError(AnsorcError, ValueError):
    """The tensors do not form a valid kernel (missing inputs, clashing names)."""


@dataclass(eq=False)
class ComputeDAG:
    tensors: tuple  # the kernel arguments: inputs then outputs, as the user listed them
    # Names of inputs whose values stay the same from call to call (weights): stages computed from them alone
    # run once and are kept (lower.py, "prepared" stages), as TVM rewrites constant weights' layout ahead of time.
    constants: frozenset = frozenset()

    def __init__(self, tensors, constants=()):
        tensors = tuple(tensors)
        if not tensors:
            raise DagError("a ComputeDAG needs at least one tensor")
        for t in tensors:
            if not isinstance(t, Tensor):
                raise DagError(f"expected te tensors, got {type(t).__name__}")
        self.tensors = tensors
        graph = nx.DiGraph()
        ops: dict[str, object] = {}
        stack = list(tensors)
        while stack:
            t = stack.pop()
            prev = ops.get(t.name)
            if prev is not None:
                if prev is not t.op:
                    raise DagError(f"two different tensors are both named {t.name!r}; give them distinct names")
                continue
            ops[t.name] = t.op
            graph.add_node(t.name)
            for inp in t.op.inputs:
                graph.add_edge(inp.name, t.name)
                stack.append(inp)
        self.graph = graph
        # topological order that is stable: ties broken by first appearance in a depth-first walk
        self.ops = tuple(ops[n] for n in nx.lexicographical_topological_sort(graph, key=self._dfs_rank(ops)))
        self.op_by_name = {op.name: op for op in self.ops}
        arg_names = [t.name for t in tensors]
        if len(set(arg_names)) != len(arg_names):
            raise DagError(f"a tensor appears twice in the argument list: {arg_names}")
        for op in self.ops:
            if isinstance(op, PlaceholderOp) and op.name not in arg_names:
                raise DagError(f"input {op.name!r} is used but not in the argument list {arg_names}")
        self.inputs = tuple(t for t in tensors if isinstance(t.op, PlaceholderOp))
        self.outputs = tuple(t for t in tensors if isinstance(t.op, ComputeOp))
        if not self.outputs:
            raise DagError("the argument list has no computed (output) tensor")
        self.constants = self._constant_names(constants)

    def _constant_names(self, constants) -> frozenset:
        names = {c.name if isinstance(c, Tensor) else c for c in constants}
        inputs = [t.name for t in self.inputs]
        for n in sorted(names, key=str):
            if n not in inputs:
                raise DagError(f"constant {n!r} is not an input of the kernel (inputs: {inputs})")
        if len(names) > MAX_CONSTANTS:
            raise DagError(f"{len(names)} constant inputs; a kernel may have at most {MAX_CONSTANTS}")
        return frozenset(names)

    def with_constants(self, constants) -> "ComputeDAG":
        """The same DAG with these inputs (tensors or names) declared constant."""
        return ComputeDAG(self.tensors, constants)

    def _dfs_rank(self, ops):
        names = postorder([t.name for t in self.tensors], lambda n: [i.name for i in ops[n].inputs], key=str)
        order = {n: k for k, n in enumerate(names)}
        return lambda n: f"{order[n]:08d}"

    # ------------------------------------------------------------------ structure
    @property
    def compute_ops(self) -> tuple:
        return tuple(op for op in self.ops if isinstance(op, ComputeOp))

    def consumers(self, name: str) -> list:
        return [n for n in self.graph.successors(name)]

    def producers(self, name: str) -> list:
        return [n for n in self.graph.predecessors(name)]

    def is_output(self, name: str) -> bool:
        return any(t.name == name for t in self.outputs)

    # ------------------------------------------------------------------ flops
    @cached_property
    def flop_count(self) -> float:
        """Operations of one run (op_flops): float ops and integer ops on data, so an int8 GEMM counts 2*M*N*K
        like a float one (its GFLOP/s figures are then GOP/s)."""
        return float(sum(op_flops(op) for op in self.compute_ops))

    @cached_property
    def rate_unit(self) -> str:
        """What flop_count per second is in: "GOP/s" where integer ops are most of it (an int8 GEMM), else
        "GFLOP/s"."""
        ints = sum(op_flops(op) for op in self.compute_ops if DTYPE_TABLE[op.dtype].is_int)
        return "GOP/s" if 2 * ints > self.flop_count else "GFLOP/s"

    # ------------------------------------------------------------------ workload key
    @cached_property
    def workload_key(self) -> str:
        """Hash of a canonical structural serialization: independent of names and of the printer."""
        canon = {op.name: f"T{i}" for i, op in enumerate(self.ops)}
        body = [_serialize_op(op, canon) for op in self.ops]
        args = [canon[t.name] for t in self.tensors]
        key = {"ops": body, "args": args}
        if self.constants:   # a DAG without constants keeps the key it always had
            key["constants"] = sorted(canon[n] for n in self.constants)
        text = json.dumps(key, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    @cached_property
    def signature(self) -> str:
        """The kernel's arguments for people, "A[32,32] B[32,32] -> D[32,32]" (dtype where not float32, "const"
        on constant inputs), at most SIGNATURE_CHARS: what a log's records say of the workload their key hashes."""
        def arg(t) -> str:
            dtype = "" if t.dtype == "float32" else f":{t.dtype}"
            const = " const" if t.name in self.constants else ""
            return f"{t.name}[{','.join(str(d) for d in t.shape)}]{dtype}{const}"
        text = f"{' '.join(arg(t) for t in self.inputs)} -> {' '.join(arg(t) for t in self.outputs)}"
        return text if len(text) <= SIGNATURE_CHARS else text[:SIGNATURE_CHARS - 3] + "..."

    def __repr__(self):
        lines = []
        for op in self.ops:
            if isinstance(op, PlaceholderOp):
                lines.append(f"{op.name} = placeholder({list(op.shape)}, {op.dtype})")
            else:
                idx = ", ".join(a.name for a in op.axes)
                rhs = repr(op.body)
                if op.combiner:
                    rhs = f"{op.combiner}({rhs}, axis=[{', '.join(a.name for a in op.reduce_axes)}])"
                lines.append(f"{op.name}[{idx}] = {rhs}")
        return "\n".join(lines)


def _serialize_op(op, canon: dict):
    if isinstance(op, PlaceholderOp):
        return ["placeholder", list(op.shape), op.dtype]
    vmap = {a.name: f"v{i}" for i, a in enumerate(op.axes + op.reduce_axes)}
    return ["compute", [a.extent for a in op.axes], [a.extent for a in op.reduce_axes], op.combiner, op.dtype,
            _serialize_expr(op.body, canon, vmap)]


def _serialize_expr(e: Expr, canon: dict, vmap: dict):
    if isinstance(e, Var):
        return ["var", vmap.get(e.name, e.name)]
    if isinstance(e, Const):
        return ["const", e.value, e.dtype]
    if isinstance(e, Read):
        return ["read", canon.get(e.name, e.name)] + [_serialize_expr(i, canon, vmap) for i in e.indices]
    if isinstance(e, CheckedIndex):  # the extent is part of the program: the generic head would drop it
        return ["checked", e.extent, e.dtype, _serialize_expr(e.value, canon, vmap)]
    head = [type(e).__name__, getattr(e, "op", getattr(e, "name", "")), e.dtype]
    return head + [_serialize_expr(c, canon, vmap) for c in children(e)]


# ----------------------------------------------------------------------------- flops

def _expr_flops(e: Expr) -> int:
    """Arithmetic on values: float ops, and integer ops on data read from tensors (an int8 GEMM's
    multiplies). Subscripts and other pure index arithmetic (a pad's bounds test, i * stride + r) are
    addressing, not work: they are not counted, so a float workload's count is what it always was."""
    n = 0
    for node in _value_nodes(e):
        if isinstance(node, (Binary, Call)) and _counts(node.dtype, node):
            n += 1
        elif isinstance(node, Compare) and _counts(node.a.dtype, node):
            n += 1
    return n


def _value_nodes(e: Expr):
    """Pre-order nodes of `e` outside any Read's subscripts."""
    stack = [e]
    while stack:
        n = stack.pop()
        yield n
        if not isinstance(n, (Read, CheckedIndex)):
            stack.extend(children(n))


def _counts(dtype: str, node: Expr) -> bool:
    if is_float(dtype):
        return True
    return dtype != "bool" and any(isinstance(x, Read) for x in _value_nodes(node))


def op_flops(op) -> int:
    """Operations of one run of `op`: float ops and data-dependent integer ops, a reduction's accumulate
    counting one (an int8 multiply-accumulate is 2 ops, as a float FMA)."""
    if not isinstance(op, ComputeOp):
        return 0
    points = 1
    for a in op.axes + op.reduce_axes:
        points *= a.extent
    accumulate = 1 if op.combiner and op.dtype != "bool" else 0
    return points * (_expr_flops(op.body) + accumulate)


# ----------------------------------------------------------------------------- access analysis

def _is_simple_access(read: Read, axis_names: list) -> bool:
    """Every index is a constant or output-axis var + constant."""
    for idx in read.indices:
        s = simplify(idx)
        if isinstance(s, Const):
            continue
        v = s.a if isinstance(s, Binary) and s.op in ("+", "-") and isinstance(s.b, Const) else s
        if not (isinstance(v, Var) and v.name in axis_names):
            return False
    return True


def _axis_of(idx: Expr) -> str | None:
    """The axis a simple subscript (var, or var +- constant) reads along; None for a constant."""
    s = simplify(idx)
    v = s.a if isinstance(s, Binary) and isinstance(s.b, Const) else s
    return v.name if isinstance(v, Var) else None


def _axis_order(read: Read) -> list:
    return [a for a in map(_axis_of, read.indices) if a is not None]


def _is_checked(idx: Expr) -> bool:
    return any(isinstance(n, CheckedIndex) for n in walk(idx))


def is_strictly_inlinable(op) -> bool:
    if not isinstance(op, ComputeOp) or op.combiner:
        return False
    names = [a.name for a in op.axes]
    for node in walk(op.body):
        if isinstance(node, Read):
            # a gathered subscript (checked index, read from data) is injective like a copy: only the other
            # subscripts must be simple (the read of the index tensor inside it is checked on its own)
            node = Read(node.name, tuple(i for i in node.indices if not _is_checked(i)), node.dtype)
            if not _is_simple_access(node, names):
                return False
            order = _axis_order(node)
            if len(set(order)) != len(order) or order != sorted(order, key=names.index):
                return False
        if isinstance(node, Select) or (isinstance(node, Call) and node.name == "exp"):
            return False
    return True


def transposed_axes(op) -> tuple | None:
    """(w, r) when `op` copies data across a transposition: no reduction, and some simple read subscripts its
    last dimension by an axis r (extent > 1) other than op's innermost axis w (extent > 1), which subscripts an
    earlier dimension. Along w that read strides by rows; along r it is contiguous. Tiled by
    both (r.0, w.0, r.1, w.1), a tile touches r.1 rows of the input and w.1 of the output and each line it
    loads serves the whole tile (TBG's key transpose; docs/perf-notes.md, "The default program")."""
    if not isinstance(op, ComputeOp) or op.combiner or not op.axes:
        return None
    names = [a.name for a in op.axes]
    extent = {a.name: a.extent for a in op.axes}
    w = names[-1]
    if extent[w] <= 1:
        return None
    for node in walk(op.body):
        if not isinstance(node, Read) or not node.indices or not _is_simple_access(node, names):
            continue
        r = _axis_of(node.indices[-1])
        if r is not None and r != w and extent.get(r, 1) > 1 and w in _axis_order(node):
            return w, r
    return None


def permutes_outer_axes(op) -> bool:
    """Whether `op` only copies a tensor with its outer dimensions permuted and the last kept in place (TBG's
    query_T): each of its rows is then a contiguous run of the source too, so a consumer can read the source in
    place (the default schedule inlines it; docs/perf-notes.md)."""
    if not isinstance(op, ComputeOp) or op.combiner or not isinstance(op.body, Read) or op.body.tensor is None:
        return False
    names, idx = [a.name for a in op.axes], op.body.indices
    return len(idx) == len(names) and all(isinstance(i, Var) for i in idx) and \
        {i.name for i in idx} == set(names) and idx[-1].name == names[-1]


def needs_multi_level_tiling(op) -> bool:
    """Some input misses an output spatial axis (of extent > 1): there is data reuse to exploit."""
    if not isinstance(op, ComputeOp):
        return False
    spatial = [a.name for a in op.axes if a.extent > 1]
    missing = 0
    for r in {r.name: r for r in walk(op.body) if isinstance(r, Read)}.values():
        used = set()
        for idx in r.indices:
            used |= {n.name for n in walk(idx) if isinstance(n, Var)}
        if any(s not in used for s in spatial):
            missing += 1
    return missing >= 2 or (missing >= 1 and bool(op.reduce_axes))


def is_elementwise_match(op, consumer) -> bool:
    """consumer reads op at exactly its own axes, in order, and has the same output shape."""
    if not isinstance(consumer, ComputeOp) or op.shape != consumer.shape:
        return False
    names = [a.name for a in consumer.axes]
    found = False
    for r in walk(consumer.body):
        if isinstance(r, Read) and r.name == op.name:
            found = True
            if [simplify(i) for i in r.indices] != [a.var for a in consumer.axes]:
                return False
    return found and bool(names)


def has_single_elementwise_consumer(dag: ComputeDAG, op, consumers=None) -> str | None:
    """Name of the single element-wise matched consumer, if there is exactly one."""
    cons = consumers if consumers is not None else dag.consumers(op.name)
    if len(cons) != 1:
        return None
    c = dag.op_by_name.get(cons[0]) if isinstance(cons[0], str) else cons[0]
    if c is None or (op.combiner and c.combiner) or not is_elementwise_match(op, c):
        return None
    return c.name


def needs_rfactor(op, num_cores: int) -> bool:
    if not isinstance(op, ComputeOp) or not op.combiner:
        return False
    s = 1
    for a in op.axes:
        s *= a.extent
    r = 1
    for a in op.reduce_axes:
        r *= a.extent
    if needs_multi_level_tiling(op):
        return s <= r and s <= 16 * num_cores
    return r > num_cores


__all__ = ["ComputeDAG", "DagError", "op_flops", "is_strictly_inlinable", "needs_multi_level_tiling",
           "transposed_axes",
           "is_elementwise_match", "has_single_elementwise_consumer", "needs_rfactor"]
