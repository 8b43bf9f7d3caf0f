"""`ansorc profile` on a model of the offline zoo (ansorc.net.zoo), which has no .onnx file: the model is written
to a temporary one, and every other argument goes to the command as it is.

    python bench/net_profile.py --model resnet18 [--threads 2] [--log L] [--rounds 20] [--top 15] [--png P]

Each task's time inside the model, its share, GFLOP/s, where its program came from (and with --log its best time
alone in the log), beside onnxruntime's per-node times, alternating (ansorc/net/profile.py).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="resnet18", help="a function of ansorc.net.zoo")
    p.add_argument("--threads", type=int, default=2, help="OpenMP and onnxruntime threads")
    args, rest = p.parse_known_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))   # before the first kernel starts OpenMP
    import onnx

    from ansorc.cli import main as ansorc_main
    from ansorc.net import zoo
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{args.model}.onnx"
        onnx.save(getattr(zoo, args.model)(), str(path))
        return ansorc_main(["profile", str(path), *rest])   # the chart: <model>_profile.png here


if __name__ == "__main__":
    raise SystemExit(main())
