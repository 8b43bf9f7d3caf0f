"""Fusion of a Network's te ops into groups, as Relay's FuseOps does it (docs/networks.md, "Fusion").

Each te compute op gets a pattern kind read from its computation (`op_pattern`), ordered
elemwise < broadcast < injective < reduction < complex < opaque. Ops then fuse into their immediate
post-dominator along paths whose kinds allow it, tracked with union-find:
  - a complex op (conv, matmul) takes an element-wise epilogue: the path to its post-dominator is element-wise
    and every op on it at most broadcast (phase 0 only);
  - elemwise/broadcast ops fuse forward along at-most-injective paths; the end may be anything but opaque;
  - injective ops fuse along all-injective paths (phase 1, so that complex ops finish fusing first);
  - two complex ops never share a group, nor a complex op and a reduction; at most 256 ops per group.
Two ansorc additions, because here a multi-stage ONNX op is several ordinary te ops (Relay keeps conv's padding
and softmax inside one op):
  - a reduction fuses forward like an elemwise op, through reductions, into an at-most-injective end (softmax's
    max / exp / sum / divide become one group, as the SFM workload is one kernel);
  - a group of at-most-injective ops whose only reader is one reduction or complex op joins that op's group
    (the pad stage of a conv or of a max-pool: the search inlines or attaches it), unless the reader is complex
    and the group does more than move data (a BatchNorm, a GELU, a Concat before a conv or matmul): the reader
    would compute it once per use.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import networkx as nx

from ..ir.program.expr import Binary, Call, Cast, Const, Read, Select, Var, reads, walk
from ..ir.program.graph import postorder
from ..ir.program.simplify import simplify
from ..ir.program.te import ComputeOp, Tensor
from .network import Group, NetError, Network

KINDS = ("elemwise", "broadcast", "injective", "reduction", "complex", "opaque")
ELEMWISE, BROADCAST, INJECTIVE, REDUCTION, COMPLEX, OPAQUE = range(len(KINDS))
RANK = {k: i for i, k in enumerate(KINDS)}


@dataclass(frozen=True)
class FuseOptions:
    max_ops: int = 256          # ops per group (Relay's max_fuse_depth)
    reductions: bool = True     # the ansorc addition: reductions fuse forward (softmax as one group)
    prologues: bool = True      # the ansorc addition: injective producers join their reduction/complex reader


# ----------------------------------------------------------------------------- pattern kinds

def _data_dependent(read: Read) -> bool:
    return any(isinstance(n, Read) for i in read.indices for n in walk(i))


def _shape_of(read: Read):
    return tuple(read.tensor.shape) if read.tensor is not None else None


def read_pattern(op: ComputeOp, read: Read) -> str:
    """How a non-reduction op reads one tensor: element-wise (its own axes, the same shape), broadcast (an in-order
    subset of its axes; unit dimensions read at 0 skipped), injective (any other subscripts of its axes), opaque
    (data-dependent)."""
    if _data_dependent(read):
        return "opaque"
    store = [a.var for a in op.axes]
    idx = [simplify(i) for i in read.indices]
    unit = [isinstance(i, Const) and i.value == 0 and a.extent == 1 for i, a in zip(idx, op.axes)]
    if _shape_of(read) == tuple(op.shape) and all(i == v or u for i, v, u in zip(idx, store, unit)):
        return "elemwise"   # a unit dimension read at 0 is the same element (how broadcasting lowerings write it)
    shape = _shape_of(read) or (None,) * len(idx)
    pos = -1
    for i, n in zip(idx, shape):
        if isinstance(i, Const) and i.value == 0 and n == 1:
            continue
        if not (isinstance(i, Var) and i in store[pos + 1:]):
            return "injective"
        pos = store.index(i, pos + 1)
    return "broadcast"


def _strip(e):
    """Look through casts and zero-guards (`select(cond, x, const)`, how padding and `where=` read)."""
    while isinstance(e, Cast) or (isinstance(e, Select) and isinstance(e.f, Const)):
        e = e.value if isinstance(e, Cast) else e.t
    return e


def _is_multiply_add(body) -> bool:
    """A sum of a product of two reads (each possibly cast or zero-guarded)."""
    body = _strip(body)
    return isinstance(body, Binary) and body.op == "*" and \
        isinstance(_strip(body.a), Read) and isinstance(_strip(body.b), Read)


def op_pattern(op) -> str:
    """The pattern kind of a te compute op (or of the Tensor it computes), read from its body."""
    op = op.op if isinstance(op, Tensor) else op
    if not isinstance(op, ComputeOp):
        raise ValueError(f"{getattr(op, 'name', op)!r} is not a compute op (placeholders have no pattern)")
    reads = [n for n in walk(op.body) if isinstance(n, Read)]
    if any(_data_dependent(r) for r in reads):
        return "opaque"
    if op.combiner:
        return "complex" if op.combiner == "sum" and _is_multiply_add(op.body) else "reduction"
    return KINDS[max((RANK[read_pattern(op, r)] for r in reads), default=ELEMWISE)]


def edge_pattern(consumer: ComputeOp, producer: str, kind: str | None = None) -> str:
    """The kind of the edge producer -> consumer: how the consumer reads it when the consumer is at most
    injective (Relay's broadcast edge of an operand of the output's shape is element-wise), else the consumer's
    (`kind`, when the caller knows it already)."""
    kind = kind or op_pattern(consumer)
    if RANK[kind] > INJECTIVE:
        return kind
    reads = [n for n in walk(consumer.body) if isinstance(n, Read) and n.name == producer]
    return KINDS[max((RANK[read_pattern(consumer, r)] for r in reads), default=ELEMWISE)]


# ----------------------------------------------------------------------------- the graph of compute ops

_SINK = object()  # the virtual node fed by every model output (no tensor name can equal it)


@dataclass(frozen=True)
class OpGraph:
    order: tuple      # compute op names, producers first
    ops: dict         # name -> ComputeOp
    succ: dict        # name -> tuple of consumer names (compute ops)
    kind: dict        # name -> rank of its pattern kind
    ipdom: dict       # name -> immediate post-dominator, None when it is the virtual sink
    dom_kind: dict    # name -> rank of the combined edge kinds on the paths to its post-dominator
    outputs: frozenset


def _compute_ops(net: Network) -> list:
    """The compute ops reachable from the outputs, producers first; two different ops of one name are an error."""
    seen = {}
    for t in postorder(list(net.outputs), lambda t: t.op.inputs, key=lambda t: id(t.op)):
        if seen.setdefault(t.name, t.op) is not t.op:
            raise NetError(f"model {net.name!r}: two different tensors are both named {t.name!r}")
    return [op for op in seen.values() if isinstance(op, ComputeOp)]


def build_graph(net: Network) -> OpGraph:
    ops = _compute_ops(net)
    order = tuple(op.name for op in ops)
    by_name = {op.name: op for op in ops}
    succ = {n: [] for n in order}
    for op in ops:
        for t in op.inputs:
            if t.name in by_name and op.name not in succ[t.name]:
                succ[t.name].append(op.name)
    outputs = frozenset(t.name for t in net.outputs)
    rev = nx.DiGraph()
    rev.add_nodes_from(order)
    rev.add_edges_from((c, p) for p in order for c in succ[p])
    rev.add_edges_from((_SINK, o) for o in outputs)
    idom = nx.immediate_dominators(rev, _SINK)
    ipdom = {n: (None if idom[n] is _SINK else idom[n]) for n in order}
    kinds = {n: op_pattern(by_name[n]) for n in order}
    edge = {(p, c): RANK[edge_pattern(by_name[c], p, kinds[c])] for p in order for c in succ[p]}
    return OpGraph(order, by_name, {n: tuple(s) for n, s in succ.items()}, {n: RANK[k] for n, k in kinds.items()},
                   ipdom, _dom_kinds(order, succ, ipdom, edge), outputs)


def _dom_kinds(order, succ, ipdom, edge) -> dict:
    """Relay's dominator-tree pattern: the max edge kind over every path from a node to its post-dominator
    (each consumer's own summary covers its paths up its post-dominator chain)."""
    out = {}
    for n in reversed(order):
        ip = ipdom[n]
        if ip is None:
            out[n] = None
            continue
        kind = max(edge[(n, c)] for c in succ[n])
        for c in succ[n]:
            while c != ip:
                kind = max(kind, out[c])
                c = ipdom[c]
        out[n] = kind
    return out


# ----------------------------------------------------------------------------- union-find over groups

class _Groups:
    """Union-find of op names; each root knows its members, max kind and how many complex/reduction ops."""

    def __init__(self, graph: OpGraph):
        self.parent = {n: n for n in graph.order}
        self.members = {n: [n] for n in graph.order}
        self.kind = dict(graph.kind)
        self.n_complex = {n: int(graph.kind[n] == COMPLEX) for n in graph.order}
        self.n_reduce = {n: int(graph.kind[n] == REDUCTION) for n in graph.order}

    def find(self, n: str) -> str:
        root = n
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[n] != root:  # path compression
            self.parent[n], n = root, self.parent[n]
        return root

    def allows(self, roots: set, max_ops: int) -> bool:
        """At most max_ops ops, one complex op, and never a complex op beside a reduction."""
        cx, red = sum(self.n_complex[r] for r in roots), sum(self.n_reduce[r] for r in roots)
        return sum(len(self.members[r]) for r in roots) <= max_ops and cx <= 1 and not (cx and red)

    def merge(self, roots: set, target: str) -> None:
        for r in roots - {target}:
            self.parent[r] = target
            self.members[target] += self.members.pop(r)
            self.kind[target] = max(self.kind[target], self.kind[r])
            self.n_complex[target] += self.n_complex[r]
            self.n_reduce[target] += self.n_reduce[r]


# ----------------------------------------------------------------------------- the phases

def _path(g: OpGraph, uf: _Groups, src: str, sink: str, ok) -> list | None:
    """The ops strictly between src and its post-dominator sink, or None when ok(kind, is_sink) fails on one
    of them or on the sink (kinds are those of their current groups)."""
    seen, stack, between = set(), list(g.succ[src]), []
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if not ok(uf.kind[uf.find(n)], n == sink):
            return None
        if n != sink:
            between.append(n)
            stack.extend(g.succ[n])
    return between


def _try_fuse(g: OpGraph, uf: _Groups, src: str, ok, opts: FuseOptions) -> bool:
    sink = g.ipdom[src]
    between = _path(g, uf, src, sink, ok)
    if between is None:
        return False
    roots = {uf.find(n) for n in [src, sink, *between]}
    if not uf.allows(roots, opts.max_ops):
        return False
    uf.merge(roots, uf.find(sink))
    return True


def _forward_ok(kind: int, is_sink: bool) -> bool:
    return kind < OPAQUE if is_sink else kind <= INJECTIVE


def _reduction_ok(kind: int, is_sink: bool) -> bool:
    return kind <= INJECTIVE if is_sink else kind <= REDUCTION


def _run_phase(g: OpGraph, uf: _Groups, phase: int, opts: FuseOptions) -> None:
    for n in g.order:
        root, sink = uf.find(n), g.ipdom[n]
        kind = uf.kind[root]
        if kind == OPAQUE or sink is None or root == uf.find(sink):
            continue
        dom = g.dom_kind[n]
        if kind == COMPLEX:
            if phase == 0 and dom == ELEMWISE:
                _try_fuse(g, uf, n, lambda k, s: k <= BROADCAST, opts)
        elif kind <= BROADCAST:
            if dom <= INJECTIVE or dom == REDUCTION:
                _try_fuse(g, uf, n, _forward_ok, opts)
        elif kind == INJECTIVE:
            if phase == 1:
                _try_fuse(g, uf, n, lambda k, s: k <= INJECTIVE, opts)
        elif kind == REDUCTION and opts.reductions:
            _try_fuse(g, uf, n, _reduction_ok, opts)


def _fuse_prologues(g: OpGraph, uf: _Groups, opts: FuseOptions) -> None:
    """A group of at-most-injective ops, no model output among them, read by exactly one op outside it, that op
    a reduction or complex op: the group joins that op's group."""
    done = set()
    for n in g.order:
        root = uf.find(n)
        if root in done or uf.kind[root] > INJECTIVE:
            continue
        done.add(root)
        members = uf.members[root]
        if any(m in g.outputs for m in members):
            continue
        readers = {c for m in members for c in g.succ[m] if uf.find(c) != root}
        if len(readers) != 1:
            continue
        reader = readers.pop()
        roots = {root, uf.find(reader)}
        if g.kind[reader] == COMPLEX and _costly(g, members):
            continue   # a conv or matmul reads each element many times: inlined, it would run once per use
        if g.kind[reader] in (REDUCTION, COMPLEX) and uf.allows(roots, opts.max_ops):
            uf.merge(roots, uf.find(reader))


def _costly(g: OpGraph, members) -> bool:
    """Whether the ops do more than move data (a read, a padding or layout select on indices, a cast): any float
    arithmetic or math call, or a select between two tensors' data (a Concat). A conv or matmul reads each input
    element once per output tile that uses it (a 1x1 conv to 128 channels: 8 tiles of 16), so an inlined
    prologue runs that many times per element, and a concat's select sits in its innermost loop; computed once
    into memory it costs one more pass (DenseNet's BatchNorm-ReLU-Concat before each conv; docs/perf-notes.md)."""
    for m in members:
        for node in walk(g.ops[m].body):
            if isinstance(node, Call) or (isinstance(node, Binary) and node.dtype.startswith("float")):
                return True
            if isinstance(node, Select) and reads(node.t) and reads(node.f):
                return True
    return False


# ----------------------------------------------------------------------------- groups

def fuse(net: Network, options: FuseOptions | None = None) -> list:
    """The Network's compute ops cut into fused Groups, in an order in which they can run."""
    opts = options or FuseOptions()
    g = build_graph(net)
    uf = _Groups(g)
    for phase in (0, 1):
        _run_phase(g, uf, phase, opts)
    if opts.prologues:
        _fuse_prologues(g, uf, opts)
    return _make_groups(net, g, uf)


def _group_order(net: Network, g: OpGraph, uf: _Groups) -> list:
    """Group roots in an order that respects data flow (ties: the earliest op first)."""
    first = {}
    for i, n in enumerate(g.order):
        first.setdefault(uf.find(n), i)
    dag = nx.DiGraph()
    dag.add_nodes_from(first)
    dag.add_edges_from((uf.find(p), uf.find(c)) for p in g.order for c in g.succ[p] if uf.find(p) != uf.find(c))
    try:
        return list(nx.lexicographical_topological_sort(dag, key=lambda r: f"{first[r]:09d}"))
    except nx.NetworkXUnfeasible:  # a fusion bug, never a user's: the groups would depend on each other
        raise NetError(f"model {net.name!r}: fusion made groups that depend on each other") from None


_C_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


def _make_groups(net: Network, g: OpGraph, uf: _Groups) -> list:
    groups = []
    for index, root in enumerate(_group_order(net, g, uf)):
        members = set(uf.members[root])
        outputs = [n for n in g.order if n in members and (n in g.outputs or
                                                           any(c not in members for c in g.succ[n]))]
        ops = [t.name for t in postorder([Tensor(g.ops[n]) for n in outputs],
                                         lambda t: [i for i in t.op.inputs if i.name in members],
                                         key=lambda t: t.name)]
        inputs = []
        for name in ops:
            inputs += [t.name for t in g.ops[name].inputs if t.name not in members and t.name not in inputs]
        anchor = max(ops, key=lambda n: (g.kind[n], -ops.index(n)))
        groups.append(Group(f"g{index}_{_C_UNSAFE.sub('_', anchor)[:40]}", tuple(ops), tuple(inputs),
                            tuple(outputs), KINDS[uf.kind[root]]))
    return groups


__all__ = ["KINDS", "FuseOptions", "op_pattern", "read_pattern", "edge_pattern", "build_graph", "fuse"]
