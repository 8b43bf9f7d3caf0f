"""One library per model: every group's kernel, the weights loader and `<model>_run` in ONE C translation unit.

`emit_library(net, groups, schedules, target)` renders each group's ComputeDAG under its schedule through the
one compile pipeline (codegen.pipeline.render), makes the kernels `static` (only `<model>_init`, `<model>_run`,
`<model>_free` and `<model>_signature` are exported), keeps one copy of the shared prelude and SIMD helpers, and
writes `<model>_run` as one call per group in order: inputs and outputs are the caller's arrays, weights point
into the block init read from the weights file, intermediates into one arena planned by liveness (arena.py).
Groups with the same workload and schedule share one kernel function, unless it keeps a copy of its weights
(the model's weights are constant inputs of every kernel: ir/lowering/prepared.py): each group then has its own, whose
copies `<model>_free` marks stale, since the next init's weights may land where the old ones were.
"""
from __future__ import annotations

import ctypes
import hashlib
import json
import os
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..codegen.c import PRELUDE
from ..codegen.elf import SECTION_ATTRIBUTE
from ..codegen.pipeline import render, resolve_target
from ..codegen.source import Source, join_parts
from ..codegen.target import Target, compile_flags
from ..ir.program.dtypes import C_TYPE
from ..ir.program.names import C_KEYWORDS
from ..ir.schedule.steps import steps_to_json
from ..measure import memory
from ..measure.builder import build as build_sources
from .arena import ArenaPlan, Interval, plan_arena
from .library_c import PROFILER, STATUS, c_string, header, loader
from .network import NetError, Network, tensors_by_name
from .weights import DTYPE_CODE, layout, table_bytes, write_weights

BUILD_TIMEOUT = 600.0   # seconds: a whole model is one translation unit, far larger than one kernel


class LibraryError(NetError):
    """The model library cannot be built (a compiler failure) or its groups do not cover the network."""


@dataclass(frozen=True)
class Library:
    name: str               # prefix of the exported symbols: <name>_init, <name>_run, <name>_free
    code: str               # <name>.c
    header: str             # <name>.h
    signature: dict         # the ansorc-network JSON: inputs, outputs, arena, counts
    weight_order: tuple     # names of the weights, in the weights file's order
    arena: ArenaPlan
    target: Target
    digest: bytes           # the model's (model_digest), in its weights file and checked by <name>_init

    @property
    def source(self) -> Source:
        return Source(self.code, f"{self.name}_run", (), "c")



EXPORTED = ("_init", "_run", "_run_packed", "_free", "_signature", "_profile_enable", "_profile_read")


def _taken(symbol: str) -> bool:
    """A symbol this process already has (libc, libm, libgomp, Python): a model exporting it would replace it,
    e.g. a model named "sem" exporting sem_init."""
    try:
        return hasattr(ctypes.CDLL(None), symbol)
    except OSError:
        return False


def build_line(name: str, target: Target) -> str:
    """The command that builds lib<name>.so from <name>.c as build_library does (for the header)."""
    return f"{target.cc} {shlex.join(compile_flags(target.flags, target.cc))} -o lib{name}.so {name}.c -lm"


def model_ident(name: str) -> str:
    """A C identifier for a model's symbols from a user's model name: `<ident>_init` etc. must be valid and must
    not be a name the C library already defines."""
    s = re.sub(r"[^A-Za-z0-9_]", "_", str(name))[:48]
    if (not s or s[0].isdigit() or s in C_KEYWORDS or s.startswith(("ansorc_", "__"))
            or any(_taken(s + suffix) for suffix in EXPORTED)):
        s = "m_" + s
    return s


def tensor_bytes(t) -> int:
    """Bytes of a te tensor."""
    return memory.tensor_bytes(t.shape, t.dtype)


def producers(net: Network, groups) -> dict:
    """Tensor name -> index of the group computing it; every group input must exist before the group runs."""
    produced, inputs = {}, {t.name for t in net.inputs}
    for i, g in enumerate(groups):
        for n in g.inputs:
            if n not in net.weights and n not in inputs and n not in produced:
                raise LibraryError(f"model {net.name!r}: group {g.name!r} reads {n!r} before any group computes it")
        for n in g.outputs:
            if n in produced:
                raise LibraryError(f"model {net.name!r}: tensor {n!r} is an output of two groups")
            produced[n] = i
    for k, t in enumerate(net.outputs):
        if t.name not in produced:
            raise LibraryError(f"model {net.name!r}: output {net.output_names[k]!r} is computed by no group")
    return produced


def first_outputs(net: Network) -> dict:
    """Tensor name -> the first model output position it is (an output listed twice is computed once)."""
    outputs = {}
    for k, t in enumerate(net.outputs):
        outputs.setdefault(t.name, k)
    return outputs


def intermediate_intervals(groups, produced: dict, outputs: dict, everything: dict) -> list:
    """The arena Interval of each computed tensor that is no model output: from its group to its last reader."""
    last = {n: i for i, g in enumerate(groups) for n in g.inputs}  # the last reader wins
    return [Interval(n, tensor_bytes(everything[n]), i, max(i, last.get(n, i)))
            for n, i in produced.items() if n not in outputs]


def io_signature(net: Network) -> tuple:
    """(inputs, outputs) of a library's signature: name, ONNX shape, te shape, dtype of each."""
    ins = [{"name": n, "shape": list(t.shape), "te_shape": list(t.shape), "dtype": t.dtype}
           for n, t in zip(net.input_names, net.inputs)]
    outs = [{"name": n, "shape": list(s), "te_shape": list(t.shape), "dtype": t.dtype}
            for n, s, t in zip(net.output_names, net.output_shapes, net.outputs)]
    return ins, outs


def _bindings(net: Network, groups, everything: dict) -> tuple:
    """(C expression of each tensor a kernel call passes, arena plan, weight order)."""
    produced = producers(net, groups)
    inputs = {t.name: k for k, t in enumerate(net.inputs)}
    outputs = first_outputs(net)
    intervals = intermediate_intervals(groups, produced, outputs, everything)
    arena = plan_arena(intervals)
    order = tuple(sorted({n for g in groups for n in g.inputs if n in net.weights}))
    wpos = {n: k for k, n in enumerate(order)}
    expr = {}
    for n in {*produced, *inputs, *order}:
        ct = C_TYPE[everything[n].dtype]
        expr[n] = (f"in{inputs[n]}" if n in inputs else f"out{outputs[n]}" if n in outputs
                   else f"(const {ct}*)ansorc_net_w[{wpos[n]}]" if n in wpos
                   else f"({ct}*)(ansorc_net_arena + {arena.offsets[n]}u)")
    return expr, arena, order


def schedule_key(state) -> str:
    """Equal for two groups of one workload whose schedules differ only in the groups' tensor names: every name in
    the steps (a stage "C", a derived stage "C.local", a fused iterator "i.0@j.0") has its stage part renamed to
    the stage's position in the DAG."""
    canon = {op.name: f"T{i}" for i, op in enumerate(state.dag.ops)}

    def name(piece: str) -> str:
        head, dot, rest = piece.partition(".")
        return canon.get(head, head) + dot + rest

    def walk(x):
        if isinstance(x, str):
            return "@".join(name(p) for p in x.split("@"))
        return [walk(v) for v in x] if isinstance(x, (list, tuple)) else x
    return state.dag.workload_key + json.dumps(walk(steps_to_json(state.steps)), separators=(",", ":"))


def _split_kernel(src: Source) -> tuple:
    """(the kernel's parts above it that the library keeps: helpers (kept once by the library, compared whole),
    the slots of kept copies of constants, ENTRY_constants_changed made static (the library's `<model>_free` calls
    it); the kernel as a static function). The shared prelude, ENTRY_prepared_spans (for measuring a kernel
    alone) and the packed wrapper are left out."""
    if not src.parts or join_parts(src.parts) != src.code:
        raise LibraryError(f"kernel {src.entry}: its Source carries no parts that make its code")
    head, kernel = [], None
    for kind, text in src.parts:
        if kind in ("helper", "state", "outlined") and text:
            head.append(text)
        elif kind == "constants_changed":
            head.append("static " + text)
        elif kind == "kernel":
            kernel = "static " + text
    if kernel is None:
        raise LibraryError(f"kernel {src.entry}: its Source has no kernel part")
    return head, kernel


def check_args(src: Source, g, everything: dict):
    names = (*g.inputs, *g.outputs)
    got = [(a.shape, a.dtype) for a in src.args]
    want = [(tuple(everything[n].shape), everything[n].dtype) for n in names]
    if got != want:
        raise LibraryError(f"group {g.name!r}: its schedule's arguments {got} are not the group's {want}")


def _call_statuses(src: Source, g, shown: dict) -> list:
    """The kernel's statuses (Source.statuses) restated for one call, in the names of this group's tensors: a
    kernel shared by several groups names the first group's tensors. `shown`: te name -> the name to show (a
    model input's own ONNX name, not the te placeholder's n_x_0)."""
    rename = {a.name: shown.get(n, n) for a, n in zip(src.args, (*g.inputs, *g.outputs))}
    word = re.compile(r"\b(" + "|".join(map(re.escape, rename)) + r")\b") if rename else None

    def shown_name(mt):
        return re.sub(r"[^A-Za-z0-9_.:-]", "_", rename[mt.group(1)])
    return [[code, (word.sub(shown_name, text) if word else text).strip()] for code, text in src.statuses]


def _kernels(groups, schedules: dict, tgt, m: str, expr: dict, everything: dict, shown: dict) -> tuple:
    helpers, bodies, calls, entries, order, meanings = [], [], [], {}, [], []
    for g in groups:
        if g.name not in schedules:
            raise LibraryError(f"group {g.name!r} has no schedule")
        state = schedules[g.name]
        key = schedule_key(state)
        if key in entries and entries[key].prepared:
            key += "\0" + g.name   # a kernel keeping a copy of its weights keeps one: one kernel per group
        if key not in entries:
            src = render(state.dag, state, f"{m}_k{len(entries)}", tgt)
            lines, body = _split_kernel(src)
            helpers += [ln for ln in lines if ln not in helpers]
            bodies.append(body)
            entries[key] = src
        src = entries[key]
        check_args(src, g, everything)
        args = ", ".join(expr[n] for n in (*g.inputs, *g.outputs))
        calls.append("  if (ansorc_net_profiling) t0 = ansorc_net_now();")
        calls.append(f"  rc = {src.entry}({args});  /* {re.sub(r'[^A-Za-z0-9_]', '_', g.name)} */")
        calls.append(f"  if (ansorc_net_profiling) ansorc_net_prof[{len(order)}] += ansorc_net_now() - t0;")
        statuses = _call_statuses(src, g, shown)
        calls += [f"  /* ansorc_status {m}_call{len(order)} {code}: {text} */" for code, text in statuses]
        # which call failed and its status (1: workspace allocation, >= 2: a data index out of range), for the caller
        at = STATUS["ERR_KERNEL"] + STATUS["KERNEL_STRIDE"] * len(order)
        calls.append(f"  if (rc != 0) return {at} + (rc > 0 && rc < 255 ? rc : 255);")
        order.append([g.name, src.entry])
        meanings.append(statuses)
    forget = [f"  {src.entry}_constants_changed();" for src in entries.values() if src.prepared]
    return helpers, bodies, calls, order, meanings, forget


def _run_function(net: Network, m: str, calls: list, n_calls: int) -> tuple:
    params = [f"const {C_TYPE[t.dtype]}* in{k}" for k, t in enumerate(net.inputs)]
    params += [f"{C_TYPE[t.dtype]}* out{k}" for k, t in enumerate(net.outputs)]
    proto = f"int {m}_run({', '.join(params) or 'void'})"
    first = first_outputs(net)
    copies = []  # an output listed twice is computed once, then copied
    for k, t in enumerate(net.outputs):
        if first[t.name] != k:
            copies.append(f"  memcpy(out{k}, out{first[t.name]}, {tensor_bytes(t)}u);")
    body = [PROFILER.substitute(m=m, n=max(1, n_calls)), proto + " {", "  int rc;", "  double t0 = 0.0;",
            "  (void)t0;", "  if (!ansorc_net_ready) return 7;", *calls, *copies, "  return 0;", "}", ""]
    casts = [f"({'const ' * (k < len(net.inputs))}{C_TYPE[t.dtype]}*)args[{k}]"
             for k, t in enumerate((*net.inputs, *net.outputs))]
    body += [f"int {m}_run_packed(void** args) {{", f"  return {m}_run({', '.join(casts)});", "}", ""]
    return proto + ";", "\n".join(body)


def _signature(net: Network, m: str, arena: ArenaPlan, calls: list, n_kernels: int, wfile: tuple) -> dict:
    ins, outs = io_signature(net)
    return {"model": m, "inputs": ins, "outputs": outs, "arena_bytes": arena.size,
            "intermediate_bytes": arena.naive_size, "groups": len(calls), "kernels": n_kernels,
            "weights": len(wfile[0]), "weights_bytes": wfile[2], "calls": calls}


def model_digest(net: Network, groups, schedules: dict, wfile: tuple) -> bytes:
    """SHA-256 of what the weights file must fit: the model's inputs and outputs, each group's tensors and
    workload (its computation, not its schedule: a re-tuned library takes the same file), and the weights' table."""
    structure = {"inputs": [[n, list(t.shape), t.dtype] for n, t in zip(net.input_names, net.inputs)],
                 "outputs": [[n, list(t.shape), t.dtype] for n, t in zip(net.output_names, net.outputs)],
                 "groups": [[g.name, list(g.inputs), list(g.outputs), schedules[g.name].dag.workload_key]
                            for g in groups]}
    text = json.dumps(structure, separators=(",", ":"), sort_keys=True).encode()
    return hashlib.sha256(text + b"\0" + table_bytes(wfile[0])).digest()


def emit_library(net: Network, groups, schedules: dict, target="native", name: str | None = None) -> Library:
    """The C source and header of the model library; `schedules`: group name -> State of group_dag(net, group)."""
    tgt = resolve_target(target)
    if not isinstance(tgt, Target):
        raise LibraryError(f"model {net.name!r}: whole-model libraries are built for CPU targets, not {target!r}")
    m = model_ident(name or net.name)
    everything = tensors_by_name([*net.outputs, *net.inputs])  # an unused input still has a parameter
    expr, arena, order = _bindings(net, groups, everything)
    shown = {t.name: n for t, n in zip(net.inputs, net.input_names)}
    helpers, bodies, calls, called, meanings, forget = _kernels(groups, schedules, tgt, m, expr, everything, shown)
    wfile = layout(net.weights, order)
    proto, run = _run_function(net, m, calls, len(called))
    digest = model_digest(net, groups, schedules, wfile)
    sig = {**_signature(net, m, arena, called, len(bodies), wfile), "call_statuses": meanings, "digest": digest.hex()}
    sig_text = c_string(json.dumps(sig, separators=(",", ":")))
    # in its own ELF section too: Model reads it from the file before loading (running) the library
    code = "\n".join([PRELUDE, *helpers, *bodies, loader(m, wfile[0], wfile[2], arena.size, DTYPE_CODE, digest, forget),
                      f"#define ANSORC_NET_SIGNATURE_SECTION {SECTION_ATTRIBUTE}",
                      f"ANSORC_NET_SIGNATURE_SECTION const char {m}_signature[] = {sig_text};", "", run])
    return Library(m, code, header(m, proto, sig, build_line(m, tgt)), sig, order, arena, tgt, digest)


def build_library(lib: Library, cc: str | None = None, extra_flags=()) -> Path:
    """lib<model>.so of `lib` in the build cache (by content); one compiler call."""
    flags = (*lib.target.flags, *extra_flags)
    [res] = build_sources([lib.source], target_flags=flags, cc=cc or lib.target.cc, timeout=BUILD_TIMEOUT,
                          n_parallel=1)
    if not res.ok:
        lines = res.error_msg.strip().splitlines()
        why = next((ln for ln in lines if "error" in ln), lines[0] if lines else "no output")
        where = next((ln for ln in lines if ln.startswith("source:")), "")
        raise LibraryError(f"building lib{lib.name}.so failed: {why.strip()} ({where})")
    return Path(res.lib_path)


def _replace(path: Path, write) -> None:
    """Write through a temporary name then rename: a process that loaded the old file keeps a whole one."""
    tmp = path.with_name(f".{path.name}.tmp.{os.getpid()}")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _paths(outdir, m: str) -> dict:
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    return {"c": out / f"{m}.c", "h": out / f"{m}.h", "so": out / f"lib{m}.so", "weights": out / f"{m}.weights"}


def write_library(outdir, lib: Library, so_path, weights: dict) -> dict:
    """<model>.c, <model>.h, lib<model>.so (copied from `so_path`) and <model>.weights (written from `weights`)
    in `outdir`; returns their paths by "c", "h", "so", "weights"."""
    paths = _paths(outdir, lib.name)
    _replace(paths["c"], lambda p: p.write_text(lib.code))
    _replace(paths["h"], lambda p: p.write_text(lib.header))
    _replace(paths["so"], lambda p: shutil.copyfile(so_path, p))
    write_weights(paths["weights"], weights, lib.weight_order, lib.digest)
    return {k: str(v) for k, v in paths.items()}


def copy_library(outdir, name: str, files: dict) -> dict:
    """The four files of a written library (paths by kind, as write_library returns them) copied to `outdir`."""
    missing = [str(files.get(k)) for k in ("c", "h", "so", "weights") if not Path(files.get(k) or "").is_file()]
    if missing:
        raise LibraryError(f"model {name!r}: cannot export, missing {', '.join(missing)}")
    paths = _paths(outdir, name)
    for kind, dst in paths.items():
        if Path(files[kind]).resolve() != dst.resolve():
            _replace(dst, lambda p, src=files[kind]: shutil.copyfile(src, p))
    return {k: str(v) for k, v in paths.items()}


__all__ = ["Library", "LibraryError", "emit_library", "build_library", "write_library", "copy_library", "model_ident"]
