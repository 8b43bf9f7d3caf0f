"""lower(state) -> PrimFunc: loop nests per stage, bound inference for attached stages, index substitution.

Buffers: placeholders and outputs are kernel arguments; other root stages get a workspace of their full
shape; a stage attached with compute_at gets a local buffer shaped like the region its consumer needs under
the attach point, indexed relative to the region's start.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import partial

from ..program.expr import Binary, Const, Expr, Logic, Read, Var, free_vars, substitute, transform, walk
from ..program.names import NameTable
from ..schedule.relations import axis_values, check_decided, infer_extents
from ..program.simplify import _from_linear, _linear, bound, simplify
from ..schedule.state import FuseRel, ScheduleError, State
from ..passes.basic import map_stmt_exprs
from .peel import lower_peeled
from .prepared import prepared_stages
from ..passes.skip import (all_of, contribution_conditions, guard_levels, index_selects, skip_wrap, take_true_branches,
                           version_condition)
from .stmt import (THREAD_KINDS, Allocate, Barrier, Buffer, For, IfThenElse, PrimFunc, Store, seq)
from ..program.te import _identity
from ..passes import skip
from .layout import row_pad
from .lower_options import DEFAULT_LOWER, LowerOptions
from ..passes.tile_edges import shifted, tile_edges, written_out

_KIND = {"": "serial", "parallel": "parallel", "vectorize": "vectorize", "unroll": "unroll",
         **{k: k for k in THREAD_KINDS}}
# A shared-memory stage is computed by all threads of a block together: its region spans these loops.
_SHARED_ACROSS = ("threadIdx.x", "threadIdx.y", "threadIdx.z", "vthread")


@dataclass
class _StageInfo:
    loop_vars: dict          # iterator name -> Var
    ext: dict                # iterator/axis name -> extent
    axis_abs: dict           # op axis name -> absolute index Expr
    axis_rel: dict           # op axis name -> index into the stage's own buffer
    guards: list
    buffer: Buffer
    offsets: tuple           # region start per dimension (Expr), zeros unless local
    reduce_vars: set = field(default_factory=set)
    parts: dict = field(default_factory=dict)   # loop var name -> names of its fused parts' analysis vars


class _Lowerer:
    def __init__(self, state: State, name: str, options: LowerOptions = DEFAULT_LOWER):
        self.state = state
        self.name = name
        self.options = options
        dag = state.dag
        # the function's own names and the file-scope ones of its prepared copies (codegen/prepared.py)
        kept = {name + "_constants_changed", name + "_prepared_release"} | {
            f"{name}_prepared_{k}" for k in range(len(state.stages))} if dag.constants else set()
        self.names = NameTable(reserved={name, name + "_packed"} | kept)
        self.args = []
        for t in dag.tensors:
            self.args.append(Buffer(self.names.get(("buf", t.name), t.name), t.shape, t.dtype, "arg"))
        self.buffers = {t.name: b for t, b in zip(dag.tensors, self.args)}
        self.inlined = {s.name: s.op for s in state.stages if s.compute_at == "inline"}
        self.stages = {s.name: s for s in state.stages if s.compute_at != "inline"}
        self._expanded: dict = {}
        self.body = {n: self.expand(s.op.body) for n, s in self.stages.items()}
        self.prepared = prepared_stages(state, self.body)
        self.gpu = any(it.annotation in THREAD_KINDS for s in state.stages for it in s.iters)
        self.info: dict[str, _StageInfo] = {}
        self.bounds: dict = {}
        self.memo: dict = {}     # simplify() results by node identity, for this lowering only
        # A GPU-bound fused loop (block/thread/vthread) is analysed through one variable per fused part, so
        # that indices stay affine and a shared stage's region can span the thread parts; each part variable
        # is replaced by `fused // inner % extent` when a statement is emitted.
        self.part_defs: dict = {}
        for s in state.stages:
            check_decided(s)

    # ------------------------------------------------------------------ inlining
    def expand(self, e: Expr) -> Expr:
        def fn(n):
            if isinstance(n, Read) and n.name in self.inlined:
                op = self.inlined[n.name]
                if op.name not in self._expanded:
                    self._expanded[op.name] = self.expand(op.body)
                return substitute(self._expanded[op.name], {a.name: i for a, i in zip(op.axes, n.indices)})
            return None
        return transform(e, fn)

    def readers(self, name: str) -> list:
        return [n for n, b in self.body.items() if any(r.name == name for r in walk(b) if isinstance(r, Read))]

    # ------------------------------------------------------------------ per-stage loop info
    def stage_info(self, name: str) -> _StageInfo:
        if name in self.info:
            return self.info[name]
        st = self.stages[name]
        op = st.op
        loop_vars = {it.name: Var(self.names.get(("loop", name, it.name), f"{name}_{it.name}"))
                     for it in st.iters}
        is_output = self.state.is_output(name)
        if st.compute_at == "attached":
            region = self.region(name)
        else:
            region = [(Const(0, "int32"), a.extent) for a in op.axes]
        ext = infer_extents(st, {a.name: e for a, (_, e) in zip(op.axes, region)})
        for it in st.iters:
            self.bounds[loop_vars[it.name].name] = (0, ext[it.name] - 1)
        parts = self._fused_parts(st, loop_vars, ext)
        # a pure CPU stage's last partial tile moves back inside (no guard in its loops; a copy out of a register
        # tile then reads the tile at fixed offsets, which the C compiler keeps in registers)
        shift = self.options.shift_inward and op.combiner is None and \
            not any(it.annotation in THREAD_KINDS for it in st.iters)
        vals, guards = axis_values(st, loop_vars, ext, parts, shift_inward=shift)
        axis_abs = {a.name: simplify(Binary("+", m, vals[a.name], "int32"), self.bounds, self.memo)
                    for a, (m, _) in zip(op.axes, region)}
        axis_abs.update({a.name: simplify(vals[a.name], self.bounds, self.memo) for a in op.reduce_axes})
        if is_output:
            buf, offsets, rel = self.buffers[name], tuple(Const(0, "int32") for _ in op.axes), axis_abs
        elif st.compute_at == "attached":
            scope = "shared" if st.scope == "shared" else "local"
            buf = Buffer(self.names.get(("buf", name), name), tuple(e for _, e in region), op.dtype, scope)
            offsets = tuple(m for m, _ in region)
            rel = {a.name: simplify(vals[a.name], self.bounds, self.memo) for a in op.axes}
        else:
            scope = "prepared" if name in self.prepared else "global"
            asked = self.options.pad_rows and dict(st.pragmas).get("row_pad") and scope == "global" and not self.gpu
            pad = row_pad(op.dtype) if asked else 0
            buf = Buffer(self.names.get(("buf", name), name), op.shape, op.dtype, scope, pad)
            offsets, rel = tuple(Const(0, "int32") for _ in op.axes), axis_abs
        self.buffers[name] = buf
        reduce_vars = {loop_vars[it.name].name for it in st.iters if it.kind == "R"}
        guards = [simplify(g, self.bounds, self.memo) for g in guards]
        info = _StageInfo(loop_vars, ext, axis_abs, rel, guards, buf, offsets, reduce_vars,
                          {loop_vars[f].name: [v.name for v in pv.values()] for f, pv in parts.items()})
        self.info[name] = info
        return info

    def _fused_parts(self, st, loop_vars: dict, ext: dict) -> dict:
        """{fused GPU-bound leaf: {parent: part Var}}, registering each part's bound and definition."""
        bound_leaves = {it.name for it in st.iters if it.annotation in THREAD_KINDS}
        parts = {}
        for rel in st.relations:
            if not isinstance(rel, FuseRel) or rel.child not in bound_leaves:
                continue
            fused, inner, pv = loop_vars[rel.child], 1, {}
            for p in reversed(rel.parents):
                v = Var(self.names.get(("part", st.name, p), f"{st.name}_{p}"))
                e = fused if inner == 1 else Binary("//", fused, Const(inner, "int32"), "int32")
                if p != rel.parents[0]:
                    e = Binary("%", e, Const(ext[p], "int32"), "int32")
                self.part_defs[v.name] = e
                self.bounds[v.name] = (0, ext[p] - 1)
                pv[p] = v
                inner *= ext[p]
            parts[rel.child] = pv
        return parts

    def concrete(self, e: Expr) -> Expr:
        """e with fused-part analysis variables replaced by their definitions over the real loop variables."""
        if not self.part_defs or not (free_vars(e) & self.part_defs.keys()):
            return e
        return simplify(substitute(e, self.part_defs), self.bounds, self.memo)

    # ------------------------------------------------------------------ bound inference
    def region(self, name: str) -> list:
        """(start Expr, extent) per output dimension of `name`: the union of what its readers need while the
        loops enclosing its attach point are fixed and every other loop runs."""
        st = self.stages[name]
        cname, citer = st.attach
        if cname not in self.stages:
            raise ScheduleError(f"stage {name!r} is attached to {cname!r}, which is inlined")
        readers = self.readers(name)
        if not readers:   # the target need not read it: a sibling of its reader, both inside one loop, is fine
            raise ScheduleError(f"stage {name!r} is computed at {cname!r}, but no stage reads it")
        outside = [r for r in readers if r != cname and not self._inside(r, cname, citer)]
        if outside:
            raise ScheduleError(f"stage {name!r} is computed at {cname}.{citer} but also read by {outside}, "
                                "which is not computed inside that loop")
        enclosing = self._enclosing_vars(cname, citer)
        if st.scope == "shared":
            enclosing -= self._enclosing_vars(cname, citer, kinds=_SHARED_ACROSS)
        idx_per_dim = [[] for _ in st.op.shape]
        for r in readers:
            info = self.stage_info(r)
            for rd in walk(self.body[r]):
                if isinstance(rd, Read) and rd.name == name:
                    for d, i in enumerate(rd.indices):
                        idx_per_dim[d].append(simplify(substitute(i, info.axis_abs), self.bounds, self.memo))
        out = []
        for d, size in enumerate(st.op.shape):
            fv = set().union(*(free_vars(e) for e in idx_per_dim[d]))
            varying = {v: self.bounds[v][1] + 1 for v in fv if v not in enclosing and v in self.bounds}
            out.append(self._dim_region(idx_per_dim[d], varying, size))
        return out

    def _enclosing_vars(self, stage: str, iter_name: str, kinds: tuple | None = None) -> set:
        """Loop variables (and their fused parts) around stage.iter_name; only loops of `kinds` if given."""
        st = self.stages[stage]
        info = self.stage_info(stage)
        pos = st.iter_index(iter_name)
        out = set()
        for it in st.iters[:pos + 1]:
            if kinds is None or _KIND.get(it.annotation) in kinds:
                v = info.loop_vars[it.name].name
                out |= {v, *info.parts.get(v, ())}
        if st.compute_at == "attached":
            out |= self._enclosing_vars(*st.attach, kinds=kinds)
        return out

    def _inside(self, reader: str, stage: str, iter_name: str) -> bool:
        st = self.stages[reader]
        while st.compute_at == "attached":
            tgt, it = st.attach
            if tgt == stage:
                return self.stages[stage].iter_index(it) >= self.stages[stage].iter_index(iter_name)
            st = self.stages[tgt]
        return False

    def _dim_region(self, idxs: list, varying: dict, size: int) -> tuple:
        parts = []
        for e in idxs:
            terms, c = _linear(e)
            lo = hi = 0
            rest = {}
            for t, k in terms.items():
                fv = free_vars(t)
                if isinstance(t, Var) and t.name in varying:
                    span = k * (varying[t.name] - 1)
                    lo, hi = lo + min(0, span), hi + max(0, span)
                elif fv & varying.keys():
                    parts = None
                    break
                else:
                    rest[t] = k
            if parts is None:
                break
            parts.append((_from_linear(rest, c, "int32"), lo, hi))
        if parts is not None and all(p[0] == parts[0][0] for p in parts):
            base = parts[0][0]
            lo, hi = min(p[1] for p in parts), max(p[2] for p in parts)
            start = simplify(Binary("+", base, Const(lo, "int32"), "int32"), self.bounds, self.memo)
            extent = hi - lo + 1
        else:  # not affine in the inner loops: take the whole range the consumer can touch
            bs = [bound(e, self.bounds) for e in idxs]
            if any(b is None for b in bs):
                return Const(0, "int32"), size
            lo, hi = min(b[0] for b in bs), max(b[1] for b in bs)
            start, extent = Const(lo, "int32"), hi - lo + 1
        if extent >= size:
            return Const(0, "int32"), size
        b = bound(start, self.bounds)
        if b is None or b[0] < 0 or b[1] > size - extent:  # keep the window inside the tensor
            start = Binary("max", Binary("min", start, Const(size - extent, "int32"), "int32"),
                           Const(0, "int32"), "int32")
        return start, extent

    # ------------------------------------------------------------------ statements
    def rewrite_reads(self, e: Expr) -> Expr:
        def fn(n):
            if not isinstance(n, Read):
                return None
            if n.name in self.stages:
                info = self.stage_info(n.name)
                idx = tuple(Binary("-", i, o, "int32") if not (isinstance(o, Const) and o.value == 0) else i
                            for i, o in zip(n.indices, info.offsets))
                return Read(info.buffer.name, idx, n.dtype)
            return Read(self.buffers[n.name].name, n.indices, n.dtype)
        return transform(e, fn)

    def emit(self, name: str):
        st = self.stages[name]
        if st.op.combiner and any(it.kind == "R" and it.annotation == "threadIdx.x" for it in st.iters):
            from .cross_thread import emit_cross_thread
            return emit_cross_thread(self, name)
        op = st.op
        info = self.stage_info(name)
        store_idx = tuple(info.axis_rel[a.name] for a in op.axes)
        value_abs = substitute(self.body[name], info.axis_abs)
        value = simplify(self.rewrite_reads(value_abs), self.bounds, self.memo)
        buf = info.buffer.name
        guards_all = [g for g in info.guards if not (isinstance(g, Const) and g.value)]
        if op.combiner:
            me = Read(buf, store_idx, op.dtype)
            value = Binary("+", me, value, op.dtype) if op.combiner == "sum" else Binary(op.combiner, me, value,
                                                                                        op.dtype)
        c = self.concrete
        store_idx, value, guards_all = tuple(map(c, store_idx)), c(value), [c(g) for g in guards_all]
        main = _guarded(Store(buf, store_idx, value), guards_all)
        r0 = next((i for i, it in enumerate(st.iters) if it.kind == "R"), None) if op.combiner else None
        init = None
        if op.combiner:
            sguards = [g for g in guards_all if not (free_vars(g) & info.reduce_vars)]
            init = _guarded(Store(buf, store_idx, _identity(op.combiner, op.dtype)), sguards)
            inner_spatial = [it for it in st.iters[r0 or 0:] if it.kind == "S"] if r0 is not None else []
            for it in reversed(inner_spatial):
                init = For(info.loop_vars[it.name].name, info.ext[it.name], _KIND.get(it.annotation, "serial"),
                           init)
        if init is not None and r0 is None:   # a reduction over no loop (rfactor of its only axis): one step
            main, init = seq(init, main), None
        pragma = dict(st.pragmas).get("auto_unroll_max_step") or 0
        simple = partial(simplify, bounds=self.bounds, memo=self.memo)
        conds = self.skip_conditions(name, value_abs) if r0 is not None and self.options.skip else []
        skips = guard_levels(conds, self.stage_loops(name), r0, simple) if conds else {}

        version = self.versioning(name, value, r0, guards_all, store_idx) \
            if r0 is not None and self.options.skip else None
        edges = None if not conds or version is not None or not self.options.tile_edges or \
            any(self.state.attached_at(name, it.name) for it in st.iters[r0:]) else \
            tile_edges(conds, self.stage_loops(name), st.iters, r0, simple, self.bounds)

        def loop_at(pos, main, rng=None):
            it = st.iters[pos]
            inner = nest(pos + 1, main, rng)
            if init is not None and r0 == pos + 1:
                inner = seq(init, inner)
            attached = self.state.attached_at(name, it.name)
            shared = [a for a in attached if self.stage_info(a).buffer.scope == "shared"]
            fetch = (Barrier(), *[self.emit(a) for a in shared], Barrier()) if shared else ()
            body = seq(*fetch, *[self.emit(a) for a in attached if a not in shared], inner)
            for a in attached:
                if self.stage_info(a).buffer.scope in ("local", "shared"):
                    body = Allocate(self.stage_info(a).buffer, body)
            var, ext, kind = info.loop_vars[it.name].name, info.ext[it.name], _KIND.get(it.annotation, "serial")
            if rng is not None and pos == edges.tile:     # the tile's columns that this tap can feed, written out
                body, ext, kind = map_stmt_exprs(body, shifted(var, rng[0]), {}), rng[1] - rng[0], "unroll"
            return For(var, ext, kind, body, pragma if pos == 0 else 0)

        def nest(pos, main, rng=None):
            if pos == len(st.iters):
                return main
            if edges is not None and pos == edges.tap:    # the tap loop written out, one copy per value
                loop = written_out(edges, info.loop_vars[st.iters[pos].name].name, lambda r: loop_at(pos, main, r).body)
            else:
                loop = loop_at(pos, main, rng)
            if version is not None and version[0] == pos:   # a copy without the selects it decides
                loop = seq(IfThenElse(version[1], loop_at(pos, version[2], rng)),
                           IfThenElse(Logic("!", version[1]), loop))
            return skip_wrap(loop, skips.get(pos), st.iters[:pos], info.reduce_vars)

        out = nest(0, main)
        if init is not None and r0 == 0:
            out = seq(init, out)
        return out

    def versioning(self, name: str, value: Expr, r0: int, guards: list, store_idx: tuple):
        """(loop position, cond, the update without the selects cond decides) for the innermost loop of the
        reduction whose copy can drop index selects (an inlined pad's bounds, a causal mask) where cond holds for
        all of its iterations, with at least MIN_VERSIONED_STEPS inside; None when there is none. Loops with stages
        attached inside are not copied."""
        st, info = self.stages[name], self.stage_info(name)
        selects = index_selects(value)
        if not selects:
            return None
        valid = []
        for pos in range(r0, len(st.iters)):
            rest = st.iters[pos:]
            if any(it.annotation == "vectorize" for it in st.iters[:pos]) or \
                    math.prod(1 if it.annotation == "vectorize" else info.ext[it.name] for it in rest) < \
                    skip.MIN_VERSIONED_STEPS:
                break
            if not any(it.annotation in THREAD_KINDS or self.state.attached_at(name, it.name) for it in rest):
                valid.append(pos)
        # the innermost qualifying loop, searched from the inside: lowering runs for every program the search scores
        loops = self.stage_loops(name) if valid else []
        for pos in reversed(valid):
            cond, decided = version_condition(selects, dict(loops[pos:]), lambda e: simplify(e, self.bounds,
                                                                                              self.memo))
            if cond is not None:
                break
        else:
            return None
        fast = simplify(take_true_branches(value, decided), self.bounds, self.memo)
        return pos, cond, _guarded(Store(info.buffer.name, store_idx, fast), guards)

    def stage_loops(self, name: str) -> list:
        """(loop variable, extent) of the stage's loops, outermost first."""
        info = self.stage_info(name)
        return [(info.loop_vars[it.name].name, info.ext[it.name]) for it in self.stages[name].iters]

    def skip_conditions(self, name: str, value: Expr) -> list:
        """The conditions outside which the reduction step adds nothing (ir/passes/skip.py), on the loops."""
        st = self.stages[name]

        def producer(read_name):
            other = self.stages.get(read_name)
            if other is None or other.name == name or other.op.combiner:
                return None
            return [a.name for a in other.op.axes], self.body[read_name]
        conds = contribution_conditions(value, _identity(st.op.combiner, st.op.dtype).value, producer)
        conds = [self.concrete(simplify(c, self.bounds, self.memo)) for c in conds]
        return [c for c in conds if not isinstance(c, Const)]


def _guarded(s, guards):
    return IfThenElse(all_of(guards), s) if guards else s


def _streamed(state: State, low: _Lowerer) -> tuple:
    """The output buffers written with streaming stores: those of root stages with the store_stream pragma that
    only write (a reduction reads its output back, which a streaming store would send to memory first)."""
    bufs = [low.stage_info(st.name).buffer for st in state.stages
            if st.compute_at == "root" and dict(st.pragmas).get("store_stream") and not st.op.combiner]
    return tuple(b.name for b in bufs if b.scope == "arg")


def _outer_loops(state: State, low: _Lowerer, key: str) -> tuple:
    """(outermost loop, extent, pragma value) of the root stages where pragma `key` is set (not 0)."""
    return tuple((low.stage_info(st.name).loop_vars[st.iters[0].name].name, st.iters[0].extent, v)
                 for st in state.stages if st.compute_at == "root" and st.iters and (v := dict(st.pragmas).get(key)))


def lower(state: State, name: str = "kernel", passes: bool = True, options: LowerOptions = DEFAULT_LOWER) -> PrimFunc:
    """With passes=False the loop tree comes back before unrolling and the final simplification: what the cost
    model's feature extraction reads (annotations are still on the loops), at a fraction of the cost. With them,
    the shifted last tiles of pure stages are first replaced by narrower copies (ir/lowering/peel.py)."""
    if not passes:
        return _lowered(state, name, options)[0]
    from ..passes.basic import default_passes
    return default_passes(lower_loops(state, name, options))


def lower_loops(state: State, name: str = "kernel", options: LowerOptions = DEFAULT_LOWER, peel: bool = True
                ) -> PrimFunc:
    """The loop nest of a schedule before any pass: the first stage of every target's pipeline. peel: the
    shifted last tiles of pure stages replaced by narrower copies (ir/lowering/peel.py; also off with options.peel)."""
    return lower_peeled(state, lambda st: _lowered(st, name, options), enabled=peel and options.peel)[0]


def _lowered(state: State, name: str, options: LowerOptions = DEFAULT_LOWER) -> tuple:
    """(the function, loop_var(stage, iterator): the loop variable it uses for that iterator)."""
    low = _Lowerer(state, name, options)
    roots = [s.name for s in state.stages if s.compute_at == "root"]
    stale = {n: low.names.get(("stale", n), f"{low.stage_info(n).buffer.name}_stale") for n in low.prepared}
    body = seq(*[IfThenElse(Var(stale[n]), low.emit(n), prepare=True) if n in stale else low.emit(n)
                 for n in roots])
    for buf in reversed([low.stage_info(n).buffer for n in roots]):
        body = Allocate(buf, body) if buf.scope in ("global", "prepared") else body
    constants = tuple(low.buffers[t.name].name for t in state.dag.inputs if t.name in state.dag.constants)
    prepared = tuple((low.stage_info(n).buffer.name, stale[n]) for n in roots if n in stale)
    ranges = tuple(var for var, _, _ in _outer_loops(state, low, "parallel_ranges"))
    ahead = tuple((var, k) for var, n, k in _outer_loops(state, low, "prefetch") if 0 < k < (n or 0))
    return PrimFunc(name, tuple(low.args), len(state.dag.inputs), body, _streamed(state, low), constants, prepared,
                    ranges, ahead), lambda stage, it: low.stage_info(stage).loop_vars[it].name


__all__ = ["lower", "lower_loops", "LowerOptions"]
