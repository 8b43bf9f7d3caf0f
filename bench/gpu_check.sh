#!/usr/bin/env bash
# Everything the CUDA backend needs shown on a GPU machine, in one run of about 6-7 minutes:
#   environment and ceilings; 100 random GPU programs of all 13 workloads checked against numpy; tuning of
#   GMM 1024, C2D 1x56x56x64->64 3x3 and DEP 1x112x112x32 3x3 for BUDGET seconds each (resuming the logs in
#   data/records/gpu/<device>); a side-by-side table against PyTorch in one process; compute-sanitizer memcheck and
#   racecheck on a few programs (it refuses the device on some of these machines: then it says so).
# Results go to $OUT (the device tool brings them back) or bench/results/gpu/run.
#   BUDGET=60 bash bench/gpu_check.sh        (CORRECT=0 / SANITIZE=0 skip those steps on a rerun)
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-bench/results/gpu/run}
BUDGET=${BUDGET:-60}
CORRECT=${CORRECT:-100}
CASES=${CASES:-GMM-1024,C2D-56x64,DEP-112x32,SFM-1024:20}   # CASE[:seconds] (bench/gpu_cases.py)
mkdir -p "$OUT"
exec > >(tee "$OUT/gpu_check.log") 2>&1
if [ -d .whl ] && ! python3 -c "import cffi, lightgbm" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 ANSORC_CACHE_DIR=/tmp/ansorc_cache
# Logs per device (data/records/gpu/h200, .../h100): committed gzipped, tuned here as plain .jsonl, copied to $OUT
DEVICE=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | tr 'A-Z ' 'a-z_' | sed 's/^nvidia_//')
LOGS=data/records/gpu/${DEVICE:-unknown}
mkdir -p "$LOGS"
for f in "$LOGS"/*.jsonl.gz; do [ -e "$f" ] && gunzip -kf "$f"; done
step() { echo; echo "=== $1 ($(date +%T))"; }
t0=$(date +%s)

step "environment"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv
nvcc --version | tail -2
python3 -c "import sys, torch, numpy, cffi, lightgbm; print(sys.version.split()[0], 'torch', torch.__version__, 'numpy', numpy.__version__, 'cffi', cffi.__version__, 'lightgbm', lightgbm.__version__)"
nproc
timeout 60 python3 - <<'PY'
import torch, statistics
from ansorc.targets.cuda.measure_driver import device_limits
print({k: v for k, v in device_limits().items() if k in ("name", "arch", "sm_count", "max_shared_per_block", "max_registers_per_block", "l2_bytes", "clock_khz")})
x = torch.empty(1 << 28, dtype=torch.float32, device="cuda"); y = torch.empty_like(x)
s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
ts = []
for _ in range(5):
    s.record(); y.copy_(x); e.record(); e.synchronize(); ts.append(s.elapsed_time(e) / 1e3)
print(f"device copy: {2 * x.numel() * 4 / statistics.median(ts) / 1e12:.2f} TB/s (bytes read + written)")
torch.backends.cuda.matmul.allow_tf32 = False
a = torch.randn(8192, 8192, device="cuda"); c = a @ a; torch.cuda.synchronize()
ts = []
for _ in range(3):
    s.record(); c = a @ a; e.record(); e.synchronize(); ts.append(s.elapsed_time(e) / 1e3)
print(f"fp32 matmul 8192^3 (cuBLAS, TF32 off): {2 * 8192 ** 3 / statistics.median(ts) / 1e12:.1f} TFLOP/s")
PY

if [ "$CORRECT" -gt 0 ]; then
  step "correctness: $CORRECT random GPU programs of the 13 workloads against numpy"
  timeout 240 python3 bench/gpu_correctness.py --programs "$CORRECT" --json "$OUT/correctness.json"
fi

step "tuning: $BUDGET s per case"
timeout $((BUDGET * 4 + 150)) python3 bench/gpu_tune.py --cases "$CASES" --seconds "$BUDGET" --logs "$LOGS" --json "$OUT/tune.json"
cp "$LOGS"/*.jsonl "$OUT/" 2>/dev/null

step "side by side with PyTorch"
timeout 150 python3 bench/gpu_table.py --cases "$CASES" --logs "$LOGS" --md "$OUT/table.md"

step "instruction mix of the best programs (cuobjdump)"
timeout 60 python3 bench/gpu_sass.py --cases "$CASES" --logs "$LOGS"

step "tests/gpu (runner, CudaKernel with numpy and PyTorch arguments)"
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/gpu 2>&1 | tail -5

step "embedding: examples/embed_cuda/main.c calls an exported library"
CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")}
timeout 120 python3 bench/gpu_embed.py /tmp/embed_out && \
  gcc -I/tmp/embed_out -I"$CUDA_HOME/include" examples/embed_cuda/main.c -L/tmp/embed_out -lmatmul_relu \
      -L"$CUDA_HOME/lib64" -lcudart -Wl,-rpath,/tmp/embed_out -lm -o /tmp/embed_app && /tmp/embed_app
echo "embed example exit: $?"

step "compute-sanitizer"
if [ "${SANITIZE:-1}" = 0 ]; then
  echo "skipped (SANITIZE=0)"
elif command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck; do
    timeout 45 compute-sanitizer --tool $tool --error-exitcode 3 python3 bench/gpu_sanitize_target.py GMM,C2D,DEP 1 \
      > /tmp/sanitizer_$tool.txt 2>&1
    echo "$tool: exit $?; tail:"
    tail -4 /tmp/sanitizer_$tool.txt
    cat /tmp/sanitizer_$tool.txt >> "$OUT/sanitizer.txt"
  done
else
  echo "compute-sanitizer not found"
fi
step "done in $(( $(date +%s) - t0 )) s"
