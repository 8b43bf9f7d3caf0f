"""Timing contenders in the same Python process, alternating round by round, so that all of them see the same
machine state (the VM's bursts last seconds; back-to-back blocks would give one contender the quiet stretch).
Used where ansorc is compared with a peer library (the demo, bench/suite.py); the tuner times in the worker.

Before each timed block the contender runs untimed for `warm` seconds rather than the process sleeping: on the
shared VM a kernel started after the CPUs idled runs slow for a fraction of a second of work (a single thread as
much as two), while the FMA peak loop recovers far sooner; and the previous runtime's idle threads (OpenBLAS spins
after a call) stop spinning while this one warms up, not while it is timed. Figures: docs/measurement.md, "Side by
side with peer libraries"."""
from __future__ import annotations

import time

import numpy as np


def _run_for(fn, seconds: float) -> int:
    """Calls fn until `seconds` have passed (at least once); the number of calls."""
    t0, n = time.perf_counter(), 0
    while True:
        fn()
        n += 1
        if time.perf_counter() - t0 >= seconds:
            return n


def alternating_rounds(fns: dict, rounds: int, min_time: float, warm: float) -> dict:
    """{name: seconds per call in each round}. Each round runs every fn untimed for `warm` seconds, then times a
    block of calls sized once to last `min_time`; round k of every fn saw the same stretch of the machine, so
    per-round ratios pair them."""
    calls = {}
    for name, fn in fns.items():
        fn()
        calls[name] = _run_for(fn, min_time)
    times: dict = {k: [] for k in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            _run_for(fn, warm)
            t0 = time.perf_counter()
            for _ in range(calls[name]):
                fn()
            times[name].append((time.perf_counter() - t0) / calls[name])
    return times


def median_alternating(fns: dict, rounds: int, min_time: float, warm: float) -> dict:
    """Median seconds per call of each fn over alternating_rounds."""
    return {k: float(np.median(v)) for k, v in alternating_rounds(fns, rounds, min_time, warm).items()}
