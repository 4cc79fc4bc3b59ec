"""The TMEM allocator of one SM: tcgen05.alloc / tcgen05.dealloc / tcgen05.relinquish_alloc_permit
(PTX ISA "tcgen05.alloc, tcgen05.dealloc, tcgen05.relinquish_alloc_permit"; CuTe
include/cute/arch/tmem_allocator_sm100.hpp). NumPy and `bwlab.hw` only.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from ..hw.tmem import COLUMNS, TmemError, decode_address, encode_address, new_image, warp_lane_range
from .forms import TmemAccess
from .tables import ALLOC_RULES, SEC_ALLOC, require_alloc
from .model import tcgen05_ld, tcgen05_st

__all__ = ["Allocation", "TensorMemory", "TmemNote", "attempt", "brief"]


@dataclass(frozen=True)
class Allocation:
    cta: int
    warp: int
    column: int
    ncols: int

    @property
    def taddr(self) -> int:
        return encode_address(0, self.column)


class TmemNote(UserWarning):
    """Something the model lets through but the sources do not agree on; the message says what each
    source asks for."""


@dataclass
class _CtaState:
    alloc_warp: int | None = None
    last_ncols: int | None = None     # the columns of the CTA's latest allocation
    relinquished: bool = False


@dataclass
class TensorMemory:
    """One SM's TMEM: the (128, 512) image, and an allocator shared by the CTAs resident on the SM.

    Rules (`tables.ALLOC_RULES`: PTX ISA 9.7.16.7.1 tcgen05.alloc / tcgen05.dealloc /
    tcgen05.relinquish_alloc_permit, and CuTe's TMEM::Allocator1Sm where it asks for more):
    * `tcgen05.alloc` is issued by one whole warp; the column count is a power of two in [32, 512];
      the address (lane 0, first column) is written to shared memory, not returned in a register.
    * The number of columns must not increase between two allocations of the CTA (ISA): allocate the
      largest first.
    * One warp of the CTA allocates (ISA); CuTe asks that repeated allocations come from the same warp.
    * A deallocation frees exactly one earlier allocation of the CTA. The ISA asks that one warp of the
      CTA allocate and deallocate, CuTe asks for the same warp only for repeated allocations: freeing
      from another warp than the allocating one is let through with a `TmemNote` warning (also kept
      in `notes`).
    * After `tcgen05.relinquish_alloc_permit` the CTA has given up its right to allocate.
    * Everything allocated must be deallocated before the CTA exits.
    * CTAs on the same SM share the 512 columns. On hardware an allocation that does not fit
      blocks until another CTA deallocates; the model cannot wait, so it raises.
    Where an allocation lands is not specified by the ISA; the model takes the lowest free range
    aligned to the allocation's size (kernels must use the address written to SMEM, never assume).
    """

    image: np.ndarray = field(default_factory=new_image)
    allocations: list = field(default_factory=list)
    _ctas: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    # --- allocator -------------------------------------------------------------------------
    def _cta(self, cta: int) -> _CtaState:
        return self._ctas.setdefault(int(cta), _CtaState())

    def owner_map(self) -> np.ndarray:
        """int array (512,): the CTA owning each column, -1 where free."""
        owner = np.full(COLUMNS, -1, dtype=np.int64)
        for a in self.allocations:
            owner[a.column:a.column + a.ncols] = a.cta
        return owner

    @property
    def free_columns(self) -> int:
        return COLUMNS - sum(a.ncols for a in self.allocations)

    def alloc(self, cta: int, warp: int, ncols: int, smem: np.ndarray | None = None,
              smem_offset: int = 0) -> int:
        """tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [smem + offset], ncols.

        Returns the TMEM address and, when `smem` (a uint8 array standing for the CTA's shared
        memory) is given, writes it there little-endian, as the instruction does.
        """
        warp_lane_range(warp)
        require_alloc("alloc", 1, ncols)
        ncols = int(ncols)
        st = self._cta(cta)
        if st.relinquished:
            raise TmemError(f"tcgen05.alloc after tcgen05.relinquish_alloc_permit: CTA {cta} gave up "
                            f"its right to allocate TMEM ({SEC_ALLOC})")
        if st.last_ncols is not None and ncols > st.last_ncols:
            raise TmemError(f"tcgen05.alloc of {ncols} columns after an allocation of {st.last_ncols} in "
                            f"CTA {cta}: {ALLOC_RULES['non_increasing'].rule} ({SEC_ALLOC}); allocate "
                            f"the largest first")
        if st.alloc_warp is not None and st.alloc_warp != warp:
            raise TmemError(f"tcgen05.alloc from warp {warp}, but CTA {cta} allocates from warp "
                            f"{st.alloc_warp}: {ALLOC_RULES['one_warp'].rule} ({ALLOC_RULES['one_warp'].source})")
        if smem is not None:
            if (not isinstance(smem, np.ndarray) or smem.dtype != np.uint8 or smem.ndim != 1):
                raise TmemError("smem must be a 1-D uint8 array standing for shared memory")
            if smem_offset % 4 or not 0 <= smem_offset <= smem.size - 4:
                raise TmemError(f"the SMEM destination of tcgen05.alloc is a 4-byte aligned b32 slot "
                                f"inside shared memory ({smem.size} B); got offset {smem_offset}")
        owner = self.owner_map()
        start = next((c for c in range(0, COLUMNS, ncols) if (owner[c:c + ncols] < 0).all()), None)
        if start is None:
            raise TmemError(
                f"TMEM exhausted: CTA {cta} asks for {ncols} columns, {self.free_columns} of "
                f"{COLUMNS} are free and no free {ncols}-column range is left (held: "
                + ", ".join(f"CTA {a.cta} {a.ncols} at column {a.column}" for a in self.allocations)
                + "). On hardware tcgen05.alloc would block until another CTA deallocates.")
        st.alloc_warp, st.last_ncols = int(warp), ncols
        a = Allocation(int(cta), int(warp), start, ncols)
        self.allocations.append(a)
        if smem is not None:
            smem[smem_offset:smem_offset + 4] = np.frombuffer(
                np.uint32(a.taddr).tobytes(), dtype=np.uint8)
        return a.taddr

    def dealloc(self, cta: int, warp: int, taddr: int, ncols: int) -> None:
        """tcgen05.dealloc.cta_group::1.sync.aligned.b32 taddr, ncols."""
        warp_lane_range(warp)
        require_alloc("dealloc", 1, ncols)
        lane, column = decode_address(taddr)
        match = [a for a in self.allocations if a.column == column and a.cta == int(cta)]
        if lane != 0 or not match:
            held = [a for a in self.allocations if a.cta == int(cta)]
            raise TmemError(
                f"tcgen05.dealloc of {taddr:#010x} (lane {lane}, column {column}): CTA {cta} holds no "
                "allocation starting there (freed twice, or never allocated?); it holds "
                + (", ".join(f"{a.ncols} columns at {a.taddr:#010x}" for a in held) or "nothing")
                + f"; taddr must point to a previous allocation ({SEC_ALLOC})")
        a = match[0]
        if int(ncols) != a.ncols:
            raise TmemError(f"tcgen05.dealloc of {ncols} columns at {taddr:#010x}: the allocation there "
                            f"has {a.ncols} columns; free exactly what was allocated")
        if a.warp != int(warp):
            rule = ALLOC_RULES["dealloc_warp"]
            note = (f"tcgen05.dealloc from warp {warp} of the allocation warp {a.warp} made at "
                    f"{taddr:#010x}: {rule.rule} ({rule.source})")
            self.notes.append(note)
            warnings.warn(note, TmemNote, stacklevel=2)
        self.allocations.remove(a)

    def relinquish_alloc_permit(self, cta: int) -> None:
        """tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned: the CTA gives up its right to
        allocate (PTX ISA 9.7.16.7.1 says nothing more about what it does for other CTAs)."""
        self._cta(cta).relinquished = True

    def exit(self, cta: int) -> None:
        """The CTA exits: every TMEM allocation it made must have been freed."""
        held = [a for a in self.allocations if a.cta == int(cta)]
        if held:
            raise TmemError(f"CTA {cta} exits holding TMEM ("
                            + ", ".join(f"{a.ncols} columns at {a.taddr:#010x}" for a in held)
                            + "): all TMEM must be deallocated before the kernel exits")
        self._ctas.pop(int(cta), None)

    # --- ld / st with allocation checks -----------------------------------------------------
    def _check_owned(self, cta: int, taddr: int, access: TmemAccess, op: str):
        _, col0 = decode_address(taddr)
        owner = self.owner_map()[col0:col0 + access.width]
        if owner.size < access.width or (owner != int(cta)).any():
            raise TmemError(f"tcgen05.{op}{access.label()} at column {col0} touches columns {col0}.."
                            f"{col0 + access.width - 1}, not all allocated by CTA {cta}")

    def ld(self, cta: int, warp: int, taddr: int, access: TmemAccess) -> np.ndarray:
        self._check_owned(cta, taddr, access, "ld")
        return tcgen05_ld(self.image, taddr, access, warp=warp)

    def st(self, cta: int, warp: int, taddr: int, regs, access: TmemAccess) -> None:
        self._check_owned(cta, taddr, access, "st")
        tcgen05_st(self.image, taddr, regs, access, warp=warp)


def brief(message: str) -> str:
    """The rule of a TmemError / TmemNote message without its citations: the parenthesised
    '(PTX ISA ...)' / '(CuTe ...)' sources dropped, and only the first sentence kept. The exception
    keeps the full text (`str(err)`)."""
    out, i = [], 0
    while i < len(message):
        if message[i] == "(" and message[i + 1:].lstrip().startswith(("PTX ISA", "CuTe")):
            depth = 0
            while i < len(message):              # skip to the matching parenthesis
                depth += {"(": 1, ")": -1}.get(message[i], 0)
                i += 1
                if depth == 0:
                    break
            while out and out[-1] == " ":
                out.pop()
            continue
        out.append(message[i])
        i += 1
    text = "".join(out)
    for j in range(len(text) - 2):                # cut at the first ". " that starts a new sentence
        if text[j] == "." and text[j + 1] == " " and text[j + 2].isupper():
            return text[:j + 1]
    return text


def attempt(what: str, fn) -> None:
    """Run `fn()` and print one line: 'ok', or the rule it broke (`brief` of the TmemError), and a
    line per TmemNote it raised."""
    with warnings.catch_warnings(record=True) as notes:
        warnings.simplefilter("always", TmemNote)
        try:
            fn()
            print(f"{what}: ok")
        except TmemError as e:
            print(f"{what}: refused: {brief(str(e))}")
    for n in notes:
        print(f"    note: {brief(str(n.message))}")
