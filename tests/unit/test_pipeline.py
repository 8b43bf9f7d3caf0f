"""compile_program runs a target plug-in's pass list in order, each pass named and logged at DEBUG level."""
import logging

from ansorc import te
from ansorc.codegen.pipeline import compile_program, render
from ansorc.ir.program.dag import ComputeDAG
from ansorc.ir.schedule.state import State
from ansorc.search.task import SearchTask
from ansorc.targets import parse, plugin
from ansorc.targets.cuda.search_policy import default_gpu_schedule


def small_state(target: str = "avx2"):
    A = te.placeholder((8, 8), name="A")
    B = te.compute((8, 8), lambda i, j: A[i, j] * 2.0, name="B")
    dag = ComputeDAG([A, B])
    return default_gpu_schedule(SearchTask(dag, target)) if target == "cuda" else State.initial(dag)


def test_each_pass_is_logged_in_order(caplog):
    for name in ("avx2", "cuda", "scalar"):
        caplog.clear()
        with caplog.at_level(logging.DEBUG, logger="ansorc.pipeline"):
            src = compile_program(small_state(name), name, name="k")
        ran = [r.getMessage().split(": ")[1].split()[0] for r in caplog.records]
        assert ran == [p.name for p in plugin(name).passes(parse(name))], name
        assert src.entry == "k"


def test_render_is_compile_program():
    state = small_state()
    assert render(state.dag, state, "k", "avx2").code == compile_program(state, "avx2", name="k").code


def test_cpu_pass_list_names():
    names = [p.name for p in plugin("avx512").passes(parse("avx512"))]
    assert names[0] == "verify_structure" and "vectorize" in names and names[-1] == "prefetch"
