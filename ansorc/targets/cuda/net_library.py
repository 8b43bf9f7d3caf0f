"""A whole model as one CUDA library: every group's kernels in one .cu, the weights uploaded once, intermediates
(and the groups' workspaces) in one device arena planned by liveness, and `<model>_run` replayed as one CUDA graph.

`plan_network` decides everything as data (CudaNetPlan: the distinct programs, and per group call the binding of
each argument: a model input or output, a byte offset in the weights or in the arena); `emit_network` writes the
.cu from the plan and the programs' Source parts (no C is parsed); net_model.py runs the same plan on the GPU, or
through the GPU emulation on the CPU, which is how the plan and the programs are checked without a GPU.

C API (every pointer a device pointer; `stream` NULL: the library's own stream, and the call waits):
    int  <m>_init(const char* weights_path);   read and check <m>.weights, upload it, allocate the arena
    int  <m>_run(inputs..., outputs..., void* stream);
    int  <m>_run_host(void** host_args);       host arrays in and out (staged through device buffers)
    void <m>_free(void);
    const char* <m>_error(void);               the last CUDA error's text
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from ...codegen.pipeline import render
from ...ir.program.dtypes import C_TYPE, ITEMSIZE
from ...net.arena import ArenaPlan, Interval, plan_arena
from ...net.library import (LibraryError, check_args, first_outputs, intermediate_intervals, io_signature, model_digest,
                            model_ident, producers, schedule_key, tensor_bytes)
from ...net.library_c import STATUS, c_string, loader
from ...net.network import Network, tensors_by_name
from ...net.weights import DTYPE_CODE, layout


@dataclass(frozen=True)
class Binding:
    kind: str     # "input" | "output" | "weight" | "arena"
    at: int       # input/output position; byte offset in the weights file (weight) or in the arena
    dtype: str


@dataclass(frozen=True)
class Call:
    group: str
    program: int  # index into CudaNetPlan.programs
    args: tuple   # Binding per argument of the program (Source.args), then per workspace


@dataclass(frozen=True)
class CudaNetPlan:
    name: str           # C prefix of the library's symbols
    programs: tuple     # Source of each distinct program (groups of one workload and schedule share one)
    states: tuple       # the State of each program, same order (the emulation renders them again)
    calls: tuple        # Call per group, in execution order
    arena: ArenaPlan
    weight_order: tuple
    weight_file: tuple  # weights.layout(...): (entries, data_start, file_size)
    copies: tuple       # (output k, output j): an output listed twice is computed once (j), then copied
    digest: bytes


def _programs(groups, schedules: dict, tgt, m: str, everything: dict) -> tuple:
    """(sources, states, program index per group)."""
    sources, states, index, per_group = [], [], {}, []
    for g in groups:
        if g.name not in schedules:
            raise LibraryError(f"group {g.name!r} has no schedule")
        state = schedules[g.name]
        key = schedule_key(state)
        if key not in index:
            index[key] = len(sources)
            sources.append(render(state.dag, state, f"{m}_p{len(sources)}", tgt))
            states.append(state)
        check_args(sources[index[key]], g, everything)
        per_group.append(index[key])
    return tuple(sources), tuple(states), per_group


def plan_network(net: Network, groups, schedules: dict, target, name: str | None = None) -> CudaNetPlan:
    """Where every argument of every group's kernels lives; `schedules`: group name -> State of its DAG."""
    m = model_ident(name or net.name)
    everything = tensors_by_name([*net.outputs, *net.inputs])
    produced = producers(net, groups)
    sources, states, program_of = _programs(groups, schedules, target, m, everything)
    inputs = {t.name: k for k, t in enumerate(net.inputs)}
    outputs = first_outputs(net)
    copies = [(k, outputs[t.name]) for k, t in enumerate(net.outputs) if outputs[t.name] != k]
    intervals = intermediate_intervals(groups, produced, outputs, everything)
    for i, p in enumerate(program_of):   # a workspace lives only while its group runs
        intervals += [Interval(f"{groups[i].name}\0{w.name}", w.size * ITEMSIZE[w.dtype], i, i)
                      for w in sources[p].workspaces]
    arena = plan_arena(intervals)
    order = tuple(sorted({n for g in groups for n in g.inputs if n in net.weights}))
    wfile = layout(net.weights, order)
    offset = {e.name: e.offset for e in wfile[0]}

    def bind(n: str) -> Binding:
        dtype = everything[n].dtype
        if n in inputs:
            return Binding("input", inputs[n], dtype)
        if n in outputs:
            return Binding("output", outputs[n], dtype)
        if n in offset:
            return Binding("weight", offset[n], dtype)
        return Binding("arena", arena.offsets[n], dtype)

    calls = []
    for g, p in zip(groups, program_of):
        ws = tuple(Binding("arena", arena.offsets[f"{g.name}\0{w.name}"], w.dtype) for w in sources[p].workspaces)
        calls.append(Call(g.name, p, tuple(bind(n) for n in (*g.inputs, *g.outputs)) + ws))
    digest = model_digest(net, groups, schedules, wfile)
    return CudaNetPlan(m, sources, states, tuple(calls), arena, order, wfile, tuple(copies), digest)


def _pointer(b: Binding) -> str:
    ct = C_TYPE[b.dtype]
    return {"input": f"(const {ct}*)in{b.at}", "output": f"out{b.at}",
            "weight": f"(const {ct}*)(ansorc_dev_w + {b.at}ull)",
            "arena": f"({ct}*)(ansorc_dev_arena + {b.at}ull)"}[b.kind]


def _launches(plan: CudaNetPlan, net: Network) -> list:
    lines = []
    for k, call in enumerate(plan.calls):
        src = plan.programs[call.program]
        lines.append(f"  /* call {k}: group {c_string(call.group)[1:-1]} */")
        for launch in src.launches:
            args = ", ".join(_pointer(call.args[i]) for i in launch.args)
            grid, block = launch.grid[0], launch.block[0]
            lines.append(f"  {launch.kernel}<<<{grid}, {block}, {launch.shared_bytes}, s>>>({args});")
    for k, j in plan.copies:
        nbytes = tensor_bytes(net.outputs[k])
        lines.append(f"  cudaMemcpyAsync(out{k}, out{j}, {nbytes}ull, cudaMemcpyDeviceToDevice, s);")
    return lines


def _params(net: Network) -> list:
    return ([f"const {C_TYPE[t.dtype]}* in{k}" for k, t in enumerate(net.inputs)]
            + [f"{C_TYPE[t.dtype]}* out{k}" for k, t in enumerate(net.outputs)])


def signature(plan: CudaNetPlan, net: Network, arch: str) -> dict:
    ins, outs = io_signature(net)
    kernels = sum(len(plan.programs[c.program].launches) for c in plan.calls)
    return {"model": plan.name, "target": "cuda", "arch": arch, "inputs": ins, "outputs": outs,
            "arena_bytes": plan.arena.size, "intermediate_bytes": plan.arena.naive_size, "groups": len(plan.calls),
            "programs": len(plan.programs), "launches": kernels, "weights": len(plan.weight_order),
            "weights_bytes": plan.weight_file[2], "digest": plan.digest.hex(),
            "calls": [[c.group, plan.programs[c.program].entry] for c in plan.calls]}


def emit_network(plan: CudaNetPlan, net: Network, arch: str) -> tuple:
    """(<m>.cu, the signature dict) of the plan."""
    from .net_host import host_code
    seen, head, kernels = set(), [], []
    for src in plan.programs:
        for kind, text in src.parts:
            if kind in ("prelude", "helper") and text not in seen:
                seen.add(text)
                head.append(text)
            elif kind == "kernel":
                kernels.append(text)
    sig = signature(plan, net, arch)
    entries, _, file_size = plan.weight_file
    io_bytes = [tensor_bytes(t) for t in (*net.inputs, *net.outputs)]
    code = "\n".join([
        *head, "#include <cuda_runtime.h>", "#include <stdlib.h>",
        "static void* ansorc_alloc(size_t n) { void* p = NULL; return posix_memalign(&p, 64, n ? n : 64) == 0 ? p "
        ": NULL; }", *kernels,
        loader(f"{plan.name}_host", entries, file_size, 64, DTYPE_CODE, plan.digest, linkage="static "),
        host_code(plan.name, _params(net), _launches(plan, net), file_size, plan.arena.size, io_bytes,
                  len(net.inputs), STATUS["ERR_CUDA"]),
        f'extern "C" const char {plan.name}_signature[] = {c_string(json.dumps(sig, separators=(",", ":")))};', ""])
    return code, sig


__all__ = ["Binding", "Call", "CudaNetPlan", "plan_network", "emit_network", "signature"]
