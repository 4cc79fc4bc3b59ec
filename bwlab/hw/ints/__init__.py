"""Integer and bit instructions bit for bit, over raw bits (PTX ISA 9.7.1 "Integer Arithmetic
Instructions", 9.7.2 "Extended-Precision Integer Arithmetic", 9.7.8 "Logic and Shift", 9.7.9.20
"prmt", 9.7.15 "Video Instructions").

Every operand and result is a NumPy array of unsigned raw bits of the type's width (uint8 for
s8/u8, ..., uint64 for s64/u64/b64); the signedness is an argument, as PTX spells it in the type
(`typ='s32'`). Nothing here goes through Python's unbounded integers on the common paths, so a
64-bit field never raises OverflowError; 128-bit values are (lo, hi) pairs of uint64.

Rules we follow:

* Wrap-around by default; `add.sat.s32`/`sub.sat.s32`/`mad.hi.sat.s32` clamp to [INT_MIN, INT_MAX].
* Carries (9.7.2): `add.cc`/`addc{.cc}` write CC.CF = carry out; `sub.cc`/`subc{.cc}` write the
  borrow into CC.CF and `subc` subtracts it (d = a - (b + CF)). `mad.lo.cc`/`madc` likewise.
* `div`/`rem` (9.7.1.8/9): truncate toward zero (`LLONG_MIN / 3 == -3074457345618258602`);
  division by zero is "unspecified" in the ISA: an H200 gives all ones for both x/0 and x%0,
  signed or unsigned (measured for 32 bits; 16 and 64 bits assumed alike); INT_MIN / -1 = INT_MIN,
  INT_MIN % -1 = 0 (measured).
* Shifts (9.7.8.7/8): `shl`/`shr` take the whole unsigned count: counts >= width give 0 (`shr.s`:
  all sign bits). `shf.l/.r.clamp` clamp the count at 32, `.wrap` take it mod 32 (9.7.8.9).
* `bfe`/`bfi` (9.7.1.18/19): position and length are the low 8 bits of their operands; `bfe.s`
  fills with the sign of the last extracted bit (0 when len == 0).
* `bfind` (9.7.1.16): the position of the most significant non-sign bit, 0xffffffff if none;
  `.shiftamt` gives width-1-position instead.
* `prmt` (9.7.9.20): the default mode picks bytes of {b, a} (a = bytes 0..3) by the four low
  nibbles of c, bit 3 of a nibble replicating the picked byte's sign; f4e, b4e, rc8, ecl, ecr,
  rc16 use c[1:0] and the ISA's table.
* `dp4a`/`dp2a` (9.7.1.23/24): wrap-around sums into 32 bits; each operand signed or unsigned.
* `bmsk` (9.7.8.10) and `szext` (9.7.8.11): `.clamp` limits position and length at 32, `.wrap`
  takes them mod 32.
* Video SIMD (9.7.15.2 `vadd2`...`vset4`): bytes or halves extended by their types, `.sat`
  clamps each lane to the destination lane's range, the merge form keeps c's lanes outside the
  mask, `.add` sums the lanes into c.

The package, by concern: `common` (types and raw bits), `arith` (arithmetic and 128-bit values), `bits`
(counts, fields, prmt, shifts, lop3) and `simd` (dot products and the video instructions).
"""
from .arith import (abs_, add, add128, add_cc, addc, div, imax, imin, mad, mad24, mad_cc, mul, mul24, mul128, neg,
                    rem, sad, sub, sub_cc, subc, u128_join, u128_split)
from .bits import bfe, bfi, bfind, bmsk, brev, clz, lop3, popc, prmt, shf, shl, shr, szext
from .common import to_signed
from .simd import dp2a, dp4a, simd16, vop

__all__ = [
    "add", "sub", "add_cc", "addc", "sub_cc", "subc", "mul", "mad", "mad_cc", "mul24", "mad24",
    "div", "rem", "abs_", "neg", "imin", "imax", "sad", "bfind", "clz", "popc", "brev", "bfe", "bfi",
    "prmt", "dp4a", "dp2a", "bmsk", "szext", "shf", "shl", "shr", "lop3", "vop", "simd16",
    "to_signed", "u128_split", "u128_join", "add128", "mul128",
]
