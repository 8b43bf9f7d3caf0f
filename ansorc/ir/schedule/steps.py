"""Transform steps: the schedule is its step history. Each step is data (JSON round-trips exactly) and
`apply(state)` returns a new state. Stages and iterators are named, so steps read like a schedule:

    Split("C", "i", (8, 4))        ->  C: i.0 (extent N/32), i.1 (8), i.2 (4)
    Fuse("C", ("i.0", "j.0"))      ->  C: i.0@j.0
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..program.expr import IterVar, Read, Var, select, substitute
from .relations import axis_values, infer_extents, split_extents
from .grouped import grouped_read, replace_reads
from .state import FuseRel, Iterator, ScheduleError, SplitRel, Stage, State, initial_stage, renew
from ..program.te import ComputeOp, Tensor, _identity

ANNOTATIONS = ("", "parallel", "vectorize", "unroll", "vthread", "blockIdx.x", "blockIdx.y", "blockIdx.z",
               "threadIdx.x", "threadIdx.y", "threadIdx.z")


def _move_attachments(state: State, stage: str, old: str, new: str) -> State:
    if not any(s.attach == (stage, old) for s in state.stages):
        return state
    stages = tuple(renew(s, attach=(stage, new)) if s.attach == (stage, old) else s for s in state.stages)
    return renew(state, stages=stages)


@dataclass(frozen=True)
class Split:
    stage: str
    iter: str
    lengths: tuple  # inner factors, outermost first; None = undecided

    def apply(self, state: State) -> State:
        return _split(state, self.stage, self.iter, tuple(self.lengths))

    def to_json(self):
        return ["SP", self.stage, self.iter, list(self.lengths)]


def _split(state: State, stage_name: str, it_name: str, lengths: tuple) -> State:
    st = state.stage(stage_name)
    idx = st.iter_index(it_name)
    it = st.iters[idx]
    if not lengths or any(x is not None and (not isinstance(x, int) or x < 1) for x in lengths):
        raise ScheduleError(f"split of {stage_name}.{it_name}: lengths must be positive integers, got {lengths}")
    names = tuple(f"{it_name}.{k}" for k in range(len(lengths) + 1))
    exts = split_extents(it.extent, lengths)
    new_iters = tuple(Iterator(n, e, it.kind) for n, e in zip(names, exts))
    st = renew(st, iters=st.iters[:idx] + new_iters + st.iters[idx + 1:],
                 relations=st.relations + (SplitRel(it_name, names, lengths),))
    return _move_attachments(state.with_stage(st), stage_name, it_name, names[-1])


@dataclass(frozen=True)
class FollowSplit:
    """Split like an earlier Split step (by index in the history): its first n_split-1 lengths, then the product
    of the rest, so that a consumer's tiles follow its producer's."""
    stage: str
    iter: str
    src_step: int
    n_split: int

    def lengths(self, state: State) -> tuple:
        src = state.steps[self.src_step] if 0 <= self.src_step < len(state.steps) else None
        if not isinstance(src, Split):
            raise ScheduleError(f"follow split of {self.stage}.{self.iter}: step {self.src_step} is not a split")
        head = tuple(src.lengths[:self.n_split - 1])
        tail = src.lengths[self.n_split - 1:]
        prod = 1
        for x in tail:
            prod = None if prod is None or x is None else prod * x
        return head + (prod,)

    def apply(self, state: State) -> State:
        return _split(state, self.stage, self.iter, self.lengths(state))

    def to_json(self):
        return ["FSP", self.stage, self.iter, self.src_step, self.n_split]


@dataclass(frozen=True)
class FollowFusedSplit:
    """Split by the product of several earlier splits' lengths at one level (how GPU cooperative fetching
    matches a thread count): the product is the inner factor, or with factor_or_nparts=False the outer extent."""
    stage: str
    iter: str
    src_steps: tuple
    level: int
    factor_or_nparts: bool = True

    def lengths(self, state: State) -> tuple:
        prod = 1
        for i in self.src_steps:
            src = state.steps[i] if 0 <= i < len(state.steps) else None
            if not isinstance(src, Split) or self.level >= len(src.lengths):
                raise ScheduleError(f"follow fused split of {self.stage}.{self.iter}: step {i} is not a split "
                                    f"with a level {self.level}")
            x = src.lengths[self.level]
            prod = None if prod is None or x is None else prod * x
        if self.factor_or_nparts or prod is None:
            return (prod,)
        extent = state.stage(self.stage).iter(self.iter).extent
        return (None,) if extent is None else (max(1, -(-extent // prod)),)

    def apply(self, state: State) -> State:
        return _split(state, self.stage, self.iter, self.lengths(state))

    def to_json(self):
        return ["FFSP", self.stage, self.iter, list(self.src_steps), self.level, self.factor_or_nparts]


@dataclass(frozen=True)
class Fuse:
    stage: str
    iters: tuple

    def apply(self, state: State) -> State:
        st = state.stage(self.stage)
        idxs = [st.iter_index(n) for n in self.iters]
        if idxs != list(range(idxs[0], idxs[0] + len(idxs))):
            raise ScheduleError(f"fuse in stage {self.stage!r}: iterators {list(self.iters)} are not adjacent in "
                                f"loop order {[it.name for it in st.iters]}")
        its = [st.iters[i] for i in idxs]
        if len({it.kind for it in its}) > 1:
            raise ScheduleError(f"fuse in stage {self.stage!r}: cannot fuse spatial with reduce iterators "
                                f"{list(self.iters)}")
        for n in self.iters[:-1]:
            if state.attached_at(self.stage, n):
                raise ScheduleError(f"fuse in stage {self.stage!r}: stages are attached at {n!r}")
        ext = 1
        for it in its:
            ext = None if ext is None or it.extent is None else ext * it.extent
        name = "@".join(self.iters)
        fused = Iterator(name, ext, its[0].kind)
        st = renew(st, iters=st.iters[:idxs[0]] + (fused,) + st.iters[idxs[-1] + 1:],
                     relations=st.relations + (FuseRel(tuple(self.iters), name),))
        return _move_attachments(state.with_stage(st), self.stage, self.iters[-1], name)

    def to_json(self):
        return ["FU", self.stage, list(self.iters)]


@dataclass(frozen=True)
class Reorder:
    stage: str
    order: tuple

    def apply(self, state: State) -> State:
        st = state.stage(self.stage)
        if sorted(self.order) != sorted(it.name for it in st.iters):
            raise ScheduleError(f"reorder of stage {self.stage!r}: {list(self.order)} is not a permutation of "
                                f"{[it.name for it in st.iters]}")
        return state.with_stage(renew(st, iters=tuple(st.iter(n) for n in self.order)))

    def to_json(self):
        return ["RE", self.stage, list(self.order)]


@dataclass(frozen=True)
class ComputeAt:
    stage: str
    target: str
    target_iter: str

    def apply(self, state: State) -> State:
        st, tgt = state.stage(self.stage), state.stage(self.target)
        tgt.iter_index(self.target_iter)
        if self.stage == self.target or tgt.compute_at == "inline":
            raise ScheduleError(f"compute_at {self.stage!r} at {self.target}.{self.target_iter}: invalid target")
        if state.stage_index(self.target) < state.stage_index(self.stage):
            raise ScheduleError(f"compute_at {self.stage!r}: target {self.target!r} is not a consumer of it")
        return state.with_stage(renew(st, compute_at="attached", attach=(self.target, self.target_iter)))

    def to_json(self):
        return ["CA", self.stage, self.target, self.target_iter]


@dataclass(frozen=True)
class ComputeInline:
    stage: str

    def apply(self, state: State) -> State:
        st = state.stage(self.stage)
        if st.op.combiner:
            raise ScheduleError(f"compute_inline {self.stage!r}: a reduction cannot be inlined")
        if state.is_output(self.stage):
            raise ScheduleError(f"compute_inline {self.stage!r}: an output cannot be inlined")
        if any(s.attach and s.attach[0] == self.stage for s in state.stages):
            raise ScheduleError(f"compute_inline {self.stage!r}: other stages are attached to it")
        return state.with_stage(renew(st, compute_at="inline", attach=None))

    def to_json(self):
        return ["CI", self.stage]


@dataclass(frozen=True)
class ComputeRoot:
    stage: str

    def apply(self, state: State) -> State:
        return state.with_stage(renew(state.stage(self.stage), compute_at="root", attach=None))

    def to_json(self):
        return ["CR", self.stage]


def _require_untransformed(st: Stage, what: str):
    if st.relations or st.compute_at != "root":
        raise ScheduleError(f"{what} of stage {st.name!r} must come before it is split, fused or moved")


@dataclass(frozen=True)
class CacheWrite:
    """C becomes a copy of a new stage C.<scope> that does the computation (e.g. accumulates in registers)."""
    stage: str
    scope: str = "local"

    def apply(self, state: State) -> State:
        st = state.stage(self.stage)
        _require_untransformed(st, "cache_write")
        op = st.op
        cache_op = replace(op, name=f"{op.name}.{self.scope}")
        read = Read(cache_op.name, tuple(a.var for a in op.axes), op.dtype, Tensor(cache_op))
        new_op = ComputeOp(op.name, op.axes, (), read, None, op.dtype, (Tensor(cache_op),), op.tag)
        i = state.stage_index(self.stage)
        stages = state.stages[:i] + (initial_stage(cache_op, self.scope), replace(initial_stage(new_op),
                                                                                pragmas=st.pragmas)) + \
            state.stages[i + 1:]
        return replace(state, stages=stages)

    def to_json(self):
        return ["CHW", self.stage, self.scope]


@dataclass(frozen=True)
class CacheRead:
    """Readers read a copy T.<scope> of tensor T instead of T. With block B > 0 the copy is laid out blocked:
    T[i..., j] is stored at [j // B, i..., j % B] (TVM's layout rewrite, done inside the kernel): B consecutive
    columns of every row then lie together, so a vector tile of B columns reads one contiguous slice. With group
    G > 0 too, the rows are grouped by G as well: T[..., k, j] at [j // B, ..., k // G, j % B, k % G], zero-padded
    up to multiples of B and G (the operand layout of a dot-product instruction, codegen/dot.py)."""
    tensor: str
    scope: str
    readers: tuple
    block: int = 0
    group: int = 0

    def apply(self, state: State) -> State:
        src = state.dag.op_by_name.get(self.tensor) or state.stage(self.tensor).op
        if state.has_stage(self.tensor):
            src = state.stage(self.tensor).op
        shape, b = tuple(src.shape), self.block
        if self.group:
            return grouped_read(self, state, src)
        if b and not (b > 0 and shape and shape[-1] % b == 0):
            raise ScheduleError(f"cache_read of {self.tensor!r} blocked by {b}: its last extent "
                                f"{shape[-1] if shape else None} is not a multiple of it")
        layout = ((shape[-1] // b,) + shape[:-1] + (b,)) if b else shape
        axes = tuple(IterVar(Var(f"ax{d}"), n, "S") for d, n in enumerate(layout))
        v = [a.var for a in axes]
        src_t = Tensor(src)
        src_index = tuple(v[1:-1]) + (v[0] * b + v[-1],) if b else tuple(v)
        cache_op = ComputeOp(f"{self.tensor}.{self.scope}", axes, (),
                             Read(self.tensor, src_index, src.dtype, src_t), None, src.dtype, (src_t,))
        index = (lambda i: (i[-1] // b,) + tuple(i[:-1]) + (i[-1] % b,)) if b else (lambda i: i)
        return replace_reads(state, self, cache_op, index)

    def to_json(self):
        extra = [self.block, self.group] if self.group else [self.block] if self.block else []
        return ["CHR", self.tensor, self.scope, list(self.readers)] + extra


@dataclass(frozen=True)
class Rfactor:
    """Factor the reduction over leaf iterator `iter` into a new stage S.rf with `iter` as a spatial axis
    (at position factor_axis); S then reduces S.rf over that axis."""
    stage: str
    iter: str
    factor_axis: int = -1

    def apply(self, state: State) -> State:
        st = state.stage(self.stage)
        op = st.op
        if not op.combiner:
            raise ScheduleError(f"rfactor of {self.stage!r}: the stage is not a reduction")
        it = st.iter(self.iter)
        if it.kind != "R":
            raise ScheduleError(f"rfactor of {self.stage}.{self.iter}: not a reduce iterator")
        spatial = {a.name for a in op.axes}
        if any(getattr(r, "parent", None) in spatial or set(getattr(r, "parents", ())) & spatial
               for r in st.relations) or st.compute_at != "root":
            raise ScheduleError(f"rfactor of {self.stage!r} must come before its spatial iterators are transformed")
        ext = infer_extents(st)
        new_axis = IterVar(Var(f"{self.iter}.v"), it.extent, "S")
        leaf_vars = {i.name: (new_axis.var if i.name == self.iter else Var(i.name)) for i in st.iters}
        vals, guards = axis_values(st, leaf_vars, ext) if it.extent is not None else ({}, [])
        body = substitute(op.body, {a.name: vals[a.name] for a in op.reduce_axes if a.name in vals})
        for g in guards:
            body = select(g, body, _identity(op.combiner, op.dtype))
        pos = len(op.axes) if self.factor_axis < 0 else min(self.factor_axis, len(op.axes))
        rf_axes = op.axes[:pos] + (new_axis,) + op.axes[pos:]
        rf_reduce = tuple(IterVar(Var(i.name), i.extent, "R") for i in st.iters if i.kind == "R" and
                          i.name != self.iter)
        rf_op = ComputeOp(f"{op.name}.rf", rf_axes, rf_reduce, body, op.combiner, op.dtype, op.inputs, op.tag)
        red = IterVar(Var(f"{self.iter}.v"), it.extent, "R")
        idx = tuple(red.var if a is new_axis else a.var for a in rf_axes)
        new_op = ComputeOp(op.name, op.axes, (red,), Read(rf_op.name, idx, op.dtype, Tensor(rf_op)), op.combiner,
                           op.dtype, (Tensor(rf_op),), op.tag)
        i = state.stage_index(self.stage)
        stages = state.stages[:i] + (initial_stage(rf_op), initial_stage(new_op)) + state.stages[i + 1:]
        return replace(state, stages=stages)

    def to_json(self):
        return ["RF", self.stage, self.iter, self.factor_axis]


@dataclass(frozen=True)
class Annotate:
    stage: str
    iter: str
    annotation: str

    def apply(self, state: State) -> State:
        st = state.stage(self.stage)
        idx = st.iter_index(self.iter)
        if self.annotation not in ANNOTATIONS:
            raise ScheduleError(f"unknown annotation {self.annotation!r}; expected one of {ANNOTATIONS}")
        it = st.iters[idx]
        if self.annotation == "parallel" and it.kind == "R":
            raise ScheduleError(f"cannot parallelize reduce iterator {self.stage}.{self.iter}")
        st = renew(st, iters=st.iters[:idx] + (renew(it, annotation=self.annotation),) + st.iters[idx + 1:])
        return state.with_stage(st)

    def to_json(self):
        return ["AN", self.stage, self.iter, self.annotation]


# auto_unroll_max_step: loops of at most this many steps inside the stage unroll; store_stream (1 or 0): a root
# stage that writes a kernel output stores its vectors with streaming stores, which skip the read of each line
# before it is written (a large output that the kernel does not read back); parallel_ranges (1 or 0): the stage's
# parallel loop gives each thread one range of iterations unless skip guards make their work uneven (without it,
# any skip guard reading the loop deals its iterations out round-robin); prefetch (0, or a distance d >= 1): the
# vector loads of kernel inputs in the stage's outermost loop also prefetch what they read d iterations later;
# row_pad (1 or 0): a root stage's workspace stores each innermost row one cache line longer (ir/lowering/layout.py)
PRAGMAS = ("auto_unroll_max_step", "store_stream", "parallel_ranges", "prefetch", "row_pad")


@dataclass(frozen=True)
class Pragma:
    stage: str
    iter: str
    key: str
    value: int | None

    def apply(self, state: State) -> State:
        st = state.stage(self.stage)
        st.iter_index(self.iter)
        if self.key not in PRAGMAS:
            raise ScheduleError(f"unknown pragma {self.key!r}")
        pr = tuple(p for p in st.pragmas if p[0] != self.key) + ((self.key, self.value),)
        return state.with_stage(renew(st, pragmas=pr))

    def to_json(self):
        return ["PR", self.stage, self.iter, self.key, self.value]


_DECODE = {"SP": lambda a: Split(a[0], a[1], tuple(a[2])), "FSP": lambda a: FollowSplit(*a),
           "FFSP": lambda a: FollowFusedSplit(a[0], a[1], tuple(a[2]), a[3], a[4]),
           "FU": lambda a: Fuse(a[0], tuple(a[1])), "RE": lambda a: Reorder(a[0], tuple(a[1])),
           "CA": lambda a: ComputeAt(*a), "CI": lambda a: ComputeInline(*a), "CR": lambda a: ComputeRoot(*a),
           "CHW": lambda a: CacheWrite(*a), "CHR": lambda a: CacheRead(a[0], a[1], tuple(a[2]), *a[3:]),
           "RF": lambda a: Rfactor(*a), "AN": lambda a: Annotate(*a), "PR": lambda a: Pragma(*a)}


# The JSON fields of each step (after its tag): s str, i int, b bool, n int or None, S [str], I [int],
# L [positive int or None] (split lengths); fields after "|" may be left out (they have defaults).
_SCHEMA = {"SP": "ssL", "FSP": "ssii", "FFSP": "ssIi|b", "FU": "sS", "RE": "sS", "CA": "sss", "CI": "s", "CR": "s",
           "CHW": "s|s", "CHR": "ssS|ii", "RF": "ss|i", "AN": "sss", "PR": "sssn"}
_FIELD = {"s": lambda x: isinstance(x, str), "i": lambda x: type(x) is int, "b": lambda x: type(x) is bool,
          "n": lambda x: x is None or type(x) is int,
          "S": lambda x: isinstance(x, list) and all(isinstance(y, str) for y in x),
          "I": lambda x: isinstance(x, list) and all(type(y) is int for y in x),
          "L": lambda x: isinstance(x, list) and all(y is None or (type(y) is int and y >= 1) for y in x)}


def _check_fields(data: list) -> None:
    """A step read from a log is untrusted: wrong field types would fail far from here (or not at all)."""
    required, _, optional = _SCHEMA[data[0]].partition("|")
    args = data[1:]
    if not len(required) <= len(args) <= len(required) + len(optional):
        raise ScheduleError(f"malformed step {data!r}: expected {len(required)} fields")
    for kind, x in zip(required + optional, args):
        if not _FIELD[kind](x):
            raise ScheduleError(f"malformed step {str(data)[:200]}: field {x!r} has the wrong type")


def step_from_json(data):
    if not isinstance(data, list) or not data or not isinstance(data[0], str) or data[0] not in _DECODE:
        raise ScheduleError(f"not a step: {str(data)[:200]}")
    _check_fields(data)
    try:
        return _DECODE[data[0]](data[1:])
    except (TypeError, IndexError) as e:
        raise ScheduleError(f"malformed step {data!r}: {e}") from None


def steps_to_json(steps) -> list:
    return [s.to_json() for s in steps]


def steps_from_json(data) -> tuple:
    return tuple(step_from_json(d) for d in data)


__all__ = ["Split", "FollowSplit", "FollowFusedSplit", "Fuse", "Reorder", "ComputeAt", "ComputeInline", "ComputeRoot",
           "CacheWrite", "CacheRead", "Rfactor", "Annotate", "Pragma", "step_from_json", "steps_to_json",
           "steps_from_json"]
