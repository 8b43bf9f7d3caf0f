"""A pure-Python stand-in for cuda_driver.Device, for testing the GPU worker and runner without a GPU.

Device memory is numpy bytes; a "cubin" is a text file naming kernels, and each kernel name picks a behaviour
below (right, wrong, silent, crashing, hanging, faulting). Launches run at once, or are recorded while a stream
is being captured and run again on each graph launch. Events take host time."""
from __future__ import annotations

import os
import time

import numpy as np


class FakeCudaError(Exception):
    def __init__(self, code: int, name: str, call: str):
        self.code, self.name, self.call = code, name, call
        super().__init__(f"{call} failed: {name} ({code})")


def _f32(mem, ptr):
    return mem[ptr].view(np.float32)


def _add(mem, p):                # C = A + B
    _f32(mem, p[2])[:] = _f32(mem, p[0]) + _f32(mem, p[1])


def _add_wrong(mem, p):
    _f32(mem, p[2])[:] = _f32(mem, p[0]) + _f32(mem, p[1]) + 1.0


def _scale_to_ws(mem, p):        # W = 2 A (first launch of a two-launch program)
    _f32(mem, p[1])[:] = 2.0 * _f32(mem, p[0])


def _ws_plus_b(mem, p):          # C = W / 2 + B
    _f32(mem, p[2])[:] = _f32(mem, p[0]) / 2.0 + _f32(mem, p[1])


def _clobber_input(mem, p):
    _add(mem, p)
    _f32(mem, p[0])[:] = 0.0


def _slow(mem, p):
    _add(mem, p)
    time.sleep(0.002)


_cold_calls = [0]


def _cold(mem, p):               # slow for its first two runs (the checked and the warm one), then fast
    _add(mem, p)
    _cold_calls[0] += 1
    if _cold_calls[0] <= 2:
        time.sleep(0.05)


def _illegal(mem, p):
    raise FakeCudaError(700, "CUDA_ERROR_ILLEGAL_ADDRESS", "cuStreamSynchronize")


def _crash(mem, p):
    os._exit(11)


def _hang(mem, p):
    time.sleep(3600)


KERNELS = {"add": _add, "add_wrong": _add_wrong, "nothing": lambda mem, p: None, "scale_to_ws": _scale_to_ws,
           "ws_plus_b": _ws_plus_b, "clobber_input": _clobber_input, "slow": _slow, "cold": _cold, "illegal": _illegal,
           "crash": _crash, "hang": _hang}


class FakeDevice:
    def __init__(self):
        self.mem: dict[int, np.ndarray] = {}
        self.next_ptr = 0x10000
        self.capturing = None
        self.graphs = {}
        self.modules_loaded = 0
        self.launches = 0

    def limits(self) -> dict:
        return {"name": "fake", "max_threads_per_block": 1024, "arch": "sm_90"}

    def alloc(self, nbytes):
        ptr, self.next_ptr = self.next_ptr, self.next_ptr + max(256, nbytes)
        self.mem[ptr] = np.zeros(nbytes, np.uint8)
        return ptr

    def free(self, ptr):
        del self.mem[ptr]

    def htod(self, ptr, array):
        self.mem[ptr][:] = np.ascontiguousarray(array).view(np.uint8).ravel()

    def dtoh(self, array, ptr):
        array.view(np.uint8).reshape(-1)[:] = self.mem[ptr]

    def memset32(self, ptr, value, count):
        self.mem[ptr].view(np.uint32)[:count] = value

    def load_module(self, image: bytes):
        self.modules_loaded += 1
        return {"kernels": image.decode().split()}

    def unload_module(self, module):
        self.modules_loaded -= 1

    def function(self, module, name):
        if name not in module["kernels"] or name not in KERNELS:
            raise FakeCudaError(500, "CUDA_ERROR_NOT_FOUND", f"cuModuleGetFunction({name})")
        return name

    def set_func_attribute(self, fn, attr, value):
        pass

    def launch(self, fn, grid, block, shared, stream, pointers):
        if self.capturing is not None:
            self.capturing.append((fn, list(pointers)))
            return
        self.launches += 1
        KERNELS[fn](self.mem, list(pointers))

    def synchronize(self):
        pass

    def stream(self):
        return "stream"

    def stream_synchronize(self, stream):
        pass

    def capture(self, stream, body):
        self.capturing = []
        try:
            body()
        finally:
            recorded, self.capturing = self.capturing, None
        key = len(self.graphs)
        self.graphs[key] = recorded
        return key, key

    def graph_launch(self, exec_, stream):
        for fn, pointers in self.graphs[exec_]:
            self.launch(fn, None, None, 0, stream, pointers)

    def destroy_graph(self, graph, exec_):
        if graph is not None:
            del self.graphs[graph]

    def event(self):
        return [0.0]

    def record(self, event, stream):
        event[0] = time.perf_counter()

    def event_synchronize(self, event):
        pass

    def elapsed_seconds(self, start, end):
        return end[0] - start[0]
