"""The one compile pipeline: (dag, schedule, target) -> Source. Search, measurement, the API, the CLI and export
all render through `render`; each target kind's plug-in (ansorc/targets/) holds its passes and renderer."""
from __future__ import annotations

import logging
import time

from ..ir.program.dag import ComputeDAG
from ..ir.program.deep import run_deep
from ..ir.lowering.lower_options import DEFAULT_LOWER, LowerOptions
from ..ir.program.names import c_ident
from ..ir.schedule.state import State, replay
from ..ir.passes.verify import verify, verify_requested
from ..targets import Target, parse, plugin
from .source import Source

LOG = logging.getLogger("ansorc.pipeline")

def as_dag(tensors) -> ComputeDAG:
    return tensors if isinstance(tensors, ComputeDAG) else ComputeDAG(tensors)


def as_state(dag: ComputeDAG, schedule=None) -> State:
    """A State, a list of steps, or None (the naive loop nest)."""
    if schedule is None:
        return State.initial(dag)
    if isinstance(schedule, State):
        return schedule
    return replay(dag, schedule)


def resolve_target(target=None) -> Target:
    """A Target from a name ("native", "avx512", ..., "cuda", "cuda:sm_80") or a Target (ansorc.targets.parse)."""
    return parse(target)


def render(tensors, schedule=None, name: str = "kernel", target=None,
           options: LowerOptions = DEFAULT_LOWER) -> Source:
    """Lower and render a DAG (or its tensors) under a schedule for `target` (a Target or a name);
    `options`: the lowering's choices (all on by default; one off renders the program without it, to measure
    what it gains)."""
    dag = as_dag(tensors)
    state = as_state(dag, schedule)
    # run_deep: the statements nest about one level per stage
    return run_deep(len(state.stages), lambda: compile_program(state, target, options, c_ident(name)))


def compile_program(state: State, target=None, options: LowerOptions = DEFAULT_LOWER, name: str = "kernel"
                    ) -> Source:
    """The target plug-in's pipeline: lower the schedule, run its pass list in order, render. Each pass is
    logged at DEBUG level (logger "ansorc.pipeline"); with ANSORC_VERIFY=1 every check of ir/passes/verify.py runs
    after each pass that changed the program."""
    tgt = parse(target)
    kind = plugin(tgt)
    func = kind.lower(state, name, options)
    checking, verified, debug = verify_requested(), None, LOG.isEnabledFor(logging.DEBUG)
    for p in kind.passes(tgt):
        start = time.perf_counter() if debug else 0.0
        func = p.run(func)
        if debug:
            LOG.debug("%s: %s %.2f ms", name, p.name, (time.perf_counter() - start) * 1e3)
        if checking and func is not verified:   # a pass that changed nothing returns its input: checked already
            verified = verify(func, after=p.name)
    return kind.emit(func, tgt)


__all__ = ["render", "compile_program", "resolve_target", "as_dag", "as_state"]
