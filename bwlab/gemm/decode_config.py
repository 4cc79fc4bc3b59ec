"""The decode rung's compile-time shape for one wgmma N (`Config`), checked on construction
(bwlab.gemm.decode holds the rung; cuda_src/gemm_sm90/sd_swap_ab.cu the kernel)."""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Config", "L2_PROMOTIONS", "MAX_STAGES"]

L2_PROMOTIONS = ("none", "64B", "128B", "256B")
MAX_STAGES = 32          # the kernel's barrier arrays (sd_swap_ab.cu MAX_STAGES)


@dataclass(frozen=True)
class Config:
    """The kernel's compile-time shape for one MT: consumer warpgroups (64 rows of B each), CTAs of a
    cluster splitting K (1, 2 or 4), boxes of 64 K per stage; `regs`: (producer, consumer) setmaxnreg
    registers, () the default, (0, 0) none; `minb`: CTAs per SM the registers and ring are sized for (2: a
    CTA of the next PDL grid fits beside); `even`: 0, the tile grid, or E > 0: E x (SMs / split) clusters
    sharing N's rows evenly (`Rung.groups`); `msplit`: 2: the cluster's two CTAs split M, not K, B's stage
    multicast to both; `l2`: A's and B's tensor maps' L2 promotion; `a_stages`: 0, A's boxes in each stage
    of B's ring, or R >= 2: A in a ring of its own, R stages deep, the rest of the SMEM a deeper ring of B
    (B streams from DRAM, A comes from L2: less latency to cover); `a_share`: 2: the two CTAs of a cluster
    (rows of B of their own, the same K) share A's ring, each loading every other box by multicast; `stagger`: 1,
    each cluster starts its walk along K at its own offset (q k_iters / Q for cluster q of Q) and wraps round; `early`: 1, a
    consumer hands each stage back as soon as its own wgmma on it are done, not once the next stage's are issued."""
    consumers: int
    split: int
    kb: int
    regs: tuple = ()
    minb: int = 1
    even: int = 0
    msplit: int = 1
    l2: str = "none"
    a_stages: int = 0
    a_share: int = 1
    stagger: int = 0
    early: int = 0

    def __post_init__(self):
        if self.consumers not in (1, 2, 4):
            raise ValueError(f"Config: consumers = {self.consumers}; the kernel has 1, 2 or 4 consumer warpgroups")
        if self.split not in (1, 2, 4):
            raise ValueError(f"Config: split = {self.split}; K is split into 1, 2 or 4 pieces (a cluster of that "
                             "many CTAs)")
        if self.kb < 1:
            raise ValueError(f"Config: kb = {self.kb}; a stage holds at least one box of 64 K")
        if self.even not in (0, 1, 2):
            raise ValueError(f"Config: even = {self.even}; 0 (the tile grid) or 1 or 2 clusters per SM's worth "
                             "of rows (even rows)")
        if self.msplit not in (1, 2):
            raise ValueError(f"Config: msplit = {self.msplit}; M is split across a cluster of 1 or 2 CTAs")
        if self.msplit == 2 and self.split != 1:
            raise ValueError(f"Config: msplit = 2 with split = {self.split}; a cluster splits M or K, not both "
                             "(msplit = 2 takes split = 1)")
        if self.msplit == 2 and self.consumers * self.kb % 2:
            raise ValueError(f"Config: msplit = 2 with {self.consumers} consumer(s) x kb = {self.kb} boxes of B per "
                             "stage; the two CTAs multicast half of them each (an even count)")
        if self.a_stages and not 2 <= self.a_stages <= MAX_STAGES:
            raise ValueError(f"Config: a_stages = {self.a_stages}; A's own ring is 0 (none) or 2 to {MAX_STAGES} "
                             "stages")
        if self.a_share not in (1, 2) or (self.a_share == 2 and not (
                self.a_stages and self.split == 1 and self.msplit == 1 and self.kb % 2 == 0 and not self.even)):
            raise ValueError(f"Config: a_share = {self.a_share}; 1, or 2 with A in a ring of its own (a_stages), K and "
                             "M whole (split = msplit = 1), an even kb (the pair loads every other box each), the tile grid")
        if self.stagger not in (0, 1):
            raise ValueError(f"Config: stagger = {self.stagger}; 0 (every cluster walks K from its piece's start) or 1 "
                             "(each from its own offset)")
        if self.early not in (0, 1):
            raise ValueError(f"Config: early = {self.early}; 0 (a stage handed back once the next one's wgmma are "
                             "issued) or 1 (once its own are done)")
        if self.l2 not in L2_PROMOTIONS:
            raise ValueError(f"Config: l2 = {self.l2!r}; a tensor map's L2 promotion is one of "
                             f"{', '.join(L2_PROMOTIONS)} (cuTensorMapEncodeTiled, CUtensorMapL2promotion)")
        if self.minb not in (1, 2):
            raise ValueError(f"Config: minb = {self.minb}; the kernel is sized for 1 or 2 CTAs per SM")
        if self.regs and (len(self.regs) != 2 or any(r and not (24 <= r <= 256 and r % 8 == 0) for r in self.regs)
                          or (self.regs[0] == 0) != (self.regs[1] == 0)):
            raise ValueError(f"Config: regs = {self.regs}; (producer, consumer) registers are both 0 (no "
                             "setmaxnreg) or both multiples of 8 in [24, 256] (PTX ISA, setmaxnreg)")
