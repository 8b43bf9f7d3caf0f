"""The int8 / bf16 dot-product peak loops (suite/peak_dot.py): the widest sequence the CPU runs is chosen, and
every sequence this CPU runs compiles and does work; sequences it lacks skip, naming the flags."""
import subprocess

import pytest

from ansorc.codegen.target import cpu_flags
from ansorc.suite.peak_dot import LOOPS, dot_call, dot_source, loop_for

ALL = [(kind, loop) for kind, loops in LOOPS.items() for loop in loops]


def test_widest_sequence_first():
    assert loop_for("int8", frozenset({"avx512f", "avx512_vnni", "avx2", "avx_vnni"})).name.startswith("avx512")
    assert loop_for("int8", frozenset({"avx2", "avx_vnni"})).name.startswith("avx-vnni")
    assert loop_for("int8", frozenset({"avx2"})).name.startswith("avx2")
    assert loop_for("int8", frozenset()) is None
    assert loop_for("bf16", frozenset({"avx512f", "avx512_vnni"})) is None


@pytest.mark.parametrize("kind,loop", ALL, ids=[loop.name for _, loop in ALL])
def test_sequence_runs_here(kind, loop):
    missing = loop.needs - cpu_flags()
    if missing:
        pytest.skip(f"this CPU lacks {sorted(missing)}")
    call, ops = dot_call(loop, threads=1, chains=4, seconds=0.001)
    seconds = call()
    assert seconds > 0 and ops > 0
    assert ops / seconds > 1e8, f"{loop.name}: {ops / seconds:.3g} ops/s is not a dot-product loop running"


@pytest.mark.parametrize("kind,loop", ALL, ids=[loop.name for _, loop in ALL])
def test_every_chain_is_its_own_instruction(kind, loop, tmp_path):
    """Chains that start equal were once merged by gcc into one (a 12x overstated peak): each must stay."""
    src = tmp_path / "peak.c"
    src.write_text(dot_source(loop, chains=6))
    asm = tmp_path / "peak.s"
    subprocess.run(["gcc", "-O3", *loop.flags, "-fopenmp", "-S", str(src), "-o", str(asm)], check=True)
    mnemonic = loop.name.split()[-1].split("+")[-1]
    assert asm.read_text().count(mnemonic) >= 6, f"{loop.name}: chains merged in the compiled loop"
