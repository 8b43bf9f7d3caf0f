"""median_alternating (ansorc/measure/alternate.py) on a fake clock: each contender's time per call, and the untimed
warm-up that precedes every timed block."""
import pytest

from ansorc.measure import alternate


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def perf_counter(self):
        return self.now


def _contenders(clock, calls, seconds):
    def make(name, per_call):
        def fn():
            calls.append(name)
            clock.now += per_call
        return fn
    return {name: make(name, s) for name, s in seconds.items()}


def test_times_per_call_after_warm_up(monkeypatch):
    clock, calls = FakeClock(), []
    monkeypatch.setattr(alternate.time, "perf_counter", clock.perf_counter)
    ms = 2.0 ** -10   # about a millisecond, exact in binary so that the call counts below are too
    fns = _contenders(clock, calls, {"a": 2 * ms, "b": ms})
    med = alternate.median_alternating(fns, rounds=3, min_time=4 * ms, warm=10 * ms)
    assert med == pytest.approx({"a": 2 * ms, "b": ms})
    # a: 1 first call + 2 sizing the block, then per round 5 warm-up calls (10 ms) and the 2 timed ones
    assert calls.count("a") == 3 + 3 * 7
    assert calls.count("b") == 5 + 3 * 14
    # rounds alternate: after sizing, a's warm-up and block, then b's, three times over
    tail = calls[8:]
    assert tail == (["a"] * 7 + ["b"] * 14) * 3


def test_a_slow_first_call_after_idle_is_not_timed(monkeypatch):
    """The machine runs slow for a while after it idled: the warm-up absorbs that stretch, the block does not."""
    clock, calls = FakeClock(), []
    monkeypatch.setattr(alternate.time, "perf_counter", clock.perf_counter)
    state = {"since_switch": 0}

    def fn():
        calls.append("a")
        # each contender switch ends with a slow stretch of 3 calls at 10 ms, then 1 ms per call
        clock.now += 0.010 if state["since_switch"] < 3 else 0.001
        state["since_switch"] += 1

    def other():
        state["since_switch"] = 0
        clock.now += 0.001

    med = alternate.median_alternating({"a": fn, "other": other}, rounds=3, min_time=0.002, warm=0.05)
    assert med["a"] == pytest.approx(0.001)
    # without the warm-up the block would start in the slow stretch
    med = alternate.median_alternating({"a": fn, "other": other}, rounds=3, min_time=0.002, warm=0.0)
    assert med["a"] > 0.002
