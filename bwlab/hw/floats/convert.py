"""cvt between every pair of formats (floats of every width, the 8-, 6- and 4-bit codes, ue8m0, integers),
with the NaN rules measured on an H200, and the packed x2 forms."""
from __future__ import annotations

import numpy as np

from .arith import _round_f32
from .formats import _bits, _check_rnd, _INTS, _U64, _UDT, FORMATS, IRND, to_f64
from .rounding import _finish, _ftz, _relu, _round_core, _special, from_f64, round_value


# ---------------------------------------------------------------- cvt


def _int_in(bits, src):
    """Integer raw bits -> (negative, magnitude uint64)."""
    signed, w = _INTS[src]
    u = np.asarray(bits).astype(np.uint64) & _U64((1 << w) - 1 if w < 64 else 0xFFFFFFFFFFFFFFFF)
    if signed:
        neg = (u >> _U64(w - 1)) & _U64(1) == 1
        mag = np.where(neg, ((~u) + _U64(1)) & _U64((1 << w) - 1 if w < 64 else 0xFFFFFFFFFFFFFFFF), u)
    else:
        neg = np.zeros(u.shape, bool)
        mag = u
    return neg, mag


def to_signed_bits(bits, w):
    """Raw bits of a w-bit signed integer -> int64 values."""
    u = np.asarray(bits).astype(np.uint64) & _U64((1 << w) - 1 if w < 64 else 0xFFFFFFFFFFFFFFFF)
    return ((u ^ _U64(1 << (w - 1))) - _U64(1 << (w - 1))).view(np.int64)


def _int_range(dst):
    signed, w = _INTS[dst]
    return (-(1 << (w - 1)), (1 << (w - 1)) - 1) if signed else (0, (1 << w) - 1)


def _to_int(v, dst, src="f32"):
    """Integral float64 values -> saturated raw bits of dst. NaN (H200 recordings): 1<<63 for 64-bit
    destinations; for narrower ones 0 from f32/f16/bf16 sources and 1<<(w-1) from f64 sources
    (0x80000000 measured for s32/u32; narrower than 32 bits unmeasured)."""
    signed, w = _INTS[dst]
    lo, hi = _int_range(dst)
    nan = np.isnan(v)
    vv = np.where(nan, 0.0, v)
    over = vv >= float(hi) + 1 if w < 64 else vv >= 2.0 ** (63 if signed else 64)
    under = vv < float(lo)
    vc = np.where(over | under, 0.0, vv)
    if w == 64 and not signed:
        hi_part = vc >= 2.0 ** 63
        r = np.where(hi_part, (vc - 2.0 ** 63).astype(np.int64).view(np.uint64) + _U64(1 << 63),
                     vc.astype(np.int64).view(np.uint64))
    else:
        r = vc.astype(np.int64).view(np.uint64)
    r = np.where(over, _U64(hi & 0xFFFFFFFFFFFFFFFF), r)
    r = np.where(under, _U64(lo & 0xFFFFFFFFFFFFFFFF), r)
    r = np.where(nan, _U64(1 << 63) if w == 64 else (_U64(1 << (w - 1)) if src == "f64" else _U64(0)), r)
    return (r & _U64((1 << w) - 1 if w < 64 else 0xFFFFFFFFFFFFFFFF)).astype(_UDT[w])


_IROUND = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}


def _ue8m0_from(bits, src, rnd, satfinite):
    """cvt.{rz,rp}{.satfinite}.ue8m0x2.{f32,bf16x2} per element (cuda_fp8.hpp host rule)."""
    _check_rnd(rnd, ("rz", "rp"), "cvt.ue8m0x2")
    if src == "f32":
        # f32 -> bf16 rounding toward zero (rz) or up on |x| (rp); NaN stays NaN
        b = _bits(bits, FORMATS["f32"]) & np.uint32(0x7FFFFFFF)
        v = to_f64(b, "f32")
        bf = round_value(v, 0, "bf16", rnd)
    elif src == "bf16":
        bf = _bits(bits, FORMATS["bf16"])
    else:
        raise ValueError(f"cvt to ue8m0 takes .f32 or .bf16x2 sources, not .{src}")
    bf = bf.astype(np.uint32)
    res = (bf >> np.uint32(7)) & np.uint32(0xFF)
    absx = bf & np.uint32(0x7FFF)
    if rnd == "rp":
        res = np.where((bf & np.uint32(0x7F)) != 0, np.where((absx > 0x40) & (absx < 0x7F80), res + 1, res), res)
    if satfinite:
        res = np.where((absx <= 0x7F80) & (res == 0xFF), res - 1, res)
    return res.astype(np.uint8)


def _ue8m0_to_bf16(codes):
    c = np.asarray(codes).astype(np.uint16)
    return np.where(c == 0xFF, np.uint16(0x7FFF), np.where(c == 0, np.uint16(0x0040), c << np.uint16(7))).astype(np.uint16)


def cvt(bits, src: str, dst: str, rnd=None, sat=False, ftz=False, relu=False, satfinite=False):
    """cvt{.rnd}{.ftz}{.sat}{.relu}{.satfinite}.dst.src on raw bits (PTX ISA 9.7.9.21).

    Floats: f64 f32 tf32 f16 bf16 e4m3 e5m2 e3m2 e2m3 e2m1 ue8m0; integers s8..s64, u8..u64.
    `rnd`: .rn/.rna/.rz/.rm/.rp for a float result that may be inexact, .rni/.rzi/.rmi/.rpi for
    float->int and float->float integral rounding; None where PTX needs none (exact widenings)."""
    with np.errstate(invalid="ignore", over="ignore"):
        return _cvt(bits, src, dst, rnd, sat, ftz, relu, satfinite)


_NP = {"f16": np.float16, "f32": np.float32, "f64": np.float64}


def _fast_cvt(bits, src, dst):
    """.rn conversions among f16/f32/f64 (NumPy rounds directly, once) and bf16 <-> f32."""
    if src in _NP and dst in _NP:
        x = np.asarray(bits).astype(FORMATS[src].storage).view(_NP[src])
        r = x.astype(_NP[dst])
    elif src == "f32" and dst == "bf16":
        import ml_dtypes
        x = np.asarray(bits).astype(np.uint32).view(np.float32)
        r = x.astype(ml_dtypes.bfloat16)
    elif src == "bf16" and dst == "f32":
        r = (np.asarray(bits).astype(np.uint32) << np.uint32(16)).view(np.float32)
        x = r
    else:
        return None
    df = FORMATS[dst]
    nan = np.isnan(x)
    out = r.view(df.storage)
    if nan.any():
        out = np.where(nan, _cvt_nan(bits, src, dst), out)
    return out.astype(df.storage)


def _cvt_nan(bits, src, dst, rnd="rn", satfinite=False, ftz=False):
    """The NaN a float->float cvt writes for NaN inputs (H200 recordings; unmeasured pairs use the
    destination's canonical NaN):
      f64 -> f32/f16/bf16: sign, quiet bit and the payload's top bits kept (0xfff8..01 -> 0xffc00000);
      f32 -> f64: sign and payload widened, quiet bit set (0x7fc12345 -> 0x7ff82468a0000000); with
      .ftz the canonical f32 NaN widened, 0x7fffffffe0000000 (so too f16/bf16 -> f64, unmeasured);
      f16 -> f32: 0x7fffffff; bf16 -> f32: the bits shifted (payload and sign kept);
      f32 -> tf32: the bits rounded as integers (.rna adds 0x1000, then the low 13 bits clear),
      and .satfinite takes 0x2000 off any result whose exponent is all ones (0x7fc00000 -> 0x7fbfe000);
      f32 -> f16/bf16 and every other pair: the destination's canonical NaN."""
    df = FORMATS[dst]
    b = np.asarray(bits).astype(np.uint64)
    if src == "f64" and dst in ("f32", "f16", "bf16"):
        sign = (b >> _U64(63)) << _U64(df.width - 1)
        pay = (b & _U64((1 << 52) - 1)) >> _U64(52 - df.mbits)
        return (sign | _U64(df.inf_code) | _U64(1 << (df.mbits - 1)) | pay).astype(df.storage)
    if dst == "f64" and src == "f32" and not ftz:
        sf = FORMATS["f32"]
        sign = (b >> _U64(31)) << _U64(63)
        pay = (b & _U64((1 << 23) - 1)) << _U64(29)
        return (sign | _U64(0x7FF0000000000000) | _U64(1 << 51) | pay).astype(np.uint64)
    if dst == "f64" and src in ("f32", "f16", "bf16"):
        return np.full(b.shape, np.uint64(0x7FFFFFFFE0000000))
    if src == "bf16" and dst == "f32":
        return (b << _U64(16)).astype(np.uint32)
    if src == "f32" and dst == "tf32":
        r = ((b + _U64(0x1000 if rnd == "rna" else 0)) & _U64(0xFFFFE000)) & _U64(0xFFFFFFFF)
        if satfinite:
            r = np.where((r & _U64(0x7F800000)) == _U64(0x7F800000), r - _U64(0x2000), r)
        return r.astype(np.uint32)
    return np.full(b.shape, df.storage(_special(df, "nan")))


def _cvt(bits, src, dst, rnd, sat, ftz, relu, satfinite):
    widen = (src, dst) in (("f16", "f32"), ("f16", "f64"), ("f32", "f64"), ("bf16", "f32"))
    if (rnd == "rn" or (rnd is None and widen)) and not (sat or ftz or relu or satfinite):
        out = _fast_cvt(bits, src, dst)
        if out is not None:
            return out
    what = f"cvt.{dst}.{src}"
    s_int, d_int = src in _INTS, dst in _INTS
    if not s_int and src not in FORMATS and src != "ue8m0":
        raise ValueError(f"{what}: unknown source type .{src}")
    if not d_int and dst not in FORMATS and dst != "ue8m0":
        raise ValueError(f"{what}: unknown destination type .{dst}")
    if ftz and "f32" not in (src, dst):
        raise ValueError(f"{what}: .ftz applies only when .f32 is the source or destination (PTX ISA 9.7.9.21)")
    if dst == "ue8m0":
        return _ue8m0_from(bits, src, rnd, satfinite)
    if src == "ue8m0":
        if dst != "bf16":
            raise ValueError(f"{what}: ue8m0 converts only to .bf16x2 (cvt.rn.bf16x2.ue8m0x2)")
        return _ue8m0_to_bf16(bits)

    # integer -> integer: wrap, or clamp with .sat
    if s_int and d_int:
        if rnd is not None:
            raise ValueError(f"{what}: integer-to-integer cvt takes no rounding modifier")
        neg_, mag = _int_in(bits, src)
        dsig, dw = _INTS[dst]
        m = np.asarray(bits).astype(np.uint64)
        if _INTS[src][0]:
            sw = _INTS[src][1]
            m = np.where(neg_, m | _U64(~((1 << sw) - 1) & 0xFFFFFFFFFFFFFFFF), m & _U64((1 << sw) - 1 if sw < 64 else 0xFFFFFFFFFFFFFFFF))
        if sat:
            lo, hi = _int_range(dst)
            vals = [(-int(x) if n else int(x)) for n, x in zip(neg_.ravel(), mag.ravel())]
            vals = [min(max(v, lo), hi) & ((1 << dw) - 1) for v in vals]
            return np.array(vals, dtype=np.uint64).reshape(np.shape(bits)).astype(_UDT[dw])
        return (m & _U64((1 << dw) - 1 if dw < 64 else 0xFFFFFFFFFFFFFFFF)).astype(_UDT[dw])

    # integer -> float: one rounding of the exact integer
    if s_int:
        if dst not in ("f16", "bf16", "f32", "f64"):
            raise ValueError(f"{what}: PTX converts integers to .f16/.bf16/.f32/.f64 only")
        rnd = rnd or "rn"
        _check_rnd(rnd, ("rn", "rz", "rm", "rp"), what)
        if relu or satfinite:
            raise ValueError(f"{what}: .relu/.satfinite are not defined for integer sources")
        f = FORMATS[dst]
        if _INTS[src][1] <= 32 and (dst == "f64" or (dst == "f32" and not ftz) or (dst == "f16" and rnd == "rn")):
            # exact in float64, then one rounding by NumPy (f16, f32 .rn) or by a nextafter step
            signed, w = _INTS[src]
            v = (to_signed_bits(bits, w) if signed else np.asarray(bits).astype(np.uint64)
                 & _U64((1 << w) - 1)).astype(np.float64)
            if dst == "f64":
                out = v.view(np.uint64)
            elif dst == "f16":
                out = v.astype(np.float16).view(np.uint16)
            else:
                out = _round_f32(v, 0, rnd)
            return _finish(out.astype(f.storage), f, sat=sat)
        neg_, mag = _int_in(bits, src)
        out = _round_core(neg_, mag, np.zeros(mag.shape, np.int64), False, f, rnd)
        return _finish(out, f, ftz=ftz and dst == "f32", sat=sat)

    sf = FORMATS[src]
    b = _bits(bits, sf)
    if ftz and src == "f32":
        b = _ftz(b, sf)
    v = to_f64(b, src)

    # float -> integer: integral rounding, then saturation
    if d_int:
        if rnd not in IRND:
            raise ValueError(f"{what}: float-to-integer cvt needs an integer rounding modifier "
                             f"(.rni/.rzi/.rmi/.rpi), got {rnd!r}")
        with np.errstate(invalid="ignore"):
            return _to_int(_IROUND[rnd](v), dst, src)

    df = FORMATS[dst]
    small = dst in ("e4m3", "e5m2", "e3m2", "e2m3", "e2m1")
    if small and not satfinite:
        raise ValueError(f"{what}: conversions to .{dst} need .satfinite (PTX ISA 9.7.9.21)")
    if rnd in IRND:
        if dst != src:
            raise ValueError(f"{what}: integral rounding .{rnd} needs the same source and destination type")
        r = _IROUND[rnd](v)
        # a NaN: f64 returns its operand quieted (H200: floor(0x7ff0000000000001) = 0x7ff8000000000001);
        # the others give their canonical NaN
        quieted = b | df.storage(1 << (df.mbits - 1))
        out = np.where(np.isnan(v), quieted if src == "f64" else df.storage(_special(df, "nan")), b)
        fin = np.isfinite(v)
        exact = r.astype(_NP[dst]).view(df.storage) if dst in _NP else from_f64(r, dst)   # r is representable
        out = np.where(fin, exact, out)
        return _finish(out.astype(df.storage), df, ftz=ftz, sat=sat)
    widening = (df.mbits >= sf.mbits and df.ebits >= sf.ebits)
    if rnd is None:
        if not widening:
            raise ValueError(f"{what}: a narrowing float conversion needs a rounding modifier (.rn/.rz/.rm/.rp)")
        rnd = "rn"
    allowed = ("rn", "rna", "rz", "rm", "rp") if dst == "tf32" else ("rn", "rz", "rm", "rp")
    if small:
        allowed = ("rn",)
    _check_rnd(rnd, allowed, what)
    overflow = "satfinite" if satfinite else "ieee"
    out = round_value(v, 0, dst, rnd, overflow)
    nanm = np.isnan(v)
    if small and nanm.any():
        # e4m3/e5m2: 0x7f; formats without NaN: +max (cuda_fp4.hpp / cuda_fp6.hpp host rule)
        nanc = df.max_code if df.nan == "none" else 0x7F
        out = np.where(nanm, df.storage(nanc), out)
    elif nanm.any():
        out = np.where(nanm, _cvt_nan(bits, src, dst, rnd, satfinite, ftz), out)
    return _finish(out.astype(df.storage), df, ftz=ftz and dst == "f32", sat=sat, relu=relu)


def cvt_x2(a, b, src: str, dst: str, rnd="rn", relu=False, satfinite=False):
    """The packed two-element forms `cvt.rnd{.relu}{.satfinite}.{dst}x2.f32 d, a, b`: a goes to the
    upper half of d, b to the lower (PTX ISA 9.7.9.21). f16x2/bf16x2 -> uint32, 8-bit and 6-bit
    codes -> uint16 (one code per byte), e2m1x2 -> uint8 (one code per nibble), ue8m0x2 -> uint16."""
    hi = cvt(a, src, dst, rnd, relu=relu, satfinite=satfinite).astype(np.uint64)
    lo = cvt(b, src, dst, rnd, relu=relu, satfinite=satfinite).astype(np.uint64)
    if dst in ("f16", "bf16"):
        return ((hi << _U64(16)) | lo).astype(np.uint32)
    if dst == "e2m1":
        return ((hi << _U64(4)) | lo).astype(np.uint8)
    return ((hi << _U64(8)) | lo).astype(np.uint16)


def cvt_from_x2(packed, src: str, dst: str = "f16", relu=False):
    """`cvt.rn{.relu}.f16x2.{src}x2 d, a` (and bf16x2.ue8m0x2): unpack and widen, element 0 from the
    low bits into the low half of d. Returns uint32 (two 16-bit results)."""
    p = np.asarray(packed).astype(np.uint64)
    step = 4 if src == "e2m1" else 8
    mask = _U64((1 << step) - 1)
    lo, hi = p & mask, (p >> _U64(step)) & mask
    if src == "ue8m0":
        if dst != "bf16":
            raise ValueError("ue8m0x2 converts to bf16x2 only")
        out = [_ue8m0_to_bf16(x) for x in (lo, hi)]
    else:
        if dst != "f16":
            raise ValueError(f"cvt.{dst}x2.{src}x2: PTX widens the small formats to .f16x2")
        sf, df = FORMATS[src], FORMATS["f16"]
        out = []
        for x in (lo, hi):
            v = to_f64(x.astype(sf.storage), src)
            r = from_f64(v, "f16")
            if relu:
                r = _relu(r, df)
            out.append(r)
    return ((out[1].astype(np.uint32) << np.uint32(16)) | out[0].astype(np.uint32)).astype(np.uint32)


def packed2(fn, *operands, **kw):
    """An .f16x2/.bf16x2 instruction as two scalar ones: each uint32 operand splits into its low and
    high 16-bit halves, `fn` runs on each, and the halves are packed back (low result in the low
    half). E.g. `packed2(fma, a, b, c, typ="bf16", relu=True)` is fma.rn.relu.bf16x2."""
    ops = [np.asarray(x).astype(np.uint32) for x in operands]
    lo = fn(*[(x & np.uint32(0xFFFF)).astype(np.uint16) for x in ops], **kw)
    hi = fn(*[(x >> np.uint32(16)).astype(np.uint16) for x in ops], **kw)
    return (np.asarray(lo).astype(np.uint32) | (np.asarray(hi).astype(np.uint32) << np.uint32(16))).astype(np.uint32)
