"""CTA 0's per-warp timeline of a ladder step, from the stamps in the recording `gemm_ladder` (NumPy only).

The kernels built with -DGEMM_STAMPS write, for CTA 0 only, stamps[track][event][begin/end]
[%globaltimer ns, %clock64 cycles] (cuda_src/gemm_sm90/gemm_common.cuh, `stamp`):

* track 0, the TMA producer, event = k-slice: begin = starts waiting for a free buffer, end = both
  loads issued (steps 1 and 2: thread 0 of the one warpgroup; from step 3 on: the producer warpgroup);
* tracks 1 and 2, the consumer warpgroups, event = k-slice: begin = the slice's bytes have landed
  (its `full` wait returned), end = its wgmma are known to be finished (steps 1 and 2 have track 1 only);
* track 3, the epilogue, event = tile * 2 + consumer (steps 1 and 2: event 0 for the whole tile):
  begin/end of writing that consumer's part of C (step 6: until its last TMA store is issued).

Zeros mean nothing was recorded. Times here are clock64 cycles of the SM that ran CTA 0, counted from
the step's first stamp: %globaltimer ticks in steps of tens of nanoseconds, too coarse for one k-slice.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .ladder import BK, Step, step as _step

__all__ = ["TRACKS", "StepTimeline", "step_timeline", "stamp_mhz"]

TRACKS = ("TMA producer", "consumer WG 1", "consumer WG 2", "epilogue")


def stamp_mhz(stamps) -> float:
    """The clock CTA 0's SM ran at over one launch: clock64 over %globaltimer between its first and last
    stamps (stamps[track, event, begin/end, (ns, clock64)], zeros where nothing was recorded)."""
    st = np.asarray(stamps).reshape(-1, 2)
    st = st[st[:, 0] > 0]
    if len(st) < 2:
        raise ValueError("fewer than two stamps written: the kernel was not built with -DGEMM_STAMPS")
    i, j = np.argmin(st[:, 0]), np.argmax(st[:, 0])
    dt = float(st[j, 0]) - float(st[i, 0])
    if dt <= 0:
        raise ValueError("the stamps span no time")
    return (float(st[j, 1]) - float(st[i, 1])) / dt * 1e3


@dataclass
class StepTimeline:
    step: Step
    bars: list            # per track: float array (events, 2) of [begin, end] cycles; NaN where not recorded
    ns: np.ndarray        # globaltimer ns of every recorded stamp, paired with `cycles`
    cycles: np.ndarray
    k_tiles: int          # k-slices per tile

    @property
    def clock_ghz(self) -> float:
        """The SM clock during the launch: the slope of clock64 against globaltimer (least squares)."""
        return float(np.polyfit(self.ns - self.ns.min(), self.cycles - self.cycles.min(), 1)[0])

    def _ok(self, track: int) -> np.ndarray:
        return ~np.isnan(self.bars[track][:, 0])

    def slices(self) -> int:
        return int(self._ok(1).sum())

    @property
    def slice_period(self) -> float:
        """Median cycles between the starts of consecutive k-slices in consumer 1, inside a tile."""
        b = self.bars[1][self._ok(1), 0]
        d = np.diff(b)
        inside = (np.arange(1, len(b)) % self.k_tiles) != 0
        return float(np.median(d[inside]))

    @property
    def load_to_data(self) -> float:
        """Median cycles from a slice's loads being issued to a consumer seeing its bytes."""
        n = min(len(self.bars[0]), len(self.bars[1]))
        d = self.bars[1][:n, 0] - self.bars[0][:n, 1]
        return float(np.nanmedian(d))

    @property
    def hold(self) -> float:
        """Median cycles consumer 1 holds a k-slice: from its bytes landing to its wgmma known finished."""
        b = self.bars[1][self._ok(1)]
        return float(np.median(b[:, 1] - b[:, 0]))

    @property
    def epilogue(self) -> float:
        """Median cycles one consumer spends writing its part of C."""
        e = self.bars[3][self._ok(3)]
        return float(np.median(e[:, 1] - e[:, 0]))

    def epilogue_bars(self):
        """(tile, consumer, begin, end) of every recorded epilogue."""
        out = []
        for ev in np.flatnonzero(self._ok(3)):
            tile, cons = (ev // 2, ev % 2) if self.step.threads > 128 else (ev, 0)
            out.append((int(tile), int(cons), *self.bars[3][ev]))
        return out

    def window(self, where: str = "start", slices: int = 16) -> tuple:
        """(t0, t1) cycles: 'start' — the first `slices` k-slices; 'boundary' — the last slices/2 k-slices
        of the first tile, its epilogue and (when the CTA walks more tiles) the first slices/2 of the next."""
        cons = [t for t in (1, 2) if self._ok(t).any()]
        if where == "start":
            return 0.0, float(max(np.nanmax(self.bars[t][:slices, 1]) for t in cons))
        if where != "boundary":
            raise ValueError(f"window is 'start' or 'boundary', got {where!r}")
        half = slices // 2
        t0 = float(min(self.bars[t][self.k_tiles - half, 0] for t in cons))
        epi_end = max(e for tile, _, _, e in self.epilogue_bars() if tile == 0)
        nxt = self.k_tiles + half - 1
        if self.slices() > nxt:
            return t0, float(max(epi_end, *(self.bars[t][nxt, 1] for t in cons)))
        return t0, float(epi_end)

    def busy(self, t0: float, t1: float) -> float:
        """Fraction of [t0, t1] during which some consumer holds a k-slice (data landed, wgmma not
        yet known finished)."""
        iv = np.concatenate([self.bars[t][self._ok(t)] for t in (1, 2)])
        iv = np.clip(iv[np.argsort(iv[:, 0])], t0, t1)
        covered, reach = 0.0, t0
        for b, e in iv:
            b = max(b, reach)
            if e > b:
                covered += e - b
                reach = e
        return covered / (t1 - t0)


def step_timeline(rec, name) -> StepTimeline:
    """The timeline of one step ('s3', 3 or the full name) from the recording `gemm_ladder`."""
    s = _step(name)
    names = [str(n) for n in rec["steps"]]
    if s.name not in names:
        raise KeyError(f"{s.name} is not in the recording (it holds {', '.join(names)})")
    st = np.asarray(rec["stamps"][names.index(s.name)], dtype=np.int64)
    used = st[..., 1] > 0                       # (track, event, begin/end)
    t_zero = st[..., 1][used].min()
    bars = []
    for tr in range(st.shape[0]):
        b = np.where(used[tr], st[tr, :, :, 1] - t_zero, 0).astype(np.float64)
        b[~(used[tr, :, 0] & used[tr, :, 1])] = np.nan
        last = np.flatnonzero(~np.isnan(b[:, 0]))
        bars.append(b[: last[-1] + 1] if len(last) else b[:0])
    k = int(rec.params["stamp_shape"][2]) // BK
    return StepTimeline(s, bars, st[..., 0][used].astype(np.float64), st[..., 1][used].astype(np.float64), k)
