"""Issue 50 (6, 7, 5): a weights file names its model, a library's signature is read from the file before the
library is loaded (loading runs its code), and another model's library under this model's name is one line."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import ansorc
from ansorc import workloads
from ansorc.codegen.elf import SignatureError, read_section_signature
from ansorc.export import ExportError, export
from ansorc.ir.schedule.state import State
from ansorc.net import Model
from ansorc.net.api import build_model
from ansorc.net.network import NetError, group_dag

from tests.net_samples import chain, one_group_per_op

# a library whose constructor leaves a file behind: proof that loading it ran its code
CONSTRUCTOR = r"""
#include <stdio.h>
__attribute__((constructor)) static void ran(void) { FILE* f = fopen("%s", "w"); if (f) fclose(f); }
"""


def _model(length: int, name: str = "chain") -> Model:
    net = chain(length=length, size=256)
    groups = one_group_per_op(net)
    return build_model(net, groups, {g.name: State.initial(group_dag(net, g)) for g in groups}, name=name)


def _hostile_library(tmp_path, so, extra_c: str = "") -> object:
    """`so` rebuilt as a library whose constructor creates a marker file (plus `extra_c`); returns the marker."""
    marker = tmp_path / "constructor_ran"
    src = tmp_path / "hostile.c"
    src.write_text(CONSTRUCTOR % marker + extra_c)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(so), str(src)], check=True)
    return marker


def test_a_same_layout_models_weights_file_is_refused(tmp_path):
    """Issue 50.6: chains of 4 and 6 ops have the same weight ("scale", 256 floats): the same file layout. Before
    the model digest, init accepted the other model's file silently."""
    with _model(4) as short, _model(6) as long:
        files = {**short.files, "weights": long.files["weights"]}
        with pytest.raises(NetError, match=r"\.weights: the weights file is for another model"):
            Model(files, short.signature)
        assert short.signature["digest"] != long.signature["digest"]
        x = np.linspace(-2, 2, 256, dtype=np.float32)
        np.testing.assert_array_equal(Model(short.files, short.signature)(x)[0], short(x)[0])


def test_another_models_library_under_this_models_name_is_one_line(tmp_path):
    """Issue 50.5: lib<model>.so of another model (its symbols have another prefix) was a raw cffi KeyError."""
    with _model(4) as mine, _model(6, name="other") as other:
        out = tmp_path / "out"
        mine.export(out)
        shutil.copyfile(other.files["so"], out / "libchain.so")
        with pytest.raises(NetError, match=r"libchain.so is the library of model 'other', not of 'chain'") as e:
            Model.load(out)
        assert "\n" not in str(e.value)


def test_model_load_reads_the_signature_without_running_the_library(tmp_path):
    """Issue 50.7: Model.load dlopened first (running the file's constructors), then checked its signature."""
    with _model(4) as mine:
        out = tmp_path / "out"
        mine.export(out)
    marker = _hostile_library(tmp_path, out / "libchain.so", 'const char chain_signature[] = "{}";\n')
    with pytest.raises(NetError, match=r"libchain.so: no \.ansorc_sig section"):
        Model.load(out)
    assert not marker.exists()
    (out / "libchain.so").write_text("#!/bin/sh\n")
    with pytest.raises(NetError, match="libchain.so: not an ELF shared library"):
        Model.load(out)


def test_ansorc_load_reads_the_signature_without_running_the_library(tmp_path):
    """Issue 50.7 for one kernel: `ansorc.load` dlopened the library to call <entry>_ansorc_signature()."""
    paths = export(ansorc.build(workloads.matmul(8, 4, 2)).spec, tmp_path, "mm")
    good = ansorc.load(paths["so"])
    a, b = np.ones((8, 2), np.float32), np.ones((2, 4), np.float32)
    np.testing.assert_allclose(good(a, b), a @ b)
    hostile = tmp_path / "h"
    hostile.mkdir()
    shutil.copyfile(paths["h"], hostile / "mm.h")
    signature = (tmp_path / "mm.h").read_text().split("/* ansorc-signature: ")[1].split(" */")[0]
    literal = signature.replace("\\", "\\\\").replace('"', '\\"')
    marker = _hostile_library(tmp_path, hostile / "libmm.so",
                              f'const char* mm_ansorc_signature(void) {{ return "{literal}"; }}\n')
    with pytest.raises(ExportError, match=r"libmm.so: no \.ansorc_sig section"):
        ansorc.load(hostile)
    assert not marker.exists()
    (hostile / "libmm.so").write_bytes(b"\x7fELF" + bytes(60))
    with pytest.raises(ExportError, match="libmm.so: not an ELF shared library"):
        ansorc.load(hostile)


def test_damaged_libraries_are_one_signature_error_never_a_crash(tmp_path):
    """The ELF reader on truncated and bit-flipped copies of a real library: SignatureError or the signature."""
    paths = export(ansorc.build(workloads.matmul(8, 4, 2)).spec, tmp_path, "mm")
    blob = Path(paths["so"]).read_bytes()
    assert read_section_signature(paths["so"])["entry"] == "mm"
    rng = np.random.default_rng(0)
    bad = tmp_path / "bad.so"
    for k in range(300):
        data = bytearray(blob[:int(rng.integers(0, len(blob)))] if k % 3 == 0 else blob)
        for at in rng.integers(0, max(1, len(data)), 0 if k % 3 == 0 else 8):
            data[at] ^= 1 << int(rng.integers(0, 8))
        bad.write_bytes(bytes(data))
        try:
            assert isinstance(read_section_signature(bad), dict)
        except SignatureError as e:
            assert str(e).startswith(f"{bad}: ") and "\n" not in str(e)
