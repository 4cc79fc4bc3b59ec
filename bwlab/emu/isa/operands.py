"""Operand readers and writers: what a decoder builds its closure from.

A decoder never parses at run time: it asks here, once, for a reader per source operand and a writer
per destination, each a closure over register indices, types and constants.

* `bits_reader(ctx, op, ty)` -> `read(warp)`: the 32 lanes' values of operand `op` read as type `ty`
  (registers, immediates, symbols, special registers, a negated predicate).
* `writer(ctx, op, ty)` -> `write(warp, values, mask)`: stores `values` of type `ty` into the lanes
  of `mask` of destination `op` (truncated to the register's width; `_` is a sink).
* `addr_reader(ctx, op)` -> `(space of a symbol base or None, read(warp) -> uint64 addresses)`.
* `mods_of(op)`, `types(mods)`, `state_space(mods)`, `value_dtype(ty)`: the instruction text's pieces.
"""
from __future__ import annotations

import numpy as np

from ..errors import UnsupportedInstruction
from ..values import WIDTH, from_bits, imm_value, to_bits

__all__ = ["bits_reader", "writer", "addr_reader", "address", "mods_of", "types", "state_space", "value_dtype", "advancing",
           "nop", "LANES", "TYPES", "ALL", "any_lane", "all_lanes"]

TYPES = set(WIDTH) | {"b128"}
LANES = np.arange(32, dtype=np.uint64)
# The mask the scheduler passes when the group is the whole warp (all 32 lanes live, at one pc): a body
# or writer may test `m is ALL` for its whole-warp fast path. Read-only: no body can change it.
ALL = np.ones(32, bool)
ALL.flags.writeable = False
_NONE_BYTES = bytes(32)
_ALL_BYTES = ALL.tobytes()


def any_lane(mask) -> bool:
    """mask.any() for a 32-lane bool mask, without NumPy's reduction machinery (the hot path's cost)."""
    return mask.tobytes() != _NONE_BYTES


def all_lanes(mask) -> bool:
    """mask.all() for a 32-lane bool mask."""
    return mask.tobytes() == _ALL_BYTES


def mods_of(op: str):
    """'add.rn.f32' -> ('add', ['rn', 'f32'])."""
    parts = op.split(".")
    return parts[0], parts[1:]


def types(mods):
    return [m for m in mods if m in TYPES]


def state_space(mods):
    for m in mods:
        if m in ("global", "local", "param", "const"):
            return m
        if m.startswith("shared"):
            return "shared::cluster" if m == "shared::cluster" else "shared"
    return "generic"


def value_dtype(ty):
    return {"b8": np.uint8, "u8": np.uint8, "s8": np.int8, "b16": np.uint16, "u16": np.uint16,
            "s16": np.int16, "f16": np.float16, "bf16": np.uint16, "b32": np.uint32, "u32": np.uint32,
            "s32": np.int32, "f32": np.float32, "f16x2": np.uint32, "bf16x2": np.uint32,
            "b64": np.uint64, "u64": np.uint64, "s64": np.int64, "f64": np.float64}[ty]


def nop(ctx, ins, base, mods):
    """The decoder of an instruction with no effect the emulator models (a hint, a prefetch)."""
    return lambda w, m: None


def advancing(body):
    """A plain body(w, mask) as a control body(w, group, em) that also advances the group's pcs."""
    def run(w, group, em):
        if em.any():
            body(w, em)
        w.pc[group] += 1
    return run


def writer(ctx, op, ty):
    """callable(warp, values, mask) writing `values` of type `ty` into operand `op`."""
    if op[0] == "sink":
        return lambda w, v, m: None
    if op[0] != "reg":
        raise UnsupportedInstruction(f"cannot write to operand {op!r}")
    idx = ctx.reg(op[1])
    width = ctx.prog.reg_width[idx]
    conv = _bits_converter(ty, width)

    def write(w, vals, m, idx=idx, conv=conv):
        if w.inflight and idx in w.inflight:
            w.machine.inflight_read(w, idx, write=True)
        bits = conv(vals)
        if m is ALL:
            w.R[idx] = bits
        else:
            np.copyto(w.R[idx], bits, where=m)
    return write


def _bits_converter(ty, width):
    """values of type `ty` (an array of 32 lanes, or one value for all) -> register bits, as `to_bits`
    gives them, with the cheap cases taken without a copy."""
    def general(vals):
        if not (isinstance(vals, np.ndarray) and vals.shape == (32,)):
            vals = np.broadcast_to(vals, (32,))
        return to_bits(vals, ty, width)
    if ty == "f32" and width >= 32:
        def f32(vals):
            if isinstance(vals, np.ndarray) and vals.dtype == np.float32 and vals.shape == (32,):
                return vals.view(np.uint32)
            return general(vals)
        return f32
    if ty[0] in "ub" or ty in ("f16x2", "bf16x2"):
        def unsigned(vals):
            if isinstance(vals, np.ndarray) and vals.shape == (32,) and vals.dtype.kind == "u" \
                    and vals.dtype.itemsize * 8 <= width:
                return vals
            return general(vals)
        return unsigned
    if ty in ("s32", "s64") and width >= WIDTH[ty]:
        sdt = np.int32 if ty == "s32" else np.int64
        same = width == WIDTH[ty]

        def signed(vals):   # to_bits: the value sign-extended to 64 bits, cut to the register's width
            if isinstance(vals, np.ndarray) and vals.dtype == sdt and vals.shape == (32,):
                return vals.view(np.uint32 if ty == "s32" else np.uint64) if same else \
                    vals.astype(np.int64).view(np.uint64)
            return general(vals)
        return signed
    if ty == "pred":
        def pred(vals):
            if isinstance(vals, np.ndarray) and vals.dtype == np.bool_ and vals.shape == (32,):
                return vals
            return general(vals)
        return pred
    return general


def addr_reader(ctx, op):
    """callable(warp) -> (space of a symbol base or None, uint64 addresses) for an address operand."""
    if op[0] != "addr":
        raise UnsupportedInstruction(f"expected an address operand, got {op!r}")
    base, off = op[1], op[2]
    if base[0] == "sym":
        sp, val = ctx.symbol(base[1])
        if sp == "shared":
            return sp, (lambda w, v=val + off: np.full(32, w.cta.shared_base + v, np.uint64))
        a = np.full(32, (val + off) & 0xFFFFFFFFFFFFFFFF, np.uint64)
        return sp, (lambda w, a=a: a)
    if base[0] == "imm":
        a = np.full(32, int(base[1], 0) + off, np.uint64)
        return None, (lambda w, a=a: a)
    if base[0] == "reg" and _special(base[1]) is None:
        # a register's row holds the address itself (a 32-bit register's bits are zero-extended)
        idx = ctx.reg(base[1])
        o = np.uint64(off & 0xFFFFFFFFFFFFFFFF)

        def reg_addr(w, idx=idx, o=o):
            if w.inflight and idx in w.inflight:
                w.machine.inflight_read(w, idx)
            return w.R[idx] + o
        return None, reg_addr
    ty = "u64" if ctx.prog.reg_width[ctx.reg(base[1])] == 64 else "u32"
    r = bits_reader(ctx, base, ty)
    if off == 0:
        return None, (lambda w: r(w).astype(np.uint64))
    o = np.uint64(off & 0xFFFFFFFFFFFFFFFF)
    return None, (lambda w: r(w).astype(np.uint64) + o)


def address(ctx, op):
    """Only the reader of `addr_reader`."""
    return addr_reader(ctx, op)[1]


def bits_reader(ctx, op, ty: str):
    """A callable(warp) -> typed 32-lane values of operand `op` read as `ty`."""
    kind = op[0]
    if kind == "reg":
        name = op[1]
        if name.startswith("%") and _special(name):
            return _special(name)(ty)
        idx = ctx.reg(name)
        conv = _FROM_BITS.get(ty)
        if conv is not None:
            def read_fast(w, idx=idx, conv=conv):
                if w.inflight and idx in w.inflight:
                    w.machine.inflight_read(w, idx)
                return conv(w.R[idx])
            return read_fast

        def read(w, idx=idx, ty=ty):
            if w.inflight and idx in w.inflight:
                w.machine.inflight_read(w, idx)
            return from_bits(w.R[idx], ty)
        return read
    if kind == "imm":
        v = imm_value(op[1], ty)
        return lambda w, v=v: v
    if kind == "sym":
        sp, val = ctx.symbol(op[1])
        if sp == "func":
            raise UnsupportedInstruction(f"function {op[1]} used as a value")
        if sp == "shared":   # a shared variable's address carries the CTA's rank (bits 24 and up)
            return lambda w, val=val, ty=ty: from_bits(np.full(32, w.cta.shared_base + val, np.uint64), ty)
        v = from_bits(np.full(32, val, np.uint64), ty)
        return lambda w, v=v: v
    if kind == "neg":
        r = bits_reader(ctx, op[1], "pred")
        return lambda w: ~r(w)
    raise UnsupportedInstruction(f"operand {op!r} cannot be read as a value")


# from_bits for the common types, without its dispatch
_FROM_BITS = {
    "f32": lambda b: b.astype(np.uint32).view(np.float32),
    "u32": lambda b: b.astype(np.uint32), "b32": lambda b: b.astype(np.uint32),
    "s32": lambda b: b.astype(np.uint32).view(np.int32),
    "u64": lambda b: b, "b64": lambda b: b, "s64": lambda b: b.view(np.int64),
    "f64": lambda b: b.view(np.float64),
    "pred": lambda b: b != 0,
}

_SPECIALS = ("%tid", "%ntid", "%ctaid", "%nctaid", "%clusterid", "%nclusterid", "%cluster_ctaid",
             "%cluster_nctaid", "%laneid", "%warpid", "%nwarpid", "%smid", "%nsmid", "%gridid",
             "%cluster_ctarank", "%cluster_nctarank", "%is_explicit_cluster", "%globaltimer",
             "%globaltimer_lo", "%globaltimer_hi", "%clock", "%clock64", "%clock_hi", "%lanemask_eq",
             "%lanemask_lt", "%lanemask_le", "%lanemask_gt", "%lanemask_ge", "%dynamic_smem_size",
             "%total_smem_size", "%aggr_smem_size")


def _special(name: str):
    if name.split(".")[0] in _SPECIALS:
        def make(ty, name=name):
            def read(w):
                return from_bits(w.special(name), ty)
            return read
        return make
    return None
