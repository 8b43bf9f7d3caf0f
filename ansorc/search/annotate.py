"""Random annotation: turn a sketch into a complete program (Ansor section 4.2).

Init rules, in order: fill tile sizes, change compute locations, parallelize outer loops, unroll pragma,
vectorize inner loops, streaming stores for large outputs and prefetches for large inputs. Tile sizes come from
exact factorizations (innermost <= 64) and, unlike Ansor, also from factorizations of the extent rounded up to a
multiple of 4/8/16, so that prime extents (2039) still get a real space: the guards that lowering emits make such
splits legal.
"""
from __future__ import annotations

import json
import math
import random
from functools import lru_cache

from ..ir.program.dag import needs_multi_level_tiling
from ..ir.program.dtypes import ITEMSIZE
from ..ir.lowering.layout import aliasing_rows
from ..ir.schedule.inline_cost import inlining_bloats
from ..ir.schedule.state import ScheduleError, State
from ..ir.schedule.steps import (Annotate, ComputeAt, ComputeInline, ComputeRoot, Fuse, Pragma, Split, steps_to_json)
from .rules import consumers

UNROLL_CANDIDATES = (0, 16, 64, 512)
NON_DIVISOR_PROB = 0.15   # share of splits drawn from a rounded-up extent even when exact factors exist


@lru_cache(maxsize=None)
def divisors(n: int) -> tuple:
    small = [d for d in range(1, int(n ** 0.5) + 1) if n % d == 0]
    return tuple(sorted(set(small + [n // d for d in small])))


@lru_cache(maxsize=None)
def factor_schemes(extent: int, n_lengths: int, max_inner: int) -> tuple:
    """Every tuple of n_lengths inner factors whose product divides extent, the innermost <= max_inner."""
    if n_lengths == 0:
        return ((),)
    out = []
    for d in divisors(extent):
        for rest in factor_schemes(extent // d, n_lengths - 1, max_inner):
            if n_lengths == 1 and d > max_inner:
                continue
            out.append((d,) + rest)
    return tuple(x for x in out if x[-1] <= max_inner)


def sample_lengths(rng: random.Random, extent: int, n_lengths: int, max_inner: int) -> tuple:
    schemes = factor_schemes(extent, n_lengths, max_inner)
    few = len(divisors(extent)) <= 2 and extent > 8  # prime: exact tiling gives no space
    if extent > 8 and (few or rng.random() < NON_DIVISOR_PROB):
        quantum = rng.choice([q for q in (4, 8, 16) if q < extent] or [2])
        padded = -(-extent // quantum) * quantum
        if padded != extent:
            return rng.choice(factor_schemes(padded, n_lengths, max_inner))
    return rng.choice(schemes)


# ----------------------------------------------------------------------------- init rules

def fill_tile_sizes(task, sketch: State, rng: random.Random) -> State:
    """Sample every undecided split length. Lengths a sketch fixed after the undecided ones (a dot-product
    instruction's lanes: search/dot_rule.py) are kept, the others sampled over the extent left outside them."""
    state = State.initial(task.dag)
    for step in sketch.steps:
        if isinstance(step, Split) and any(x is None for x in step.lengths):
            extent = state.stage(step.stage).iter(step.iter).extent
            n = max(k + 1 for k, x in enumerate(step.lengths) if x is None)
            fixed = step.lengths[n:]
            inner = math.prod(fixed)
            step = Split(step.stage, step.iter, sample_lengths(rng, -(-extent // inner), n,
                                                               task.hw.max_innermost_split_factor) + fixed)
        state = state.apply(step)
    return state


def attach_candidates(state: State, consumer: str) -> list:
    """Iterators of `consumer` where a producer may be computed (outside in, Ansor's stopping rules)."""
    st = state.stage(consumer)
    tiled = st.is_tiled
    out, seen_reduce = [], False
    for it in st.iters:
        if it.kind == "R":
            if not tiled:
                break
            seen_reduce = True
            continue
        if seen_reduce or it.annotation:
            break
        if it.extent != 1:
            out.append(it.name)
    return out


def attach_target(state: State, name: str) -> str | None:
    """The stage `name` may be computed inside: its single consumer, or the common root of several consumers
    (each one root itself or computed somewhere inside that root), as TVM's GetSingleConsumerId. A softmax's exp has two
    consumers, the row sum (attached to the output) and the output: both live in the output's loop nest."""
    cons = consumers(state, name)
    if len(cons) == 1:
        return cons[0]
    roots = {_root_of(state, c) for c in cons}
    return roots.pop() if len(roots) == 1 and cons else None


def _root_of(state: State, name: str) -> str:
    """The root stage whose loop nest `name` is computed in (itself when root)."""
    while state.stage(name).compute_at == "attached":
        name = state.stage(name).attach[0]
    return name


def location_options(state: State, name: str) -> list:
    """Every compute location step for `name`: root, each candidate iterator of its target, the target's own
    attach point when the target is itself attached (producer and consumer side by side), and inline."""
    target = attach_target(state, name)
    if target is None:
        return []
    its = attach_candidates(state, target)
    if len(consumers(state, name)) > 1:   # not below a sibling consumer's attach point: it reads the whole region
        held = [k for k, it in enumerate(its) if state.attached_at(target, it)]
        its = its[:held[0] + 1] if held else its
    options = [ComputeRoot(name)] + [ComputeAt(name, target, it) for it in its]
    tst = state.stage(target)
    if tst.compute_at == "attached" and tst.attach[0] != name:
        options.append(ComputeAt(name, *tst.attach))
    if not state.stage(name).op.combiner and not any(s.attach and s.attach[0] == name for s in state.stages) \
            and not inlining_bloats(state, name):
        options.append(ComputeInline(name))
    return options


def change_compute_location(task, state: State, rng: random.Random) -> State:
    for st in reversed(state.stages):
        if st.compute_at == "inline" or st.is_tiled or needs_multi_level_tiling(st.op) or \
                state.is_output(st.name):
            continue
        options = location_options(state, st.name)
        if not options:
            continue
        step = rng.choice(options)
        if isinstance(step, ComputeRoot) and st.compute_at == "root":
            continue
        try:
            state = state.apply(step)
        except ScheduleError:
            continue
    return state


def parallelize(task, state: State, rng: random.Random) -> State:
    limit = 16 * task.hw.num_cores
    for st in list(state.stages):
        st = state.stage(st.name)
        if st.compute_at != "root":
            continue
        names, prod = [], 1
        for it in st.iters:
            if it.kind != "S" or it.annotation:
                break
            names.append(it.name)
            prod *= it.extent
            if prod >= limit or state.attached_at(st.name, it.name):
                break
        if not names or prod == 1:
            continue
        if len(names) > 1:
            state = state.apply(Fuse(st.name, tuple(names)))
        state = state.apply(Annotate(st.name, "@".join(names), "parallel"))
    return state


def add_unroll(task, state: State, rng: random.Random, candidates: tuple = UNROLL_CANDIDATES) -> State:
    for st in state.stages:
        if st.compute_at != "inline" and st.op.combiner and st.iters:
            state = state.apply(Pragma(st.name, st.iters[0].name, "auto_unroll_max_step", rng.choice(candidates)))
    return state


def _vector_reduce_loop(state: State, st) -> str | None:
    """The innermost reduce loop of an untiled reduction, which the vectorizer turns into vector pieces with one
    horizontal reduction each: gcc leaves float reductions scalar (it may not reorder them), so without this a
    row max or row sum that the search did not rfactor runs one dependent scalar op per element."""
    last = st.iters[-1] if st.iters else None
    if not st.op.combiner or st.is_tiled or last is None or last.kind != "R" or last.extent <= 1 or \
            last.annotation or state.attached_at(st.name, last.name):
        return None
    return last.name


def vectorize(task, state: State, rng: random.Random) -> State:
    for st in list(state.stages):
        st = state.stage(st.name)
        if st.compute_at == "inline":
            continue
        red = _vector_reduce_loop(state, st)
        if red is not None:
            state = state.apply(Annotate(st.name, red, "vectorize"))
            continue
        cands, prod = [], 1
        for it in reversed(st.iters):
            if it.kind != "S" or it.annotation or state.attached_at(st.name, it.name) or it.extent is None:
                break
            if prod * it.extent > task.hw.max_vectorize_elems:
                if not cands and not st.is_tiled:
                    cands.append(it.name)   # an untiled stage's long loop: codegen runs it in vector pieces
                break
            prod *= it.extent
            cands.append(it.name)
            if st.is_tiled:
                break
        if not cands or (len(cands) == 1 and st.iter(cands[0]).extent == 1):
            continue
        take = list(reversed(cands[:rng.randint(1, len(cands))]))
        if len(take) > 1:
            state = state.apply(Fuse(st.name, tuple(take)))
        state = state.apply(Annotate(st.name, "@".join(take), "vectorize"))
    return state


STREAM_MIN_BYTES = 2 << 20   # outputs this large may be written with streaming stores (the search decides)
STREAM_PROB = 0.5


def stream_large_outputs(task, state: State, rng: random.Random) -> State:
    """A root stage that only writes a large kernel output stores it, at random, with streaming stores: they skip
    reading each line before writing it (docs/perf-notes.md, "Code generation"), and they lose where the output
    fits in cache anyway, so measurement picks. No random draw where nothing qualifies."""
    outputs = {t.name for t in state.dag.outputs}
    for st in state.stages:
        if st.name in outputs and st.compute_at == "root" and not st.op.combiner and st.iters and \
                math.prod(st.op.shape) * ITEMSIZE[st.op.dtype] >= STREAM_MIN_BYTES and rng.random() < STREAM_PROB:
            state = state.apply(Pragma(st.name, st.iters[0].name, "store_stream", 1))
    return state


PREFETCH_MIN_BYTES = 8 << 20   # inputs this large come from memory on each call (a quarter of a 32 MB L3)
PREFETCH_MIN_STEP = 4096       # input bytes per outer iteration, below which the hardware prefetcher keeps up
PREFETCH_PROB = 0.5


def prefetch_pays(state: State, name: str) -> bool:
    """Whether root stage `name` may prefetch along its outermost loop (ir/passes/prefetch.py): a kernel without data
    reuse (no stage that multi-level tiling applies to) that reads at least PREFETCH_MIN_BYTES of inputs, in
    iterations of at least PREFETCH_MIN_STEP of them on average (a softmax row, not a few vectors), and reads
    some input in two stages (passes over a row: the first waits on memory, the later ones compute from cache,
    which the next row's prefetches overlap). By hand, one row ahead: softmax 2048 x 2048 0.81-0.88 of the time;
    a norm's single pass 1.5 (4 KB steps; the hardware prefetcher keeps up, the extra loads cost), softmax 1024
    (4 MB, warm in L3) 1.17."""
    st = state.stage(name)
    n = st.iters[0].extent if st.iters else None
    size = _streamed_input_bytes(state.dag)
    return bool(n and n > 1 and size and size / n >= PREFETCH_MIN_STEP)


@lru_cache(maxsize=64)
def _streamed_input_bytes(dag) -> int:
    """The DAG's input bytes where its kernels may prefetch them (prefetch_pays, but for the step), else 0: a
    property of the DAG, asked for each program the search samples."""
    ops = dag.compute_ops
    size = sum(math.prod(t.shape) * ITEMSIZE[t.dtype] for t in dag.inputs)
    twice = any(sum(t.name in {i.name for i in op.inputs} for op in ops) > 1 for t in dag.inputs)
    return size if size >= PREFETCH_MIN_BYTES and twice and not any(needs_multi_level_tiling(op) for op in ops) \
        else 0


def prefetch_large_inputs(task, state: State, rng: random.Random) -> State:
    """Each root stage where prefetch_pays prefetches, at random, one outer iteration ahead; measurement picks.
    No random draw where nothing qualifies."""
    for st in state.stages:
        if st.compute_at == "root" and prefetch_pays(state, st.name) and rng.random() < PREFETCH_PROB:
            state = state.apply(Pragma(st.name, st.iters[0].name, "prefetch", 1))
    return state


ROW_PAD_PROB = 0.5


def row_pad_candidates(state: State) -> list:
    """Root stages that are not kernel outputs and whose workspace rows alias in L1 (ir/layout.aliasing_rows)."""
    outputs = {t.name for t in state.dag.outputs}
    return [st for st in state.stages if st.compute_at == "root" and st.name not in outputs and st.iters and
            aliasing_rows(st.op.shape, st.op.dtype)]


def pad_aliasing_rows(task, state: State, rng: random.Random) -> State:
    """Each workspace whose rows alias in L1 is stored, at random, with its rows one cache line longer (the
    row_pad pragma, ir/lowering/layout.py): it wins or loses by the program, so measurement picks. No random draw where
    nothing qualifies."""
    for st in row_pad_candidates(state):
        if rng.random() < ROW_PAD_PROB:
            state = state.apply(Pragma(st.name, st.iters[0].name, "row_pad", 1))
    return state


INIT_RULES = (change_compute_location, parallelize, add_unroll, vectorize, stream_large_outputs,
              prefetch_large_inputs, pad_aliasing_rows)
CPU_INIT_RULES = (fill_tile_sizes,) + INIT_RULES


def annotate(task, sketch: State, rng: random.Random) -> State:
    """Complete a sketch with the task's init rules (its policy's; the CPU ones for a task without one)."""
    policy = getattr(task, "policy", None)
    state = sketch
    for rule in policy.init_rules() if policy is not None else CPU_INIT_RULES:
        state = rule(task, state, rng)
    return state


def state_key(state: State) -> str:
    return json.dumps(steps_to_json(state.steps), separators=(",", ":"))


def sample(task, n: int, seed: int = 0, sketches: list | None = None, max_tries: int | None = None) -> list:
    """n distinct complete programs; the same seed gives the same programs."""
    from .sketch import generate_sketches
    sketches = sketches if sketches is not None else generate_sketches(task)
    rng = random.Random(seed)
    out, seen = [], set()
    tries = 0
    limit = max_tries if max_tries is not None else 20 * n + 100
    while len(out) < n and tries < limit:
        tries += 1
        sk = sketches[rng.randrange(len(sketches))]
        try:
            st = annotate(task, sk, rng)
        except ScheduleError:
            continue
        key = state_key(st)
        if key not in seen:
            seen.add(key)
            out.append(st)
    return out
