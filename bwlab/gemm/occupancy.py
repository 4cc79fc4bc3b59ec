"""How many CTAs of a ladder step fit on one SM: shared memory and registers, read from the compiled
kernel (NVRTC for sm_90a; no GPU needed).

    from bwlab.gemm import occupancy
    print(occupancy.ctas_per_sm("s1"))            # registers allow 3, SMEM 6: 3 CTAs per SM
    print(occupancy.ctas_per_sm("s2", stages=4))  # SMEM allows 1

The capacities are the H100's (sm_90): 228 KiB of SMEM per SM (the device attribute
MaxSharedMemoryPerMultiprocessor, 233472 bytes, as docs/results/foundation_h100.txt prints it),
65536 32-bit registers per SM, handed out per warp in units of 256 (8 per thread), at most 32 CTAs
and 64 warps per SM (CUDA programming guide, compute capability 9.0). A CTA takes the dynamic SMEM its
launch asks for plus the kernel's static `__shared__` block, which in the cubin starts with the 1 KiB
the system reserves per CTA (the `.nv.shared.<kernel>` section: 1040 bytes for step 1, whose only
static variable is one 8-byte mbarrier; the CUDA driver reports the same kernel's static SMEM as 16
bytes and adds the reserved 1 KiB itself).

`describe_occupancy` adds what the CUDA driver's occupancy calculator said on an H100 for the same kernel
(docs/results/gemm_occupancy_h100.txt, made by docs/results/gemm_occupancy.py).
"""
from __future__ import annotations

import dataclasses
import struct
from dataclasses import dataclass

from ..util import ceil_div, round_up
from .ladder import step as _step

__all__ = ["SMEM_PER_SM", "REGS_PER_SM", "Resources", "Occupancy", "cubin_resources", "kernel_resources",
           "ctas_per_sm", "fit", "recorded_driver", "describe_occupancy"]

SMEM_PER_SM = 233472      # bytes (228 KiB), H100
REGS_PER_SM = 65536
REG_UNIT_PER_WARP = 256   # registers are allocated per warp in units of 256
MAX_CTAS_PER_SM = 32
MAX_WARPS_PER_SM = 64

_EIATTR_REGCOUNT = 0x2F   # .nv.info record: (symbol index u32, registers per thread u32)
_EIFMT_SVAL, _EIFMT_HVAL, _EIFMT_BVAL = 4, 3, 2


@dataclass(frozen=True)
class Resources:
    registers: int        # per thread, as ptxas allocated them
    static_smem: int      # bytes of the kernel's static __shared__ block (the reserved 1 KiB included)


def _sections(elf: bytes) -> dict:
    """{section name: bytes} of a 64-bit little-endian ELF file (a cubin)."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file (a cubin)")
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    heads = [struct.unpack_from("<IIQQQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    names_at = heads[shstrndx][4]
    out = {}
    for name_off, _type, _flags, _addr, off, size in heads:
        start = names_at + name_off
        name = elf[start:elf.index(b"\0", start)].decode()
        out[name] = elf[off:off + size] if _type != 8 else b"\0" * size   # SHT_NOBITS has no bytes
    return out


def _records(info: bytes):
    """(attribute, payload) pairs of an .nv.info section."""
    i = 0
    while i + 2 <= len(info):
        fmt, attr = info[i], info[i + 1]
        i += 2
        if fmt == _EIFMT_SVAL:
            size, = struct.unpack_from("<H", info, i)
            yield attr, info[i + 2:i + 2 + size]
            i += 2 + size
        elif fmt == _EIFMT_HVAL:
            yield attr, info[i:i + 2]
            i += 2
        elif fmt == _EIFMT_BVAL:
            yield attr, info[i:i + 1]
            i += 1
        else:
            yield attr, b""


def cubin_resources(cubin: bytes, kernel: str = "gemm") -> Resources:
    """Registers per thread and static SMEM of the one kernel of a cubin (every ladder file has one)."""
    sec = _sections(cubin)
    regs = [struct.unpack("<II", p)[1] for a, p in _records(sec.get(".nv.info", b"")) if a == _EIATTR_REGCOUNT]
    if len(regs) != 1:
        raise ValueError(f"expected one kernel's register count in the cubin, found {len(regs)}")
    shared = sec.get(f".nv.shared.{kernel}")
    return Resources(regs[0], len(shared) if shared is not None else 0)


def kernel_resources(name, stages: int | None = None) -> Resources:
    """Compile a step (for sm_90a, with -DGEMM_STAGES=stages for step 2's ring depth) and read its
    resources from the cubin."""
    from ..compile import compile_cuda
    s = _step(name)
    defines = {"GEMM_STAGES": stages} if stages is not None else None
    return cubin_resources(compile_cuda(s.path, arch="sm_90a", defines=defines).cubin)


@dataclass(frozen=True)
class Occupancy:
    step: str
    stages: int
    smem_per_cta: int     # dynamic (the launch) + static
    by_smem: int
    registers: int
    by_registers: int
    ctas: int

    @property
    def limit(self) -> str:
        if self.by_registers == self.by_smem:
            return "SMEM and registers alike"
        return "registers" if self.by_registers < self.by_smem else "SMEM"

    def __str__(self):
        return (f"{self.step} ({self.stages} stage{'s' if self.stages > 1 else ''}): "
                f"{self.smem_per_cta / 1024:5.1f} KiB SMEM per CTA -> {self.by_smem} per SM; "
                f"{self.registers} registers per thread -> {self.by_registers} per SM; "
                f"{self.ctas} CTA{'s' if self.ctas > 1 else ''} per SM (limited by {self.limit})")


def ctas_per_sm(name, stages: int | None = None, resources: Resources | None = None) -> Occupancy:
    """CTAs of a step that fit on one H100 SM at once, and which resource decides."""
    s = _step(name)
    if stages is not None:
        if s.name != "s2_pipeline":
            raise ValueError("only step 2 takes another ring depth (-DGEMM_STAGES)")
        s = dataclasses.replace(s, stages=stages)
    res = resources or kernel_resources(s, stages)
    smem = s.smem_bytes + res.static_smem
    by_smem, by_regs, ctas = fit(smem, res.registers, s.threads)
    return Occupancy(s.name, s.stages, smem, by_smem, res.registers, by_regs, ctas)


def fit(smem_per_cta: int, registers: int, threads: int) -> tuple[int, int, int]:
    """(CTAs the SMEM allows, CTAs the registers allow, CTAs per SM) for CTAs of `threads` threads that
    each take `smem_per_cta` bytes of SMEM (dynamic + static) and `registers` registers per thread:
    registers go to each warp in units of 256, and an SM holds at most 32 CTAs and 64 warps."""
    warps = ceil_div(threads, 32)
    per_warp = round_up(registers * 32, REG_UNIT_PER_WARP)
    by_regs = REGS_PER_SM // (per_warp * warps)
    by_smem = SMEM_PER_SM // smem_per_cta
    return by_smem, by_regs, min(by_regs, by_smem, MAX_CTAS_PER_SM, MAX_WARPS_PER_SM // warps)


DRIVER_REPORT = "gemm_occupancy_h100.txt"


def recorded_driver(name: str = DRIVER_REPORT) -> dict:
    """{(step name, stages): (CTAs per SM, registers, static SMEM bytes)} as the CUDA driver reported
    them on an H100 (docs/results/gemm_occupancy_h100.txt)."""
    from ..results import report_text
    out = {}
    for line in report_text(name).splitlines():
        f = line.split()
        if len(f) == 8 and f[2] == "ctas/SM":
            out[(f[0], int(f[1]))] = (int(f[3]), int(f[5]), int(f[7]))
    return out


def describe_occupancy(name, stages: int | None = None) -> str:
    """The occupancy computed here, and the CUDA driver's answer on an H100 beside it when recorded."""
    occ = ctas_per_sm(name, stages)
    drv = recorded_driver().get((occ.step, occ.stages))
    return str(occ) + ("" if drv is None else f"; the driver on an H100: {drv[0]}")
