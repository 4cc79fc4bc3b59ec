"""The arithmetic instructions (add, sub, mul, fma, div, sqrt, rcp), min/max/abs/neg/copysign, testp and
setp, each one rounding of the exact result."""
from __future__ import annotations

import numpy as np

from .formats import _bits, _check_rnd, _classify, _fields, _U64, F64_NAN, fmt, FORMATS, RND, to_f64
from .rounding import _check_ftz, _f64_exact_op, _finish, _ftz, _sign, _special, _two_prod, _two_sum, round_value


# ---------------------------------------------------------------- arithmetic


_ARITH = ("f16", "bf16", "f32", "f64")


def _prep(what, typ, rnd, ftz, arrays, allowed=RND[:1] + RND[2:]):
    if typ not in _ARITH:
        raise ValueError(f"{what}: type .{typ} not supported (PTX: .f16, .bf16, .f32, .f64)")
    f = FORMATS[typ]
    _check_rnd(rnd, allowed, f"{what}.{typ}")
    _check_ftz(ftz, f, what)
    bs = [_bits(a, f) for a in arrays]
    if ftz:
        bs = [_ftz(b, f) for b in bs]
    return f, bs


def _f32_midpoint(s):
    """Where float64 s lies exactly halfway between two adjacent f32 values (normal or subnormal)."""
    u = np.asarray(s, np.float64).view(np.uint64)
    E = ((u >> _U64(52)) & _U64(0x7FF)).astype(np.int64) - 1023
    m = (u & _U64((1 << 52) - 1)) | _U64(1 << 52)
    shift = np.clip(29 + np.maximum(0, -126 - E), 1, 63).astype(np.uint64)
    return (m & ((_U64(1) << shift) - _U64(1))) == (_U64(1) << (shift - _U64(1)))


def _round_f32(x, tail, rnd):
    """round_value(x, tail, 'f32', rnd) through NumPy: r = RN(x) as float32, then one step of nextafter
    where the exact value x + t lies on the wrong side of r for a directed mode. x - r is exact in
    float64 (both lie within one f32 ulp), so the side is sign(x - r), or sign(t) when x == r."""
    x = np.asarray(x, np.float64)
    tail = np.broadcast_to(np.asarray(tail, np.int64), x.shape)
    with np.errstate(over="ignore"):
        r = x.astype(np.float32)
    if rnd == "rn":
        if np.any(tail != 0):
            return round_value(x, tail, "f32", rnd)             # ties decided by t: the exact path
        out = r.view(np.uint32)
    else:
        fin = np.isfinite(x)
        d = np.where(fin & np.isfinite(r), x - r.astype(np.float64), 0.0)
        side = np.where(d != 0, np.sign(d), tail).astype(np.int64)            # sign(exact - r)
        side = np.where(fin & np.isinf(r), -np.sign(r).astype(np.int64), side)  # overflowed: exact is inside
        if rnd == "rz":
            step = (side * np.where(np.signbit(r), 1, -1) > 0) & (r != 0)   # exact nearer zero than r
            nr = np.nextafter(r, np.float32(0))
        elif rnd == "rm":
            step = side < 0
            nr = np.nextafter(r, np.float32(-np.inf))
        elif rnd == "rp":
            step = side > 0
            nr = np.nextafter(r, np.float32(np.inf))
        else:
            return round_value(x, tail, "f32", rnd)
        out = np.where(step, nr, r).view(np.uint32)
    return np.where(np.isnan(x), np.uint32(0x7FFFFFFF), out).astype(np.uint32)


def _fast_f32(op, bs, ftz):
    """f32 .rn through NumPy's IEEE float32 (and, for fma, an exact f64 product plus TwoSum, with the
    rare f32 midpoints of the f64 sum rounded by the exact path). None where it does not apply."""
    f = FORMATS["f32"]
    v = [b.view(np.float32) for b in bs]
    if op == "add":
        r = v[0] + v[1]
    elif op == "mul":
        r = v[0] * v[1]
    elif op == "div":
        r = v[0] / v[1]
    elif op == "sqrt":
        r = np.sqrt(v[0])
    elif op == "fma":
        a, b, c = (x.astype(np.float64) for x in v)
        p = a * b
        x, err = _two_sum(p, c)
        bad = (err != 0) & np.isfinite(x) & _f32_midpoint(x)
        if bad.any():
            return None
        zero = (x == 0) & (err == 0) & np.isfinite(p)
        both = (p == 0) & (c == 0) & (np.signbit(p) == np.signbit(c))
        x = np.where(zero, np.where(both & np.signbit(p), -0.0, 0.0), x)
        r = x.astype(np.float32)
    else:
        return None
    out = np.where(np.isnan(r), np.uint32(f.canon_nan), r.view(np.uint32))
    return _ftz(out, f) if ftz else out.astype(np.uint32)


def _f64_nan(out, r, operands):
    """NaN results of f64 arithmetic: the NaN operand with the larger quieted payload (the first on a tie),
    quieted; else the generated F64_NAN."""
    quiet = _U64(1 << 51)
    mant = _U64((1 << 52) - 1)
    nan_out = np.full(out.shape, _U64(F64_NAN))
    best = np.full(out.shape, -1, np.int64)
    for b in operands:
        b = np.asarray(b, np.uint64) | np.zeros(out.shape, np.uint64)
        q = b | quiet
        pay = (q & mant).astype(np.int64)
        take = np.isnan(b.view(np.float64)) & (pay > best)
        nan_out = np.where(take, q, nan_out)
        best = np.where(take, pay, best)
    return np.where(np.isnan(r), nan_out, out).astype(np.uint64)


def _fma_f64_rn(a, b, c):
    """fma.rn.f64 in float64 arithmetic (Boldo and Melquiond, "Emulation of a FMA and correctly
    rounded sums: proved algorithms using rounding to odd", IEEE TC 2008): a*b = uh + ul exactly,
    c + uh = th + tl exactly, then RN(th + RO(tl + ul)) is fma's one rounding. Dekker's product is
    exact only away from overflow and underflow: elements outside a safe range return as `None`
    in the mask (False) and take the integer path."""
    x, y, z = (np.asarray(v, np.uint64).view(np.float64) for v in (a, b, c))
    ex = lambda v: ((np.asarray(v).view(np.uint64) >> _U64(52)) & _U64(0x7FF)).astype(np.int64) - 1023  # noqa
    ea, eb, ec = ex(x), ex(y), ex(z)
    safe = ((np.abs(ea) < 400) | (x == 0)) & ((np.abs(eb) < 400) | (y == 0)) & ((np.abs(ec) < 800) | (z == 0))
    safe &= (x == 0) | (y == 0) | (np.abs(ea + eb) < 800)
    xs, ys, zs = (np.where(safe, v, 0.0) for v in (x, y, z))
    uh, ul = _two_prod(xs, ys)
    ul = np.where(uh == 0, 0.0, ul)
    th, tl = _two_sum(zs, uh)
    v, e = _two_sum(tl, ul)
    even = (v.view(np.uint64) & _U64(1)) == 0
    bump = (e != 0) & even
    v = np.where(bump, np.nextafter(v, np.where(e > 0, np.inf, -np.inf)), v)
    r = th + v
    # zeros: an exact zero sum is +0 (-0 when both addends are -0), as IEEE's RN
    p0 = xs * ys
    zero = (r == 0) & (uh == 0) & (zs == 0)
    r = np.where(zero, np.where(np.signbit(p0) & np.signbit(zs), -0.0, 0.0), r)
    return r.view(np.uint64), safe


def _arith(op, typ, arrays, rnd, ftz, sat, relu=False):
    f, bs = _prep(op, typ, rnd, ftz, arrays)
    bs = np.broadcast_arrays(*bs)
    if typ == "f64" and op == "fma" and rnd == "rn" and not sat:
        with np.errstate(all="ignore"):
            r, safe = _fma_f64_rn(*bs)
            if safe.all():
                return r
    if typ == "f32" and rnd == "rn" and not sat:
        with np.errstate(all="ignore"):
            out = _fast_f32(op, bs, ftz)
        if out is not None:
            return out
    vals = [to_f64(b, typ) for b in bs]
    with np.errstate(all="ignore"):
        if typ == "f64" and (rnd != "rn" or op == "fma"):
            if op == "add":
                r = vals[0] + vals[1]
            elif op == "mul":
                r = vals[0] * vals[1]
            elif op == "fma":
                r = vals[0] * vals[1] + vals[2]
            elif op == "div":
                r = vals[0] / vals[1]
            else:
                r = np.sqrt(vals[0])
            fin = np.all([np.isfinite(v) for v in vals], axis=0)
            if op == "div":
                fin &= vals[1] != 0
            if op == "sqrt":
                fin &= vals[0] >= 0
            out = np.zeros(r.shape, np.uint64)
            if fin.any():
                out[fin] = _f64_exact_op(op, [b[fin] for b in bs], rnd)
            spec = ~fin
            if spec.any():
                out[spec] = r[spec].view(np.uint64)
            out = _f64_nan(out, r, bs)
            return _finish(out, f, sat=sat)
        if typ == "f64":
            r = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b,
                 "div": lambda a, b: a / b, "sqrt": np.sqrt}[op](*vals)
            out = _f64_nan(r.view(np.uint64), r, bs)
            return _finish(out, f, sat=sat)
        # f16 / bf16 / f32: the exact result is x + t in float64 (see module docstring)
        if op == "add":
            a, b = vals
            x, err = _two_sum(a, b)
            zero_sum = (x == 0) & (err == 0)
            same = np.signbit(a) == np.signbit(b)
            zsign = np.where((a == 0) & (b == 0) & same, np.signbit(a), rnd == "rm")
            x = np.where(zero_sum, np.where(zsign, -0.0, 0.0), x)
            tail = _sign(err)
        elif op == "mul":
            x = vals[0] * vals[1]
            tail = 0
        elif op == "fma":
            a, b, c = vals
            p = a * b                                          # exact: at most 2*24 bits
            x, err = _two_sum(p, c)
            zero_sum = (x == 0) & (err == 0)
            same = np.signbit(p) == np.signbit(c)
            zsign = np.where((p == 0) & (c == 0) & same, np.signbit(p), rnd == "rm")
            x = np.where(zero_sum & np.isfinite(p), np.where(zsign, -0.0, 0.0), x)
            tail = np.where(np.isfinite(x), _sign(err), 0)
        elif op == "div":
            a, b = vals
            x = a / b
            ok = np.isfinite(x) & (x != 0) & np.isfinite(a)
            xs = np.where(ok, x, 1.0)
            bs_ = np.where(ok, b, 1.0)
            as_ = np.where(ok, a, 1.0)
            p, e = _two_prod(xs, bs_)
            d = as_ - p                                        # exact (Sterbenz)
            r = np.sign(d - e) * np.sign(bs_)                  # sign of a/b - x
            tail = np.where(ok, r, 0).astype(np.int64)
        elif op == "sqrt":
            (a,) = vals
            x = np.sqrt(a)
            ok = np.isfinite(x) & (x > 0)
            xs = np.where(ok, x, 1.0)
            as_ = np.where(ok, a, 1.0)
            p, e = _two_prod(xs, xs)
            d = as_ - p
            tail = np.where(ok, np.sign(d - e), 0).astype(np.int64)
        else:  # pragma: no cover
            raise ValueError(op)
        out = _round_f32(x, tail, rnd) if typ == "f32" else round_value(x, tail, typ, rnd)
    return _finish(out, f, ftz=ftz, sat=sat, relu=relu)


def add(a, b, typ, rnd="rn", ftz=False, sat=False):
    """add{.rnd}{.ftz}{.sat}.typ (PTX ISA 9.7.3.1, 9.7.4.1 half, 9.7.5 bf16)."""
    return _arith("add", typ, [a, b], rnd, ftz, sat)


def sub(a, b, typ, rnd="rn", ftz=False, sat=False):
    """sub = add with b's sign flipped; a NaN b keeps its sign (f64 propagates it, H200)."""
    f = fmt(typ)
    bb = _bits(b, f)
    nb = np.where(np.isnan(to_f64(bb, typ)), bb, bb ^ f.storage(1 << (f.width - 1))).astype(f.storage)
    return _arith("add", typ, [a, nb], rnd, ftz, sat)


def mul(a, b, typ, rnd="rn", ftz=False, sat=False):
    return _arith("mul", typ, [a, b], rnd, ftz, sat)


def fma(a, b, c, typ, rnd="rn", ftz=False, sat=False, relu=False):
    """fma.rnd{.ftz}{.sat}{.relu}.typ: a*b+c rounded once (PTX ISA 9.7.3.5; .relu: f16/bf16, 9.7.4.4)."""
    if relu and typ not in ("f16", "bf16"):
        raise ValueError(f"fma.relu: PTX defines .relu for .f16/.bf16 only, not .{typ}")
    return _arith("fma", typ, [a, b, c], rnd, ftz, sat, relu)


def div(a, b, typ, rnd="rn", ftz=False, sat=False):
    """div.rnd.typ, the IEEE-compliant division (PTX ISA 9.7.3.8; .approx/.full are not this)."""
    return _arith("div", typ, [a, b], rnd, ftz, sat)


def sqrt(a, typ, rnd="rn", ftz=False, sat=False):
    """sqrt.rnd.typ (PTX ISA 9.7.3.13); -0 -> -0, negative -> NaN."""
    return _arith("sqrt", typ, [a], rnd, ftz, sat)


def rcp(a, typ, rnd="rn", ftz=False):
    """rcp.rnd.typ = 1/a correctly rounded (PTX ISA 9.7.3.9; not rcp.approx)."""
    f = fmt(typ)
    one = np.full(np.shape(a), (f.bias << f.mbits) << f.shift, f.storage)
    return _arith("div", typ, [one, a], rnd, ftz, False)


# ---------------------------------------------------------------- min / max / abs / neg / copysign


def _minmax(a, b, typ, want_max, nan=False, xorsign_abs=False, ftz=False):
    if typ not in _ARITH:
        raise ValueError(f"min/max: type .{typ} not supported")
    f = FORMATS[typ]
    _check_ftz(ftz, f, "min/max")
    a, b = np.broadcast_arrays(_bits(a, f), _bits(b, f))
    if ftz:
        a, b = _ftz(a, f), _ftz(b, f)
    sbit = f.storage(1 << (f.width - 1))
    xs = (a ^ b) & sbit
    if xorsign_abs:
        a, b = a & ~sbit, b & ~sbit
    va, vb = to_f64(a, typ), to_f64(b, typ)
    na, nb = np.isnan(va), np.isnan(vb)
    if want_max:
        pick_a = (va > vb) | ((va == vb) & ~np.signbit(va))
    else:
        pick_a = (va < vb) | ((va == vb) & np.signbit(va))
    out = np.where(pick_a, a, b)
    canon = f.storage(_special(f, "nan"))
    if typ == "f64":          # f64 keeps NaN payloads (H200): both NaN -> the larger quieted payload
        qa, qb = a | f.storage(1 << 51), b | f.storage(1 << 51)
        m = f.storage((1 << 52) - 1)
        canon = np.where((qb & m) > (qa & m), qb, qa)
    if nan:
        out = np.where(na | nb, canon, out)
    else:
        out = np.where(na & ~nb, b, np.where(nb & ~na, a, out))
        out = np.where(na & nb, canon, out)
    if xorsign_abs:
        isnan = np.isnan(to_f64(out, typ))
        out = np.where(isnan, out, out | xs)
    return out.astype(f.storage)


def fmin(a, b, typ, nan=False, xorsign_abs=False, ftz=False):
    """min{.ftz}{.NaN}{.xorsign.abs}.typ (PTX ISA 9.7.3.10)."""
    return _minmax(a, b, typ, False, nan, xorsign_abs, ftz)


def fmax(a, b, typ, nan=False, xorsign_abs=False, ftz=False):
    """max{.ftz}{.NaN}{.xorsign.abs}.typ (PTX ISA 9.7.3.11)."""
    return _minmax(a, b, typ, True, nan, xorsign_abs, ftz)


def abs_(a, typ, ftz=False):
    """abs{.ftz}.typ: clears the sign bit (a NaN: see _abs_neg_nan)."""
    f = fmt(typ)
    _check_ftz(ftz, f, "abs")
    b = _bits(a, f)
    if ftz:
        b = _ftz(b, f)
    out = b & f.storage((1 << (f.width - 1)) - 1)
    return _abs_neg_nan(out, b, f)


def _abs_neg_nan(out, b, f):
    """abs/neg of a NaN (H200 recordings): f32, f16 and bf16 give the canonical NaN; f64 returns
    its operand unchanged (neg.f64 does not flip a NaN's sign; abs.f64 measured on +NaN only)."""
    isnan = np.isnan(to_f64(b, f.name))
    keep = b if f.name == "f64" else np.full(b.shape, f.storage(_special(f, "nan")))
    return np.where(isnan, keep, out).astype(f.storage)


def neg(a, typ, ftz=False):
    """neg{.ftz}.typ: flips the sign bit (a NaN: see _abs_neg_nan)."""
    f = fmt(typ)
    _check_ftz(ftz, f, "neg")
    b = _bits(a, f)
    if ftz:
        b = _ftz(b, f)
    return _abs_neg_nan(b ^ f.storage(1 << (f.width - 1)), b, f)


def copysign(a, b, typ):
    """copysign.typ d, a, b: b's magnitude with a's sign (PTX ISA 9.7.3.3)."""
    f = fmt(typ)
    s = f.storage(1 << (f.width - 1))
    return ((_bits(b, f) & ~s) | (_bits(a, f) & s)).astype(f.storage)


def testp(a, typ, op):
    """testp.op.typ -> bool array (PTX ISA 9.7.3.2)."""
    f = fmt(typ)
    neg_, mag = _fields(_bits(a, f), f)
    isnan, isinf = _classify(mag, f)
    sub_ = (mag != 0) & (mag < _U64(1 << f.mbits))
    zero = mag == 0
    ops = {"finite": ~isnan & ~isinf, "infinite": isinf, "number": ~isnan, "notanumber": isnan,
           "normal": ~isnan & ~isinf & ~sub_ & ~zero, "subnormal": sub_}
    if op not in ops:
        raise ValueError(f"testp.{op}: PTX testp operations are {', '.join(ops)}")
    return ops[op]


_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
        "gt": np.greater, "ge": np.greater_equal}


def setp(a, b, typ, cmp, ftz=False):
    """The comparison of setp.cmp{.ftz}.typ as a bool array (PTX ISA 9.7.3 / table 'Floating-point
    comparison operators'): ordered forms false with a NaN operand, 'u' forms true; num / nan."""
    f = fmt(typ)
    _check_ftz(ftz, f, "setp")
    a, b = _bits(a, f), _bits(b, f)
    if ftz:
        a, b = _ftz(a, f), _ftz(b, f)
    va, vb = to_f64(a, typ), to_f64(b, typ)
    unord = np.isnan(va) | np.isnan(vb)
    if cmp == "num":
        return ~unord
    if cmp == "nan":
        return unord
    base, u = (cmp[:-1], True) if cmp.endswith("u") and cmp[:-1] in _CMP else (cmp, False)
    if base not in _CMP:
        raise ValueError(f"setp.{cmp}: not a float comparison (eq ne lt le gt ge, their u forms, num, nan)")
    with np.errstate(invalid="ignore"):
        r = _CMP[base](va, vb)
    if base == "ne" and not u:
        r = r & ~unord
    return np.where(unord, u, r)
