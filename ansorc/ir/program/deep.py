"""Run a deeply recursive computation in a thread with a large stack and a raised recursion limit.

The loop-nest IR scopes every intermediate buffer with an Allocate around the rest of the program, so a chain
of n tensors lowers to statements nested n deep, and every pass and renderer walks them recursively. Rather than
rewriting each walk, work on a large program runs where deep recursion is safe: a thread whose C stack is big
enough for the Python frames the raised limit allows. Small programs (the usual case) run inline.
"""
from __future__ import annotations

import sys
import threading

FRAMES_PER_LEVEL = 12          # generous: the deepest walks use a few frames per nesting level
STACK_BYTES_PER_FRAME = 1024   # C stack per Python frame, with margin (most Python-to-Python calls use none)
_lock = threading.Lock()
_active = [0, 0]               # running deep calls, the recursion limit before the first of them


def run_deep(levels: int, fn, *args, **kwargs):
    """fn(*args, **kwargs), in a big-stack thread when `levels` (the expected nesting) could exceed the limit."""
    if levels * FRAMES_PER_LEVEL <= sys.getrecursionlimit() // 2:  # the usual case: a few dozen stages at most
        return fn(*args, **kwargs)
    need = levels * FRAMES_PER_LEVEL + 2000
    result: list = []

    def target():
        try:
            result.append((True, fn(*args, **kwargs)))
        except BaseException as e:  # handed to the caller's thread as is
            result.append((False, e))
    with _lock:
        if _active[0] == 0:
            _active[1] = sys.getrecursionlimit()
        _active[0] += 1
        sys.setrecursionlimit(max(sys.getrecursionlimit(), need))
        old = threading.stack_size()
        threading.stack_size(min(need * STACK_BYTES_PER_FRAME + (64 << 20), 4 << 30))
        try:
            t = threading.Thread(target=target, name="ansorc-deep", daemon=True)
            t.start()
        finally:
            threading.stack_size(old)
    try:
        t.join()
    finally:
        with _lock:
            _active[0] -= 1
            if _active[0] == 0:
                sys.setrecursionlimit(_active[1])
    ok, value = result[0]
    if not ok:
        raise value
    return value
