"""The sustained bench's in-block clock (`--clock-stamps`) without a GPU: `time_block` times only its samples
when launches run between them, and `StampClock` reads each stamped launch's own copy (a fake CuPy)."""
from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from bwlab.checks import gemm_sustained as G
from bwlab.gemm.timeline import stamp_mhz


class _Event:
    clock = [0.0]

    def record(self):
        self.t = _Event.clock[0]

    def synchronize(self):
        pass


def _fake_cupy(monkeypatch):
    cuda = types.SimpleNamespace(Event=_Event, get_elapsed_time=lambda a, b: b.t - a.t,
                                 Device=lambda: types.SimpleNamespace(synchronize=lambda: None))
    cp = types.SimpleNamespace(cuda=cuda, zeros=lambda shape, dtype: np.zeros(shape, dtype), uint64=np.uint64,
                               asnumpy=np.asarray)
    monkeypatch.setitem(sys.modules, "cupy", cp)
    return cp


def test_launches_between_samples_are_in_none_of_them(monkeypatch):
    _fake_cupy(monkeypatch)
    monkeypatch.setattr(G.time, "perf_counter", iter(np.arange(0, 100, 1.0)).__next__)

    def step():            # a launch of the timed kernel: 1 ms
        _Event.clock[0] += 1.0

    calls = []

    def between():         # the stamped launch: 7 ms, never timed
        calls.append(_Event.clock[0])
        _Event.clock[0] += 7.0
    got = G.time_block([step], seconds=4.5, per_sample=3, between=between)
    assert got and all(x == pytest.approx(1.0) for x in got)
    assert len(calls) == len(got) and calls[0] == pytest.approx(3.0)   # once after every sample
    _Event.clock[0] = 0.0
    plain = G.time_block([step], seconds=4.5, per_sample=3)
    assert plain == got    # without `between`, one chain of events: the same per-launch times


def test_stamp_clock_reads_each_stamped_launch(monkeypatch):
    _fake_cupy(monkeypatch)
    from bwlab.gemm import runner
    sets = [("a0", "b0"), ("a1", "b1")]
    made = []

    class Launch:
        def __init__(self, buf, mhz):
            self.buf, self.mhz, self.t = buf, mhz, 0

        def __call__(self):     # CTA 0 stamps two events 1000 ns apart at this launch's clock
            self.t += 5000
            self.buf[...] = 0
            self.buf[0, 0, 0] = (self.t, self.t * 2)
            self.buf[0, 3, 1] = (self.t + 1000, self.t * 2 + self.mhz)

    def prepare(name, a, b, stamps=None):
        made.append((name, a, b))
        return Launch(stamps, 1300 + 100 * len(made))
    monkeypatch.setattr(runner, "prepare", prepare)
    monkeypatch.setattr(runner, "raise_on_status", lambda launch: None)
    clock = G.StampClock(types.SimpleNamespace(name="s5_cluster_multicast"), sets, capacity=8)
    assert made == [("s5_cluster_multicast", "a0", "b0"), ("s5_cluster_multicast", "a1", "b1")]
    for _ in range(5):
        clock()
    assert clock.take() == pytest.approx([1400, 1500, 1400, 1500, 1400])
    assert clock.take() == []
    for _ in range(11):   # more than its capacity: the first 8 kept
        clock()
    assert len(clock.take()) == 8


def test_stamp_mhz_needs_two_stamps():
    st = np.zeros((4, 512, 2, 2), np.uint64)
    with pytest.raises(ValueError, match="GEMM_STAMPS"):
        stamp_mhz(st)
    st[0, 0, 0] = (100, 1000)
    st[1, 9, 1] = (2100, 4000)
    assert stamp_mhz(st) == pytest.approx(1500.0)
