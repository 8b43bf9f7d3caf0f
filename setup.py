from setuptools import find_packages, setup

setup(
    name="ansorc",
    version="0.1.0",
    description="A standalone tensor compiler implementing the Ansor design",
    # runtime/ (C shared by the timing harness and embedding apps) ships inside the package as ansorc/_runtime.
    packages=find_packages(include=["ansorc", "ansorc.*"]) + ["ansorc._runtime"],
    package_dir={"ansorc._runtime": "runtime"},
    package_data={"ansorc._runtime": ["*.h", "*.c"]},
    python_requires=">=3.10",
    install_requires=[
        "numpy>=1.24,<3",
        "networkx>=3.0,<4",
        "cffi>=1.15,<3",
        "lightgbm>=4.0,<5",
        "tqdm>=4.60,<5",
    ],
    extras_require={
        "dev": ["pytest>=7,<10", "hypothesis>=6.50,<7", "matplotlib>=3.5,<4"],
        "gpu": ["pycuda>=2022.1"],
    },
    entry_points={"console_scripts": ["ansorc=ansorc.cli:main"]},
)
