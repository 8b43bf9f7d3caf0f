import shutil
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py


class build_py_with_runtime(build_py):
    """Copy runtime/ (C shared by the timing harness and embedding apps) into the built package as
    ansorc/_runtime, so a wheel carries it. An editable install reads runtime/ from the checkout instead."""

    def run(self):
        super().run()
        target = Path(self.build_lib) / "ansorc" / "_runtime"
        target.mkdir(parents=True, exist_ok=True)
        for f in Path(__file__).resolve().parent.joinpath("runtime").iterdir():
            if f.suffix in (".c", ".h"):
                shutil.copy2(f, target / f.name)


setup(
    name="ansorc",
    version="0.1.0",
    description="A standalone tensor compiler implementing the Ansor design",
    packages=find_packages(include=["ansorc", "ansorc.*"]),
    # the pretrained cost models (ansorc/search/pretrain.py): LightGBM text, gzipped, no pickle
    package_data={"ansorc": ["data/cost_model_*.txt.gz"]},
    cmdclass={"build_py": build_py_with_runtime},
    python_requires=">=3.10",
    install_requires=[
        "numpy>=1.24,<3",
        "networkx>=3.0,<4",
        "cffi>=1.15,<3",
        "lightgbm>=4.0,<5",
        "tqdm>=4.60,<5",
        # whole networks (ansorc.net): import and the onnxruntime peer, pinned
        "onnx==1.23.2",
        "onnxruntime==1.30.0",
    ],
    extras_require={
        # ruff pinned: `make lint` must not start failing when a new release adds checks
        "dev": ["pytest>=7,<10", "pytest-xdist>=3.5,<4", "hypothesis>=6.50,<7", "matplotlib>=3.5,<4", "ruff==0.17.5"],
        "gpu": ["pycuda>=2022.1"],
        # distributed tuning (ansorc.measure.ray_backend), pinned
        "ray": ["ray[client]==2.60.0"],   # [client]: ray://HOST:PORT addresses (grpcio)
        # the model corpus (tests/corpus.py, bench/corpus_bench.py): public model definitions exported to ONNX.
        # torch is the CPU build (+cpu: never a multi-GB CUDA build from the registry); the registry's torchvision
        # is built for the CUDA torch, so tests/corpus.py imports it without its C operators (none are needed)
        "corpus": ["torch==2.13.0+cpu", "torchvision==0.28.0", "timm==1.0.31", "transformers==5.25.0"],
        # the PyTorch front end (ansorc.net.from_torch, torch.compile(backend="ansorc")), torch pinned as above
        "torch": ["torch==2.13.0+cpu"],
        # the MetaSchedule comparison (bench/tvm_compare.py): TVM's wheel with the FFI release it works with
        # (0.1.15's JSON writer crashes under it), MetaSchedule's XGBoost cost model and what its search imports
        "tvm": ["apache-tvm==0.27.0.post1", "apache-tvm-ffi==0.1.14.post1", "xgboost-cpu==3.2.0", "psutil>=5.9,<8",
                "tornado>=6,<7", "cloudpickle>=3,<4"],
    },
    entry_points={"console_scripts": ["ansorc=ansorc.cli:main"],
                  # torch.compile(m, backend="ansorc") finds the backend without an import (ansorc/torch.py)
                  "torch_dynamo_backends": ["ansorc=ansorc.net.torch_backend:ansorc_backend"]},
)
