"""Timing contenders in the same Python process, alternating round by round, so that all of them see the same
machine state (the VM's bursts last seconds; back-to-back blocks would give one contender the quiet stretch).
Used where ansorc is compared with a peer library (the demo, bench/peers.py); the tuner times in the worker."""
from __future__ import annotations

import time

import numpy as np


def median_alternating(fns: dict, rounds: int, min_time: float, pause: float, wake: bool = False) -> dict:
    """Median seconds per call of each fn. Each round runs every fn for a block of calls sized once to last
    `min_time`, after `pause` seconds (the previous runtime's idle threads stop spinning) and, with `wake`, one
    untimed call that wakes this runtime's threads."""
    calls = {}
    for name, fn in fns.items():
        fn()
        t0, n = time.perf_counter(), 0
        while time.perf_counter() - t0 < min_time:
            fn()
            n += 1
        calls[name] = max(1, n)
    times: dict = {k: [] for k in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            time.sleep(pause)
            if wake:
                fn()
            t0 = time.perf_counter()
            for _ in range(calls[name]):
                fn()
            times[name].append((time.perf_counter() - t0) / calls[name])
    return {k: float(np.median(v)) for k, v in times.items()}
