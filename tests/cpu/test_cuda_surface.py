"""The CUDA user surface without a GPU: compile(target="cuda") builds a CudaKernel (its call says a GPU is
needed), `ansorc compile --target cuda` writes lib<name>.so, <name>.h and <name>.cu, the C embedding example
compiles and links against them, and tuning for CUDA without a GPU is one clear error line (exit 1)."""
import ctypes
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ansorc
from ansorc import workloads
from ansorc.targets.cuda.kernel import CudaKernel, CudaKernelError
from ansorc.targets.cuda import measure_driver as cuda_driver

ROOT = Path(__file__).resolve().parents[2]
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
no_gpu = pytest.mark.skipif(cuda_driver.available(), reason="this machine has a GPU")


def _ansorc(*args):
    return subprocess.run([sys.executable, "-m", "ansorc.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=600)


@needs_nvcc
@no_gpu
def test_compile_for_cuda_gives_a_kernel_that_asks_for_a_gpu():
    k = ansorc.compile(workloads.gmm(1, 64, 48, 32), trials=0, target="cuda")
    assert isinstance(k, CudaKernel) and k.source.lang == "cuda" and k.source.launches
    assert Path(k.cubin_path).read_bytes()[:4] == b"\x7fELF"
    with pytest.raises(CudaKernelError, match="NVIDIA GPU"):
        k(np.zeros((1, 64, 32), np.float32), np.zeros((1, 32, 48), np.float32))


@needs_nvcc
def test_cli_exports_a_cuda_library_that_a_c_program_links(tmp_path):
    out = tmp_path / "out"
    r = _ansorc("compile", "examples/matmul_relu.te", "--target", "cuda", "--arch", "sm_80", "-o", str(out),
                "-D", "N=128", "-D", "M=96", "-D", "K=64", "--trials", "0", "--quiet")
    assert r.returncode == 0, r.stderr
    assert {p.name for p in out.iterdir()} == {"libmatmul_relu.so", "matmul_relu.h", "matmul_relu.cu"}
    header = (out / "matmul_relu.h").read_text()
    assert "int matmul_relu(const float* A, const float* B, float* D, void* stream);" in header
    assert "-arch=sm_80" in header and "#define MATMUL_RELU_D_DIM1 96" in header
    where = subprocess.run(["nvcc", "--dryrun", "-x", "cu", "-c", "/dev/null"], capture_output=True, text=True)
    tops = [line.split("=", 1)[1] for line in where.stderr.splitlines() if line.startswith("#$ TOP=")]
    cuda_home = Path(tops[0]) if tops else Path(shutil.which("nvcc")).resolve().parents[1]
    if not (cuda_home / "include" / "cuda_runtime.h").exists():
        pytest.skip("no CUDA runtime headers next to nvcc")
    app = tmp_path / "app"
    cc = subprocess.run(["gcc", f"-I{out}", f"-I{cuda_home / 'include'}", str(ROOT / "examples/embed_cuda/main.c"),
                         f"-L{out}", "-lmatmul_relu", f"-L{cuda_home / 'lib64'}", "-lcudart",
                         f"-Wl,-rpath,{out}", "-lm", "-o", str(app)], capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr
    assert os.access(app, os.X_OK)


@needs_nvcc
def test_the_cuda_headers_build_command_rebuilds_the_library_in_an_empty_folder(tmp_path):
    """The header's "built with" line is the command to rebuild lib<name>.so from <name>.cu (it named no output,
    so nvcc wrote a.out)."""
    out, empty = tmp_path / "out", tmp_path / "empty"
    r = _ansorc("compile", "examples/matmul_relu.te", "--target", "cuda", "--arch", "sm_80", "-o", str(out),
                "-D", "N=64", "-D", "M=32", "-D", "K=16", "--trials", "0", "--quiet")
    assert r.returncode == 0, r.stderr
    [line] = [x for x in (out / "matmul_relu.h").read_text().splitlines() if "built with:" in x]
    command = line.split("built with:", 1)[1].removesuffix("*/").strip()
    empty.mkdir()
    shutil.copy(out / "matmul_relu.cu", empty)
    subprocess.run(shlex.split(command), cwd=empty, check=True, capture_output=True, timeout=600)
    assert sorted(p.name for p in empty.iterdir()) == ["libmatmul_relu.so", "matmul_relu.cu"]
    lib = ctypes.CDLL(str(empty / "libmatmul_relu.so"))   # the runtime is static: loads without a GPU
    assert lib.matmul_relu is not None


@no_gpu
def test_tuning_for_cuda_without_a_gpu_is_one_error_line(tmp_path):
    r = _ansorc("tune", "examples/matmul_relu.te", "--target", "cuda", "--log", str(tmp_path / "l.jsonl"),
                "--trials", "4", "--quiet", "-D", "N=64", "-D", "M=64", "-D", "K=64")
    assert r.returncode == 1, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "GPU" in lines[0] and "Traceback" not in r.stderr


def test_arch_without_cuda_target_is_bad_input(tmp_path):
    r = _ansorc("compile", "examples/matmul_relu.te", "--target", "avx2", "--arch", "sm_80", "-o", str(tmp_path),
                "--trials", "0")
    assert r.returncode == 2 and "--arch" in r.stderr
