"""`MulticastLoad`: the stage's case (model / run / check / show), and `compare_run`, the CTA-by-CTA
comparison of a recorded GPU run (SMEM, ranks, addresses) that `python -m bwlab.validate multicast`
prints one line of per configuration."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..case import Case, CheckResult, Mismatch, digest
from ..case import compare as compare_arrays
from .model import FILL_BYTE, TEACH_KERNEL, require_teach_config, expected_smem, make_operands, multicast_model
from .params import MulticastConfig, TILE_AREA_ALIGN
from .partition import plan
from .runner import MulticastRun, launch_multicast, launch_teach, run_multicast

__all__ = ["MulticastLoad", "ClusterRanks", "MulticastCheck", "compare_run", "run_teach"]


class MulticastLoad(Case):
    """Every CTA of a grid of clusters loads its A and/or B tiles by multicast (`cfg`).

    `model()` / `run()` give every CTA's tile area, uint8 [n_ctas, smem_bytes] (FILL_BYTE where
    nothing should land); `check(got)` names the first differing byte by CTA rank, SMEM offset and
    the operand slice that should have landed there; `show()` draws where each slice lands.

    `kernel` — a `bwlab.lab.TeachingKernel` (an edit of teach_multicast.cu) or "teach_multicast.cu"
    (the learner's %%cuda version, else the file) — makes run() launch that teaching kernel (its
    configurations: `teach_config`); without it, run() uses the harness (tma_multicast.cu)."""

    stage = "multicast"
    what = "every CTA's tile area"
    teaching_file = TEACH_KERNEL

    def __init__(self, cfg: MulticastConfig, operands: dict | None = None, seed: int = 0, kernel=None):
        if not isinstance(cfg, MulticastConfig):
            raise ValueError(f"MulticastLoad takes a MulticastConfig, got {type(cfg).__name__}")
        self.cfg = cfg
        self.seed = int(seed)
        self.operands = make_operands(cfg, seed) if operands is None else operands
        self.plans = plan(cfg)
        self._set_kernel(kernel)
        if kernel is not None:
            require_teach_config(cfg)

    def __repr__(self):
        c = self.cfg
        k = "" if self._kernel is None else f", kernel {self.kernel!r}"
        return (f"MulticastLoad(cluster {c.cluster[0]}x{c.cluster[1]} peers {c.peers} {c.operands} "
                f"grid {c.grid[0]}x{c.grid[1]} swizzle {c.swizzle}, seed {self.seed}{k})")

    def identity(self):
        return ("multicast", repr(self.cfg), digest(*(self.operands[op] for op in sorted(self.operands))),
                self.kernel_identity())

    def model(self) -> np.ndarray:
        return multicast_model(self.cfg, self.operands)

    def run(self) -> np.ndarray:
        """Every CTA's tile area after the loads on this GPU (or in the PTX emulator): by the teaching
        kernel if the case has one, else by the harness."""
        if self._kernel is not None:
            return launch_teach(self.cfg, self.operands, kernel=self.kernel)
        return run_multicast(self.cfg, self.operands)

    def show(self, ax=None, block=(0, 0)):
        """Where each slice lands in the CTAs of the cluster holding `block`."""
        from .pictures import plot_landing
        return plot_landing(self.cfg, block, ax=ax)

    # -- where a byte sits, and what probably went wrong ---------------------------------------
    def slice_at(self, cta: int, offset: int):
        """(operand, issuing rank, slice offset, slice bytes) of the slice landing at `offset` of
        CTA `cta`'s tile area, or None where no slice lands."""
        for op, src, off, nbytes in self.plans[cta].receives:
            if off <= offset < off + nbytes:
                return op, src, off, nbytes
        return None

    def where(self, index) -> str:
        cta, b = int(index[0]), int(index[1])
        p = self.plans[cta]
        head = f"CTA {cta} (block {p.block}, cluster rank {p.rank}), SMEM byte 0x{b:05x} of the tile area"
        s = self.slice_at(cta, b)
        if s is None:
            return f"{head}: no slice lands there (it must keep the fill byte 0x{FILL_BYTE:02x})"
        op, src, off, nbytes = s
        index_in = (off - self.cfg.smem_base(op)) // nbytes
        return (f"{head}: operand {op} slice {index_in}, issued by rank {src} (byte {b - off} of its "
                f"{nbytes} B at offset 0x{off:05x})")

    def hint(self, expected: np.ndarray, got: np.ndarray, m: Mismatch) -> str:
        cta, b = m.index[0], m.index[1]
        s = self.slice_at(cta, b)
        if s is None:
            return ("bytes landed where no slice belongs: each slice lands at the operand's base + "
                    "slice index x slice bytes; check the slice offsets")
        op, src, off, nbytes = s
        want, have = expected[cta, off:off + nbytes], got[cta, off:off + nbytes]
        mask = next(i.mask for q in self.plans if q.rank == src and q.cluster == self.plans[cta].cluster
                    for i in q.issues if i.operand == op)
        if np.all(have == FILL_BYTE):
            return (f"nothing landed in this slice: the {op} mask of rank {src} (0x{mask:04X}) must include "
                    f"rank {self.plans[cta].rank}, and this CTA's mbarrier must expect every byte it receives "
                    f"(expect_tx = {self.plans[cta].expect_tx} B, the whole tile(s), not the slice it issued)")
        for q_op, q_src, q_off, q_n in self.plans[cta].receives:
            if q_n == nbytes and q_off != off and np.array_equal(have, expected[cta, q_off:q_off + q_n]):
                return (f"this is the slice of rank {q_src} ({q_op}, offset 0x{q_off:05x}): each slice lands "
                        f"at the operand's base + slice index x {nbytes} B; check the slice offset")
        if np.array_equal(np.sort(have), np.sort(want)):
            return ("the right bytes in the wrong order: the swizzle is a function of the absolute SMEM "
                    "address of each slice")
        if np.any(have == FILL_BYTE) and np.array_equal(have[have != FILL_BYTE], want[have != FILL_BYTE]):
            return (f"part of the slice is missing: the wait returned before every byte landed "
                    f"(expect_tx must be {self.plans[cta].expect_tx} B)")
        return "wrong data in this slice: check the box coordinates of the issuing CTA"

    def compare(self, expected, got, source: str = "") -> CheckResult:
        e, g = np.asarray(expected), np.asarray(got)
        return compare_arrays(e, g, stage=self.stage, what=self.what, unit="byte", where=self.where,
                              hint=lambda m: self.hint(e, g, m), hex_digits=2, source=source)


class ClusterRanks(Case):
    """Which `%cluster_ctarank` (and `%cluster_ctaid`) every CTA of `cfg`'s grid reads, as the harness
    kernel reports them; the model is the cluster layout (`plan`)."""

    stage = "multicast"
    what = "%cluster_ctarank of every CTA"

    def __init__(self, cfg: MulticastConfig, seed: int = 0):
        if not isinstance(cfg, MulticastConfig):
            raise ValueError(f"ClusterRanks takes a MulticastConfig, got {type(cfg).__name__}")
        self.cfg, self.seed = cfg, int(seed)

    def __repr__(self):
        return f"ClusterRanks({self.cfg!r})"

    def identity(self):
        return ("ranks", repr(self.cfg), self.seed)

    def model(self) -> np.ndarray:
        return np.array([p.rank for p in plan(self.cfg)], np.uint32)

    def run(self) -> np.ndarray:
        return np.asarray(launch_multicast(self.cfg, make_operands(self.cfg, self.seed)).ranks, np.uint32)

    def compare(self, expected, got, source: str = "") -> CheckResult:
        blocks = [p.block for p in plan(self.cfg)]
        return compare_arrays(np.asarray(expected), np.asarray(got, np.uint32), stage=self.stage, what=self.what,
                              unit="CTA", source=source, where=lambda i: f"CTA {i[0]} (block {blocks[i[0]]})",
                              hint="rank = (bx % M) + M * (by % N): the cluster layout of CuTe's Layout<ClusterShape>")

    def show(self, ax=None):
        """The cluster: every CTA's rank and (v, m, n) coordinate."""
        from .pictures import plot_ranks
        return plot_ranks(self.cfg, ax=ax)


@dataclass
class MulticastCheck:
    """A GPU run compared with the model: SMEM byte for byte, ranks, the tile area's alignment."""

    config: MulticastConfig
    ranks_ok: bool
    aligned: bool
    bad_ctas: list = field(default_factory=list)   # linear ids whose SMEM differs from the model
    bad_bytes: int = 0
    model_is_expected: bool = True                 # the model equals "every CTA holds its tiles"

    @property
    def ok(self) -> bool:
        return self.ranks_ok and self.aligned and not self.bad_ctas and self.model_is_expected

    def line(self) -> str:
        c = self.config
        what = (f"cluster {c.cluster[0]}x{c.cluster[1]} peers {c.peers} {c.operands:2s} "
                f"grid {c.grid[0]}x{c.grid[1]} swizzle {c.swizzle:4s}")
        if self.ok:
            return f"{what}: {c.n_ctas} CTAs x {c.smem_bytes} B exact, ranks as modelled"
        return (f"{what}: MISMATCH ranks_ok={self.ranks_ok} aligned={self.aligned} "
                f"bad CTAs {self.bad_ctas[:8]} ({self.bad_bytes} bytes) model==expected {self.model_is_expected}")

    __str__ = line


def compare_run(run: MulticastRun) -> MulticastCheck:
    """Compare a GPU run with the model, CTA by CTA: every byte of every tile area, each CTA's
    %cluster_ctarank and %cluster_ctaid, and the 1024-byte alignment of the tile area."""
    cfg = run.config
    base = int(run.smem_address[0]) if len(run.smem_address) else 0
    aligned = bool(np.all(run.smem_address % TILE_AREA_ALIGN == 0))
    model = multicast_model(cfg, run.operands, smem_address=base)
    expect = expected_smem(cfg, run.operands, smem_address=base)
    plans = plan(cfg)
    ranks_ok = all(int(run.ranks[i]) == p.rank for i, p in enumerate(plans)) and all(
        tuple(int(x) for x in run.cluster_ctaid[i]) == (p.block[0] % cfg.cluster[0], p.block[1] % cfg.cluster[1])
        for i, p in enumerate(plans))
    diff = run.smem != model
    bad = [int(i) for i in np.flatnonzero(diff.any(axis=1))]
    return MulticastCheck(cfg, ranks_ok, aligned, bad, int(diff.sum()), bool(np.array_equal(model, expect)))


def run_teach(cfg, operands: dict, masks=None, kernel=None) -> np.ndarray:
    """`MulticastLoad(cfg, operands, kernel=kernel or "teach_multicast.cu").run()` (with `masks`: the
    launch itself). Kept for code written against it; a notebook builds the case."""
    if masks is not None:
        return launch_teach(cfg, operands, masks, kernel)
    return MulticastLoad(cfg, operands, kernel=kernel or TEACH_KERNEL).run()
