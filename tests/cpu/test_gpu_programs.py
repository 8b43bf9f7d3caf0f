"""GPU programs without a GPU: every benchmark workload's GPU sketches and random GPU programs (smallest shapes)
(1) compile with the local nvcc for sm_90 and sm_80 within the device limits by ptxas's own report, and
(2) rendered through the C emulation (blocks in turn, each block's threads an OpenMP team, barriers as OpenMP
barriers) match the numpy reference: the index arithmetic, bound inference of shared stages, barriers and
virtual-thread injection are checked on the CPU."""
import os
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor

import pytest

from ansorc import workloads
from ansorc.targets.cuda.codegen_cuda import codegen_cuda
from ansorc.targets.cuda.codegen_target import CudaTarget
from ansorc.targets.cuda.codegen_emulate import EMULATION_FLAGS, codegen_gpu_emulation
from ansorc.ir.lowering.lower import lower
from ansorc.ir.schedule.state import ScheduleError
from ansorc.targets.cuda.search_annotate import annotate_gpu, sample_gpu
from ansorc.targets.cuda.search_rules import default_gpu_rules
from ansorc.search.sketch import generate_sketches
from ansorc.search.task import SearchTask

from .helpers import check_in_worker

N_FAST, N_SLOW = 5, 3   # CI runs the slow ones too: ~1.3 s of ptxas per program and architecture


def _programs(name: str, n: int, seed: int):
    """(task, [(label, state)]): one program per sketch, then n random ones; all within the device limits."""
    task = SearchTask(workloads.smallest(name), "native")
    sketches = generate_sketches(task, default_gpu_rules())
    assert sketches, f"{name}: no GPU sketch"
    import random
    rng = random.Random(seed)
    progs = []
    for k, sk in enumerate(sketches):
        for _ in range(50):
            try:
                st = annotate_gpu(task, sk, rng)
                codegen_cuda(lower(st, "probe", passes=False))
                progs.append((f"sketch{k}", st))
                break
            except ScheduleError:
                continue
        else:
            pytest.fail(f"{name}: sketch {k} gave no valid program in 50 draws")
    valid = []
    for st in sample_gpu(task, 12 * n, seed=seed, sketches=sketches):
        try:
            codegen_cuda(lower(st, "probe", passes=False))
            valid.append(st)
        except ScheduleError:
            continue
    assert len(valid) >= n, f"{name}: only {len(valid)} valid random GPU programs"
    return task, progs + [(f"random{k}", st) for k, st in enumerate(valid[:n])]


def _nvcc(code: str, arch: str) -> tuple[int, str]:
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.cu")
        open(src, "w").write(code)
        r = subprocess.run(["nvcc", "-cubin", f"-arch={arch}", "-O3", "-Xptxas", "-v", "-o", src + ".cubin", src],
                           capture_output=True, text=True, timeout=300)
        return r.returncode, r.stderr


def _ptxas_within_limits(report: str, block_threads: dict, target: CudaTarget) -> list:
    """Problems the ptxas -v report shows: registers x threads over the block's register file, shared memory
    over the limit. (Spills are allowed, only slow.)"""
    problems = []
    for func, regs in re.findall(r"Function properties for (\w+)[\s\S]*?Used (\d+) registers", report):
        if int(regs) * block_threads.get(func, 1) > target.max_registers_per_block:
            problems.append(f"{func}: {regs} registers x {block_threads.get(func)} threads")
    for smem in re.findall(r"(\d+) bytes smem", report):
        if int(smem) > target.max_shared_bytes:
            problems.append(f"{smem} bytes of shared memory")
    return problems


def _check_nvcc(name: str, n: int):
    """All programs of a workload in one translation unit per architecture (nvcc's start-up dominates a small
    kernel's build); ptxas reports each kernel on its own."""
    task, progs = _programs(name, n, seed=3)
    target = CudaTarget.from_name("cuda")
    sources = [codegen_cuda(lower(st, f"{name.lower()}_{label}", passes=False), target) for label, st in progs]
    threads = {launch.kernel: launch.block[0] for src in sources for launch in src.launches}
    code = "\n".join(src.code for src in sources)
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda arch: _nvcc(code, arch), ("sm_90", "sm_80")))
    for arch, (rc, report) in zip(("sm_90", "sm_80"), results):
        assert rc == 0, f"{name} {arch}: nvcc failed\n{report[:3000]}"
        assert report.count("Function properties for") == len(threads), report
        problems = _ptxas_within_limits(report, threads, target)
        assert not problems, f"{name} {arch}: {problems}"


def _check_emulation(name: str, n: int, seed: int):
    task, progs = _programs(name, n, seed)
    sources = [codegen_gpu_emulation(lower(st, f"{name.lower()}_{label}", passes=False)) for label, st in progs]
    check_in_worker(task.dag, [f"{label}\n{st}" for label, st in progs], sources, EMULATION_FLAGS, name, timeout=120)


needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")


@needs_nvcc
def test_gpu_sketches_and_random_programs_compile_with_nvcc():
    """The quick check (`make test-fast`): one workload. nvcc's start-up and ptxas dominate (~20 s a workload on
    2 cores whether 5 or 20 programs), so every workload is compiled once, in the slow test below."""
    _check_nvcc("GMM", N_FAST)


@pytest.mark.parametrize("name", sorted(workloads.WORKLOADS))
def test_gpu_programs_match_numpy_in_emulation(name):
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    _check_emulation(name, N_FAST, seed=5)


@needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(workloads.WORKLOADS))
def test_random_gpu_programs_of_every_workload_compile_with_nvcc(name):
    _check_nvcc(name, N_SLOW)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(workloads.WORKLOADS))
def test_random_gpu_programs_of_every_workload_match_numpy_in_emulation(name):
    _check_emulation(name, N_SLOW, seed=6)   # other programs than the quick test's (the same seed drew a subset)
