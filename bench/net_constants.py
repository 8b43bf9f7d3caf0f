"""A whole model built twice from the same log (or its default programs): the weights passed to every kernel per
call, and the weights declared constant (what a kernel computes from them alone, a blocked copy of a matmul's
weights, made on the first run and kept: docs/networks.md); with onnxruntime, alternating in one process.

    python bench/net_constants.py bert_tiny                  # default programs
    python bench/net_constants.py resnet18 --log L --rounds 20
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

import ansorc.net  # noqa: E402
from ansorc.net import network, zoo  # noqa: E402
from ansorc.net.importer import import_model  # noqa: E402
from net_bench import alternate, feeds, ort_session  # noqa: E402


def per_call(net, log):
    """The model compiled with no weight declared constant (as before session s38)."""
    keep = network.constant_inputs
    network.constant_inputs = lambda net, group: ()
    try:
        return ansorc.net.compile(net, log=log)
    finally:
        network.constant_inputs = keep


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", choices=("resnet18", "resnet50", "mobilenet_v2", "bert_tiny"))
    ap.add_argument("--log")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args(argv)
    model = getattr(zoo, a.model)()
    net = import_model(model)
    x = feeds(model)
    ordered = [x[vi.name] for vi in model.graph.input]
    sess = ort_session(model, 2)
    libs = {"per call": per_call(net, a.log), "constant": ansorc.net.compile(net, log=a.log)}
    want = sess.run(None, x)
    for k, lib in libs.items():
        err = max(float(np.linalg.norm(o - w) / np.linalg.norm(w)) for o, w in zip(lib(*ordered), want))
        slots = Path(lib.files["c"]).read_text().count("static ansorc_prepared ")
        print(f"{k}: {lib.signature['kernels']} kernels, {slots} keeping a copy of their weights, "
              f"relative L2 error against onnxruntime {err:.1e}")
    fns = {k: (lambda lib=lib: lib(*ordered)) for k, lib in libs.items()}
    fns["onnxruntime"] = lambda: sess.run(None, x)
    for _ in range(a.repeats):
        med = alternate(fns, a.rounds)
        print(a.model, ", ".join(f"{k} {v * 1e3:.3f} ms" for k, v in med.items()), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
