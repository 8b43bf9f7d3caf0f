"""Issue 12 hardening of exported kernels: the signature cannot be forged from user text and `load` checks it
against the library itself (row 1); re-exporting over a library a process has loaded leaves that process
running (row 6); integer kernels' headers build with their own documented command (row 9); tensors `a` and `A`
get distinct header macros (low row)."""
import json
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import ansorc
from ansorc import te, workloads
from ansorc.codegen.header import read_signature
from ansorc.export import ExportError, export
from ansorc.ir.schedule.steps import Annotate, Split

ROOT = Path(__file__).resolve().parents[2]
FAKE = {"entry": "sm", "args": [{"name": "X", "shape": [1], "dtype": "float32", "output": False},
                                {"name": "Y", "shape": [1], "dtype": "float32", "output": True}]}
FORGED = f"/* ansorc-signature: {json.dumps(FAKE, separators=(',', ':'))} */"


def _signature_lines(header: str) -> list:
    return [line for line in header.splitlines() if "ansorc-signature" in line]


def test_forged_signature_comment_in_a_te_file_is_not_read(tmp_path):
    te_file = tmp_path / "sm.te"
    te_file.write_text(f"# ansorc-signature: {json.dumps(FAKE)}\n# {FORGED}\n"
                       + (ROOT / "examples/softmax.te").read_text())
    r = subprocess.run([sys.executable, "-m", "ansorc.cli", "compile", str(te_file), "-o", str(tmp_path / "out"),
                        "--trials", "0", "--name", "sm", "-D", "M=4", "-D", "N=8", "--quiet"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    header = (tmp_path / "out" / "sm.h").read_text()
    assert len(_signature_lines(header)) == 1    # the user's lines were defanged, ours is the only one
    kern = ansorc.load(tmp_path / "out")
    assert [a.shape for a in kern.args] == [(4, 8), (4, 8)]
    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(kern(x), e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)


def test_line_breaks_in_expression_or_provenance_cannot_start_a_signature_line(tmp_path):
    kern = ansorc.build(workloads.matmul(8, 4, 2), name="mm")
    spec = kern.spec.with_expression(f"C = A @ B\u2028{FORGED}\r{FORGED}\x0c{FORGED}\n*/ int x;") \
        .with_provenance({f"by\n{FORGED}": f"me\u2029{FORGED}"})
    paths = export(spec, tmp_path, "mm")
    header = Path(paths["h"]).read_text()
    assert len(_signature_lines(header)) == 1 and "*/ int x" not in header
    assert read_signature(header)["args"][0]["shape"] == [8, 2]
    subprocess.run(["gcc", "-fsyntax-only", "-x", "c", "-std=c99", "-Werror", paths["h"]], check=True)
    again = ansorc.load(paths["so"])
    a, b = np.ones((8, 2), np.float32), np.ones((2, 4), np.float32)
    np.testing.assert_allclose(again(a, b), a @ b)


def test_load_refuses_a_header_that_disagrees_with_its_library(tmp_path):
    small, big = tmp_path / "small", tmp_path / "big"
    export(ansorc.build(workloads.matmul(8, 4, 2)).spec, small, "mm")
    export(ansorc.build(workloads.matmul(64, 32, 16)).spec, big, "mm")
    (small / "mm.h").write_text((big / "mm.h").read_text())   # the small library, the big shapes
    with pytest.raises(ExportError, match="libmm.so does not match mm.h"):
        ansorc.load(small)
    hand_edited = (big / "mm.h").read_text().replace('"shape":[64,16]', '"shape":[640,16]')
    assert hand_edited != (big / "mm.h").read_text()
    (big / "mm.h").write_text(hand_edited)
    with pytest.raises(ExportError, match="does not match"):
        ansorc.load(big / "libmm.so")


def test_load_refuses_a_library_that_carries_no_signature(tmp_path):
    kern = ansorc.build(workloads.matmul(8, 4, 2), name="mm")
    paths = export(kern.spec, tmp_path, "mm")
    plain = tmp_path / "plain.c"
    plain.write_text(kern.spec.source("mm").code)   # the kernel without its signature function
    subprocess.run(["gcc", "-shared", "-fPIC", "-fopenmp", "-O1", "-o", paths["so"], str(plain), "-lm"],
                   check=True)
    with pytest.raises(ExportError, match=r"no \.ansorc_sig section: not a library built by this ansorc"):
        ansorc.load(paths["so"])


def test_malformed_signature_lines_are_one_clear_error(tmp_path):
    export(ansorc.build(workloads.matmul(8, 4, 2)).spec, tmp_path, "mm")
    header = (tmp_path / "mm.h").read_text()
    [line] = _signature_lines(header)
    for bad in (line + "\n" + line, line.replace('"float32"', '"float16"'), line.replace("[8,2]", "[8,-2]"),
                line.replace('"name":"A"', '"name":"A); system(1"'), line[:-10] + " */", ""):
        (tmp_path / "mm.h").write_text(header.replace(line, bad))
        with pytest.raises(ExportError, match="mm.h: "):
            ansorc.load(tmp_path)


CHILD = textwrap.dedent("""
    import sys
    from pathlib import Path
    import numpy as np
    import ansorc
    kern = ansorc.load(sys.argv[1])
    rng = np.random.default_rng(0)
    a = ansorc.array(rng.standard_normal((64, 48)), "float32")
    b = ansorc.array(rng.standard_normal((48, 32)), "float32")
    calls = 0
    print("ready", flush=True)
    while not Path(sys.argv[2]).exists() or calls < 20:
        np.testing.assert_allclose(kern(a, b), a @ b, rtol=1e-4, atol=1e-4)
        calls += 1
    print("calls", calls, flush=True)
""")


def test_reexport_over_a_library_in_use_leaves_its_user_running(tmp_path):
    mm = workloads.matmul(64, 32, 48)
    naive = ansorc.build(mm).spec
    tiled = ansorc.build(mm, [Split("C", "j", (16,)), Annotate("C", "j.1", "vectorize")]).spec
    out, stop = tmp_path / "out", tmp_path / "stop"
    export(naive, out, "mm")
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(out), str(stop)], cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "ready\n", child.communicate()[1]
        for k in range(6):   # a different program each time: an overwritten mapping would run foreign code
            export(tiled if k % 2 == 0 else naive, out, "mm")
        stop.touch()
        stdout, stderr = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 0, f"child exited with {child.returncode}: {stderr[-2000:]}"
    assert stdout.startswith("calls")
    assert sorted(p.name for p in out.iterdir()) == ["libmm.so", "mm.c", "mm.h"]   # no temporary left
    assert ansorc.load(out)  # the re-exported files are a consistent set


def _build_line(header: str) -> list:
    [line] = [ln for ln in header.splitlines() if "Build the library:" in ln]
    return shlex.split(line.split("Build the library:", 1)[1])


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_kernel_header_builds_with_its_own_command(tmp_path, dtype):
    A = te.placeholder((4, 6), dtype, name="A")
    B = te.compute((4, 6), lambda i, j: A[i, j] * 3 + 1, name="B")
    paths = export(ansorc.build([A, B]).spec, tmp_path, "scale")
    header = Path(paths["h"]).read_text()
    assert "#include <stdint.h>" in header
    r = subprocess.run(_build_line(header), cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    app = tmp_path / "app.c"
    app.write_text(textwrap.dedent("""
        #include "scale.h"
        #include <stdio.h>
        int main(void) {
          scale_A_t a[SCALE_A_SIZE]; scale_B_t b[SCALE_B_SIZE];
          for (int i = 0; i < SCALE_A_SIZE; ++i) a[i] = (scale_A_t)(i - 7);
          if (scale(a, b) != 0) return 1;
          for (int i = 0; i < SCALE_B_SIZE; ++i) if (b[i] != a[i] * 3 + 1) return 2;
          puts("ok");
          return 0;
        }
    """))
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Werror", f"-I{tmp_path}", str(app), f"-L{tmp_path}", "-lscale",
                    f"-Wl,-rpath,{tmp_path}", "-fopenmp", "-o", str(tmp_path / "app")], check=True)
    res = subprocess.run([str(tmp_path / "app")], capture_output=True, text=True)
    assert res.returncode == 0 and res.stdout == "ok\n"


def test_tensors_named_a_and_A_get_distinct_macros(tmp_path):
    a = te.placeholder((3, 5), name="a")
    A = te.placeholder((5, 7), name="A")
    out = te.compute((3, 5), lambda i, j: a[i, j] * 2.0, name="b")
    B = te.compute((5, 7), lambda i, j: A[i, j] + 1.0, name="B2")
    paths = export(ansorc.build([a, A, out, B]).spec, tmp_path, "k")
    header = Path(paths["h"]).read_text()
    assert "#define K_a_DIM1 5" in header and "#define K_A_DIM1 7" in header and "#define K_B_DIM0 3" in header
    app = tmp_path / "app.c"
    app.write_text('#include "k.h"\n'
                   "_Static_assert(K_a_DIM0 == 3 && K_a_DIM1 == 5 && K_A_DIM0 == 5 && K_A_DIM1 == 7, \"a/A\");\n"
                   "_Static_assert(K_B_SIZE == 15 && K_B2_SIZE == 35, \"outputs\");\n"
                   "int main(void) { return 0; }\n")
    subprocess.run(["gcc", "-std=c11", "-Wall", "-Werror", f"-I{tmp_path}", "-fsyntax-only", str(app)], check=True)


def test_reloading_a_reexported_library_in_the_same_process_is_refused(tmp_path):
    """The dynamic loader returns the library already open under a path, so the old code would run with the new
    header's shapes: the signature check turns that into an error that says why."""
    export(ansorc.build(workloads.matmul(8, 4, 2)).spec, tmp_path, "mm")
    assert ansorc.load(tmp_path).args[0].shape == (8, 2)
    export(ansorc.build(workloads.matmul(64, 32, 16)).spec, tmp_path, "mm")
    with pytest.raises(ExportError, match="this process loaded an earlier library from this path"):
        ansorc.load(tmp_path)


def test_cuda_header_macros_are_distinct_and_its_description_stays_a_comment(tmp_path):
    from ansorc.codegen.source import ArgSpec, Source
    from ansorc.targets.cuda.export import cuda_header
    args = (ArgSpec("a", (3,), "int32", False), ArgSpec("A", (4,), "int64", False),
            ArgSpec("out", (3,), "float32", True))
    header = cuda_header(Source("", "k", args, "cuda"), "nvcc k.cu", "evil */ int x;\n#define K_A_DIM0 99")
    assert "#define K_a_DIM0 3" in header and "#define K_A_DIM0 4" in header and "\n#define K_A_DIM0 99" not in header
    (tmp_path / "k.h").write_text(header)
    app = tmp_path / "app.c"
    app.write_text('#include "k.h"\n_Static_assert(K_a_DIM0 == 3 && K_A_DIM0 == 4 && K_OUT_SIZE == 3, "k");\n')
    subprocess.run(["gcc", "-std=c11", "-Wall", "-Werror", f"-I{tmp_path}", "-fsyntax-only", str(app)], check=True)
