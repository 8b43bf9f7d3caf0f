"""Hand-written CUDA programs with known answers, to validate the GPU measurement layer (tests, bench/gpu_selftest.py).

sgemm(M, N, K): C = A @ B (row-major float32) with a plain 64x64 shared-memory tiling: 256 threads per block,
each computing a 4x4 strided patch, K in steps of 16. Variants break it on purpose: a wrong answer, an output
never written, a write far outside any allocation, an endless loop. sgemm_relu uses a workspace and two launches.
"""
from __future__ import annotations

from ansorc.codegen.source import ArgSpec, Launch, Source, Workspace

_SGEMM = r"""
#define M_ {M}
#define N_ {N}
#define K_ {K}
#define TM 64
#define TN 64
#define TK 16

extern "C" __global__ void __launch_bounds__(256)
{name}(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C)
{{
  __shared__ float As[TK][TM];  /* A tile, transposed: As[k][m] */
  __shared__ float Bs[TK][TN];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int row0 = blockIdx.y * TM, col0 = blockIdx.x * TN;
  float acc[4][4] = {{{{0.f}}}};
  for (int k0 = 0; k0 < K_; k0 += TK) {{
    for (int i = threadIdx.x; i < TM * TK; i += 256) {{
      int m = i / TK, k = i % TK;
      As[k][m] = A[(size_t)(row0 + m) * K_ + k0 + k];
    }}
    for (int i = threadIdx.x; i < TK * TN; i += 256) {{
      int k = i / TN, n = i % TN;
      Bs[k][n] = B[(size_t)(k0 + k) * N_ + col0 + n];
    }}
    __syncthreads();
#pragma unroll
    for (int k = 0; k < {KSTEPS}; ++k) {{
      float a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {{ a[i] = As[k][ty + 16 * i]; b[i] = Bs[k][tx + 16 * i]; }}
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
    }}
    __syncthreads();
  }}
{STORE}
}}
"""

_STORE = r"""#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) C[(size_t)(row0 + ty + 16 * i) * N_ + col0 + tx + 16 * j] = acc[i][j];"""
_STORE_NOTHING = "  if (acc[0][0] == 1234.5f && A[0] == -1.f) C[0] = 0.f; /* practically never: C stays unwritten */"
_STORE_FAR = _STORE + "\n  if (threadIdx.x == 0 && blockIdx.x == 0 && blockIdx.y == 0) C[(size_t)1 << 40] = 1.f;"

_RELU = r"""
extern "C" __global__ void relu(const float* __restrict__ T, float* __restrict__ C)
{
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < (size_t)M_ * N_) C[i] = fmaxf(T[i], 0.f);
}
"""

_SPIN = r"""
extern "C" __global__ void spin(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C)
{
  volatile const float* p = A;
  while (p[0] != 12345.f) { }  /* the inputs never hold this: the kernel never ends */
  C[threadIdx.x] = B[0];
}
"""


def _args(M: int, N: int, K: int, out: str = "C") -> tuple:
    return (ArgSpec("A", (M, K), "float32", False), ArgSpec("B", (K, N), "float32", False),
            ArgSpec(out, (M, N), "float32", True))


def sgemm_code(M: int, N: int, K: int, name: str = "sgemm_64x64", variant: str = "right") -> str:
    if M % 64 or N % 64 or K % 16:
        raise ValueError("sgemm sample: M and N must be multiples of 64, K of 16")
    steps = "TK - 1" if variant == "wrong" else "TK"  # wrong: drops one k of every 16
    store = {"right": _STORE, "wrong": _STORE, "nothing": _STORE_NOTHING, "far": _STORE_FAR}[variant]
    return _SGEMM.format(M=M, N=N, K=K, name=name, KSTEPS=steps, STORE=store)


def sgemm(M: int = 1024, N: int = 1024, K: int = 1024, variant: str = "right") -> Source:
    """C = A @ B; variant "wrong" | "nothing" | "far" (writes 4 TiB past C) break it on purpose."""
    name = "sgemm_64x64" if variant == "right" else f"sgemm_{variant}"
    launch = Launch(name, (N // 64, M // 64, 1), (256, 1, 1), (0, 1, 2))
    return Source(sgemm_code(M, N, K, name, variant), f"{name}_host", _args(M, N, K), "cuda", (launch,))


def sgemm_relu(M: int = 256, N: int = 256, K: int = 256) -> Source:
    """C = max(A @ B, 0) in two launches through a workspace T."""
    code = sgemm_code(M, N, K) + _RELU
    launches = (Launch("sgemm_64x64", (N // 64, M // 64, 1), (256, 1, 1), (0, 1, 3)),
                Launch("relu", (-(-M * N // 256), 1, 1), (256, 1, 1), (3, 2)))
    return Source(code, "sgemm_relu_host", _args(M, N, K), "cuda", launches, (Workspace("T", "float32", M * N),))


def spin(M: int = 256, N: int = 256, K: int = 256) -> Source:
    """A kernel that never returns (for the run timeout)."""
    code = sgemm_code(M, N, K) + _SPIN
    return Source(code, "spin_host", _args(M, N, K), "cuda", (Launch("spin", (1, 1, 1), (32, 1, 1), (0, 1, 2)),))
