"""bwlab.hw.ints against Python's unbounded integers, element by element, following the ISA's
pseudocode (PTX ISA 9.7.1, 9.7.2, 9.7.8, 9.7.9.20, 9.7.15) written out here independently."""
from __future__ import annotations

import numpy as np
import pytest

from bwlab.hw import ints as I

RNG = np.random.default_rng(2929)
UDT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def edge(w, n=200):
    """Raw w-bit patterns: the edges (0, 1, -1, INT_MIN, INT_MAX, ...) and random ones."""
    m = (1 << w) - 1
    sp = [0, 1, 2, 3, m, m - 1, 1 << (w - 1), (1 << (w - 1)) - 1, (1 << (w - 1)) + 1, 7, 0x55 & m, 1 << (w // 2)]
    r = [int(x) & m for x in RNG.integers(0, 2 ** 63, n, dtype=np.uint64)]
    r += [int(x) & m for x in RNG.integers(0, 2 ** 63, n, dtype=np.uint64) << np.uint64(1)]
    return np.array(sp + r, dtype=UDT[w])


def sv(x, w):
    x = int(x) & ((1 << w) - 1)
    return x - (1 << w) if x >> (w - 1) else x


def ok(got, want, w):
    return [int(g) for g in got] == [int(v) & ((1 << w) - 1) for v in want]


def pairs(w, n=200):
    x = edge(w, n)
    return RNG.permutation(x), RNG.permutation(x), RNG.permutation(x)


@pytest.mark.parametrize("typ", ["s16", "u16", "s32", "u32", "s64", "u64"])
def test_add_sub_mul_mad(typ):
    s, w = typ[0] == "s", int(typ[1:])
    a, b, c = pairs(w)
    v = (lambda x: sv(x, w)) if s else int
    assert ok(I.add(a, b, typ), [v(x) + v(y) for x, y in zip(a, b)], w)
    assert ok(I.sub(a, b, typ), [v(x) - v(y) for x, y in zip(a, b)], w)
    assert ok(I.mul(a, b, typ, "lo"), [v(x) * v(y) for x, y in zip(a, b)], w)
    assert ok(I.mul(a, b, typ, "hi"), [(v(x) * v(y)) >> w for x, y in zip(a, b)], w)
    assert ok(I.mad(a, b, c, typ, "hi"), [((v(x) * v(y)) >> w) + v(z) for x, y, z in zip(a, b, c)], w)
    if w <= 32:
        assert ok(I.mul(a, b, typ, "wide"), [v(x) * v(y) for x, y in zip(a, b)], 2 * w)
        c2 = RNG.permutation(edge(2 * w))[:len(a)]            # .wide: c and d are 2w bits wide
        v2 = (lambda x: sv(x, 2 * w)) if s else int
        assert ok(I.mad(a, b, c2, typ, "wide"), [v(x) * v(y) + v2(z) for x, y, z in zip(a, b, c2)], 2 * w)


def test_saturating_s32():
    a, b, c = pairs(32)
    cl = lambda x: min(max(x, -2 ** 31), 2 ** 31 - 1)
    assert ok(I.add(a, b, "s32", sat=True), [cl(sv(x, 32) + sv(y, 32)) for x, y in zip(a, b)], 32)
    assert ok(I.sub(a, b, "s32", sat=True), [cl(sv(x, 32) - sv(y, 32)) for x, y in zip(a, b)], 32)
    assert ok(I.mad(a, b, c, "s32", "hi", sat=True),
              [cl(((sv(x, 32) * sv(y, 32)) >> 32) + sv(z, 32)) for x, y, z in zip(a, b, c)], 32)
    with pytest.raises(ValueError, match="s32"):
        I.add(a, b, "u32", sat=True)


@pytest.mark.parametrize("w", [32, 64])
def test_carry_chains(w):
    a, b, c = pairs(w)
    cin = RNG.integers(0, 2, len(a)).astype(bool)
    d, cf = I.addc(a, b, cin, f"u{w}")
    full = [int(x) + int(y) + int(k) for x, y, k in zip(a, b, cin)]
    assert ok(d, full, w) and list(cf) == [f >> w == 1 for f in full]
    d, bf = I.subc(a, b, cin, f"u{w}")
    full = [int(x) - int(y) - int(k) for x, y, k in zip(a, b, cin)]
    assert ok(d, full, w) and list(bf) == [f < 0 for f in full]
    d, cf = I.mad_cc(a, b, c, f"u{w}", "hi", cin)
    full = [((int(x) * int(y)) >> w) + int(z) + int(k) for x, y, z, k in zip(a, b, c, cin)]
    assert ok(d, full, w) and list(cf) == [f >> w == 1 for f in full]


def test_128_bit_chains():
    vals = [0, 1, -1, 2 ** 127 - 1, -2 ** 127, 3 ** 80, -(5 ** 50), 2 ** 64 - 1, 2 ** 64]
    vals += [int(x) * int(y) for x, y in zip(RNG.integers(-2 ** 62, 2 ** 62, 40), RNG.integers(0, 2 ** 62, 40))]
    a, b = vals, list(reversed(vals))
    A, B = I.u128_split(a), I.u128_split(b)
    M = 1 << 128
    assert I.u128_join(*I.add128(A, B)) == [(x + y) % M for x, y in zip(a, b)]
    assert I.u128_join(*I.mul128(A, B)) == [(x * y) % M for x, y in zip(a, b)]
    assert I.u128_join(*I.add128(A, B), signed=True)[0] == vals[0] + vals[-1]


@pytest.mark.parametrize("typ", ["s16", "u16", "s32", "u32", "s64", "u64"])
def test_div_rem(typ):
    s, w = typ[0] == "s", int(typ[1:])
    a, b, _ = pairs(w)
    b[:5] = 0
    b[5:8] = (1 << w) - 1                        # -1 for signed
    a[5] = 1 << (w - 1)                          # INT_MIN / -1
    m = (1 << w) - 1
    qs, rs = [], []
    for x, y in zip(a, b):
        if s:
            x, y = sv(x, w), sv(y, w)
        if y == 0:                               # an H200's answer: all ones for both
            q = r = m
        else:
            q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
            r = x - q * y
        qs.append(q)
        rs.append(r)
    assert ok(I.div(a, b, typ), qs, w)
    assert ok(I.rem(a, b, typ), rs, w)
    if typ == "s64":
        assert I.to_signed(I.div(np.array([1 << 63], np.uint64), np.array([3], np.uint64), "s64"), 64)[0] \
            == -3074457345618258602


def test_min_max_abs_neg_sad_mul24():
    for typ in ("s32", "u32", "s64", "u64", "s16"):
        s, w = typ[0] == "s", int(typ[1:])
        a, b, c = pairs(w, 60)
        v = (lambda x: sv(x, w)) if s else int
        assert ok(I.imin(a, b, typ), [min(v(x), v(y)) for x, y in zip(a, b)], w)
        assert ok(I.imax(a, b, typ), [max(v(x), v(y)) for x, y in zip(a, b)], w)
        assert ok(I.sad(a, b, c, typ), [abs(v(x) - v(y)) + v(z) for x, y, z in zip(a, b, c)], w)
        if s:
            assert ok(I.abs_(a, typ), [abs(v(x)) for x in a], w)
            assert ok(I.neg(a, typ), [-v(x) for x in a], w)
    a, b, c = pairs(32)
    assert ok(I.imax(a, b, "s32", relu=True), [max(sv(x, 32), sv(y, 32), 0) for x, y in zip(a, b)], 32)
    s24 = lambda x: sv(int(x) & 0xFFFFFF, 24)
    assert ok(I.mul24(a, b, "s32", "lo"), [s24(x) * s24(y) for x, y in zip(a, b)], 32)
    assert ok(I.mul24(a, b, "s32", "hi"), [(s24(x) * s24(y)) >> 16 for x, y in zip(a, b)], 32)
    assert ok(I.mul24(a, b, "u32", "hi"), [((int(x) & 0xFFFFFF) * (int(y) & 0xFFFFFF)) >> 16 for x, y in zip(a, b)], 32)
    assert ok(I.mad24(a, b, c, "u32", "lo"), [(int(x) & 0xFFFFFF) * (int(y) & 0xFFFFFF) + int(z) for x, y, z in zip(a, b, c)], 32)


@pytest.mark.parametrize("typ", ["b32", "b64", "s32", "s64"])
def test_bit_counts(typ):
    w = int(typ[1:])
    a = edge(w)
    assert ok(I.clz(a, typ), [w - int(x).bit_length() for x in a], 32)
    assert ok(I.popc(a, typ), [bin(int(x)).count("1") for x in a], 32)
    assert ok(I.brev(a, typ), [int(format(int(x), f"0{w}b")[::-1], 2) for x in a], w)
    signed = typ[0] == "s"
    for shiftamt in (False, True):
        want = []
        for x in a:
            y = sv(x, w) if signed else int(x)
            y = ~y if y < 0 else y
            pos = y.bit_length() - 1
            want.append(0xFFFFFFFF if pos < 0 else (w - 1 - pos if shiftamt else pos))
        assert ok(I.bfind(a, typ if signed else "u" + typ[1:], shiftamt), want, 32)


@pytest.mark.parametrize("typ", ["u32", "s32", "u64", "s64"])
def test_bfe_bfi(typ):
    w = int(typ[1:])
    s = typ[0] == "s"
    a, b, _ = pairs(w, 100)
    n = len(a)
    pos = np.concatenate([RNG.integers(0, w + 8, n - 4), [0, w - 1, 255, 300]]).astype(np.uint32)
    ln = np.concatenate([RNG.integers(0, w + 8, n - 4), [0, w, 1, 0x1FF]]).astype(np.uint32)
    want_e, want_i = [], []
    for x, y, p, l in zip(a, b, pos, ln):
        p, l, x, y = int(p) & 0xFF, int(l) & 0xFF, int(x), int(y)
        sbit = 0 if (not s or l == 0) else (x >> min(p + l - 1, w - 1)) & 1
        d = 0
        for i in range(w):
            bit = ((x >> (p + i)) & 1) if (i < l and p + i <= w - 1) else sbit
            d |= bit << i
        want_e.append(d)
        f = y
        for i in range(l):
            if p + i > w - 1:
                break
            f = (f & ~(1 << (p + i))) | (((x >> i) & 1) << (p + i))
        want_i.append(f)
    assert ok(I.bfe(a, pos, ln, typ), want_e, w)
    assert ok(I.bfi(a, b, pos, ln, "b" + str(w)), want_i, w)


def test_prmt_every_mode():
    a, b, c = pairs(32, 100)
    def byte(x, y, i):
        return ((int(y) << 32 | int(x)) >> (8 * i)) & 0xFF
    want = []
    for x, y, z in zip(a, b, c):
        d = 0
        for k in range(4):
            nib = (int(z) >> (4 * k)) & 0xF
            v = byte(x, y, nib & 7)
            if nib & 8:
                v = 0xFF if v & 0x80 else 0
            d |= v << (8 * k)
        want.append(d)
    assert ok(I.prmt(a, b, c), want, 32)
    # the ISA's mode table, written as d.b3 d.b2 d.b1 d.b0 for c[1:0] = 0..3
    table = {"f4e": ["3210", "4321", "5432", "6543"], "b4e": ["5670", "6701", "7012", "0123"],
             "rc8": ["0000", "1111", "2222", "3333"], "ecl": ["3210", "3211", "3222", "3333"],
             "ecr": ["0000", "1110", "2210", "3210"], "rc16": ["1010", "3232", "1010", "3232"]}
    for mode, rows in table.items():
        want = []
        for x, y, z in zip(a, b, c):
            row = rows[int(z) & 3]
            want.append(sum(byte(x, y, int(ch)) << (8 * (3 - j)) for j, ch in enumerate(row)))
        assert ok(I.prmt(a, b, c, mode), want, 32), mode


def test_dp4a_dp2a():
    a, b, c = pairs(32, 100)
    lanes = lambda x, n, wd, sg: [(sv((int(x) >> (wd * i)), wd) if sg else (int(x) >> (wd * i)) & ((1 << wd) - 1))
                                  for i in range(n)]
    for at in ("u32", "s32"):
        for bt in ("u32", "s32"):
            want = [int(z) + sum(p * q for p, q in zip(lanes(x, 4, 8, at == "s32"), lanes(y, 4, 8, bt == "s32")))
                    for x, y, z in zip(a, b, c)]
            assert ok(I.dp4a(a, b, c, at, bt), want, 32)
            for part, k in (("lo", 0), ("hi", 2)):
                want = [int(z) + lanes(x, 2, 16, at == "s32")[0] * lanes(y, 4, 8, bt == "s32")[k]
                        + lanes(x, 2, 16, at == "s32")[1] * lanes(y, 4, 8, bt == "s32")[k + 1]
                        for x, y, z in zip(a, b, c)]
                assert ok(I.dp2a(a, b, c, at, bt, part), want, 32)


def test_shifts_masks_extension():
    a, b, _ = pairs(32, 100)
    cnt = np.concatenate([RNG.integers(0, 70, len(a) - 3), [32, 0xFFFFFFFF, 31]]).astype(np.uint32)
    assert ok(I.shl(a, cnt, "b32"), [int(x) << int(n) if n < 32 else 0 for x, n in zip(a, cnt)], 32)
    assert ok(I.shr(a, cnt, "u32"), [int(x) >> int(n) if n < 32 else 0 for x, n in zip(a, cnt)], 32)
    assert ok(I.shr(a, cnt, "s32"), [sv(x, 32) >> min(int(n), 31) for x, n in zip(a, cnt)], 32)
    a64 = edge(64, 50)
    c64 = np.resize(cnt, len(a64))
    assert ok(I.shr(a64, c64, "s64"), [sv(x, 64) >> min(int(n), 63) for x, n in zip(a64, c64)], 64)
    assert ok(I.shl(a64, c64, "b64"), [int(x) << int(n) if n < 64 else 0 for x, n in zip(a64, c64)], 64)
    for mode in ("clamp", "wrap"):
        f = (lambda n: min(int(n), 32)) if mode == "clamp" else (lambda n: int(n) & 31)
        full = [(int(y) << 32 | int(x)) for x, y in zip(a, b)]
        assert ok(I.shf(a, b, cnt, "l", mode), [(v << f(n)) >> 32 for v, n in zip(full, cnt)], 32)
        assert ok(I.shf(a, b, cnt, "r", mode), [v >> f(n) for v, n in zip(full, cnt)], 32)
        pos = np.resize(cnt[::-1], len(cnt))
        assert ok(I.bmsk(pos, cnt, mode), [(((1 << f(n)) - 1) << f(p)) if f(p) < 32 else 0 for p, n in zip(pos, cnt)], 32)
        for typ in ("s32", "u32"):
            want = []
            for x, n in zip(a, cnt):
                k = f(n)
                if k >= 32:
                    want.append(int(x))
                elif k == 0:
                    want.append(0)
                else:
                    v = int(x) & ((1 << k) - 1)
                    want.append(sv(v, k) if typ == "s32" else v)
            assert ok(I.szext(a, cnt, typ, mode), want, 32), (typ, mode)


def test_lop3_all_luts():
    a, b, c = pairs(32, 20)
    for lut in range(256):
        want = []
        for x, y, z in zip(a, b, c):
            d = 0
            for i in range(32):
                idx = (((int(x) >> i) & 1) << 2) | (((int(y) >> i) & 1) << 1) | ((int(z) >> i) & 1)
                d |= ((lut >> idx) & 1) << i
            want.append(d)
        assert ok(I.lop3(a, b, c, lut), want, 32), lut


@pytest.mark.parametrize("lanes", [2, 4])
def test_video_simd(lanes):
    a, b, c = pairs(32, 60)
    wd = 32 // lanes
    get = lambda x, i, sg: sv(int(x) >> (wd * i), wd) if sg else (int(x) >> (wd * i)) & ((1 << wd) - 1)
    ops = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "avrg": lambda x, y: (x + y + 1) >> 1,
           "absdiff": lambda x, y: abs(x - y), "min": min, "max": max}
    for op, fn in ops.items():
        for sg in (False, True):
            t = "s32" if sg else "u32"
            for sat in (False, True):
                lo, hi = (-(1 << (wd - 1)), (1 << (wd - 1)) - 1) if sg else (0, (1 << wd) - 1)
                want = []
                for x, y in zip(a, b):
                    d = 0
                    for i in range(lanes):
                        r = fn(get(x, i, sg), get(y, i, sg))
                        if sat:
                            r = min(max(r, lo), hi)
                        d |= (r & ((1 << wd) - 1)) << (wd * i)
                    want.append(d)
                assert ok(I.vop(op, lanes, a, b, c, t, t, t, sat=sat), want, 32), (op, t, sat)
            want = [int(z) + sum(fn(get(x, i, sg), get(y, i, sg)) for i in range(lanes)) for x, y, z in zip(a, b, c)]
            assert ok(I.vop(op, lanes, a, b, c, t, t, t, accumulate=True), want, 32), (op, "add")
    # merge: lanes outside the mask keep c's
    got = I.vop("add", lanes, a, b, c, mask=1)
    want = [((int(z) >> wd) << wd) | ((get(x, 0, False) + get(y, 0, False)) & ((1 << wd) - 1)) for x, y, z in zip(a, b, c)]
    assert ok(got, want, 32)
    got = I.vop("set", lanes, a, b, c, cmp="lt")
    want = [sum(int(get(x, i, False) < get(y, i, False)) << (wd * i) for i in range(lanes)) for x, y in zip(a, b)]
    assert ok(got, want, 32)


def test_simd16_and_errors():
    a, b, _ = pairs(32, 50)
    h = lambda x, i: sv(int(x) >> (16 * i), 16)
    want = [sum(((max(h(x, i), h(y, i), 0)) & 0xFFFF) << (16 * i) for i in range(2)) for x, y in zip(a, b)]
    assert ok(I.simd16("max", a, b, "s16", relu=True), want, 32)
    want = [sum(((h(x, i) + h(y, i)) & 0xFFFF) << (16 * i) for i in range(2)) for x, y in zip(a, b)]
    assert ok(I.simd16("add", a, b, "u16"), want, 32)
    with pytest.raises(ValueError, match="integer type"):
        I.add(a, b, "f32")
    with pytest.raises(ValueError, match="32- or 64-bit"):
        I.add_cc(a, b, "u16")
    with pytest.raises(ValueError, match="immLut"):
        I.lop3(a, a, a, 256)
    # no Python OverflowError on 64-bit fields with huge positions (the emulator's old bfe.s64 crash)
    big = np.array([0xFFFFFFFFFFFFFFFF], np.uint64)
    assert I.bfe(big, np.array([60], np.uint32), np.array([200], np.uint32), "s64")[0] == 0xFFFFFFFFFFFFFFFF
    assert I.bfi(big, np.array([0], np.uint64), np.array([63], np.uint32), np.array([64], np.uint32), "b64")[0] == 1 << 63


# ---------------------------------------------------------------------------------------------------
# GPU truth: the corpus recordings (an H200 ran these kernels; `python -m bwlab.validate emu-corpus`).
# Each listed kernel's outputs are recomputed here from its inputs with this module's functions, the
# PTX instruction each output comes from spelled out (checked against NVRTC's PTX for sm_90a); None
# marks an output made by a longer sequence (roundf, __hdiv, fdimf...), left to the emulator's corpus
# test. Skipped where the corpus (bwlab/checks/emu_corpus/ and tests/data/emu_corpus) is absent;
# BWLAB_CORPUS_ROOT points at another checkout that has it.

from corpus_truth import _check_against_gpu, _corpus, low, sext, u16, u32, u64  # noqa: E402,F401  (the H200's truth)

_GPU = {}


def _gpu_kernel(name):
    def deco(fn):
        _GPU[name] = fn
        return fn
    return deco


# ------------------------------------------------------------ integer / logic
@_gpu_kernel("int_add_sub_s32")
def _k_int_add_sub_s32(a, b):
    return [I.add(a, b, "u32"), I.sub(a, b, "u32")]


@_gpu_kernel("int_mul_s32")
def _k_int_mul_s32(a, b):
    return [I.mul(a, b, "u32"), I.mul(a, b, "s32", "hi"), I.mul(a, b, "u32", "hi")]


@_gpu_kernel("int_mul_wide")
def _k_int_mul_wide(a, b):
    return [I.mul(a, b, "s32", "wide"), I.mul(a, b, "u32", "wide")]


@_gpu_kernel("int_mad_s32")
def _k_int_mad_s32(a, b, c):
    return [I.mad(a, b, c, "u32")]


@_gpu_kernel("int_div_edge_asm")
def _k_int_div_edge_asm(a, b):
    return [I.div(a, b, "s32"), I.rem(a, b, "s32"), I.div(a, b, "u32"), I.rem(a, b, "u32")]


@_gpu_kernel("int_div_rem_u64")
def _k_int_div_rem_u64(a, b):
    z = u64(b) == 0
    return [np.where(z, np.uint64(7), I.div(a, b, "u64")), np.where(z, np.uint64(9), I.rem(a, b, "u64"))]


@_gpu_kernel("int_div_const")
def _k_int_div_const(a):
    A = u64(a)
    n = A.shape
    k = lambda v, w: np.full(n, v % (1 << w), {32: np.uint32, 64: np.uint64}[w])  # noqa
    lo = low(A, 32).astype(np.uint32)
    return [I.div(A, k(3, 64), "s64"), I.rem(A, k(3, 64), "s64"), I.div(A, k(10, 64), "s64"),
            sext(I.div(lo, k(7, 32), "s32"), 32), sext(I.rem(lo, k(-5, 32), "s32"), 32),
            I.div(A, k(1000000007, 64), "u64")]


@_gpu_kernel("int_mul_s64")
def _k_int_mul_s64(a, b):
    A, B = u64(a), u64(b)
    return [I.mul(A, B, "u64"), I.mul(A, B, "s64", "hi"), I.mul(A, B, "u64", "hi"), I.mad(A, B, np.roll(B, -1), "u64")]


@_gpu_kernel("int_add_sub_s64")
def _k_int_add_sub_s64(a, b):
    A, B = u64(a), u64(b)
    return [I.add(A, B, "u64"), I.sub(A, B, "u64"), I.neg(A, "s64")]


@_gpu_kernel("int_mul24")
def _k_int_mul24(a, b):
    return [I.mul24(a, b, "s32"), I.mul24(a, b, "u32"), I.mul24(a, b, "s32", "hi"), I.mul24(a, b, "u32", "hi")]


@_gpu_kernel("int_sad")
def _k_int_sad(a, b, c):
    return [I.sad(a, b, c, "s32"), I.sad(a, b, c, "u32")]


@_gpu_kernel("int_bitcount32")
def _k_int_bitcount32(a):
    x = u32(a)
    ffs = np.where(x == 0, 0, I.popc((x & (~x + np.uint32(1))) - np.uint32(1), "b32") + 1).astype(np.uint32)
    return [I.clz(x, "b32"), ffs, I.popc(x, "b32"), I.brev(x, "b32")]


@_gpu_kernel("int_bitcount64")
def _k_int_bitcount64(a):
    x = u64(a)
    ffs = np.where(x == 0, 0, I.popc((x & (~x + np.uint64(1))) - np.uint64(1), "b64") + 1).astype(np.uint64)
    return [I.clz(x, "b64").astype(np.uint64), ffs, I.popc(x, "b64").astype(np.uint64), I.brev(x, "b64")]


@_gpu_kernel("int_bfind")
def _k_int_bfind(a):
    x = u64(a)
    lo = low(x, 32).astype(np.uint32)
    return [I.bfind(lo, "u32"), I.bfind(lo, "s32"), I.bfind(lo, "u32", True), I.bfind(x, "u64"),
            I.bfind(x, "s64"), I.bfind(x, "s64", True)]


@_gpu_kernel("int_bfe32")
def _k_int_bfe32(a, pl):
    pos, ln = pl & np.uint32(0xFF), (pl >> np.uint32(8)) & np.uint32(0xFF)
    return [I.bfe(a, pos, ln, "u32"), I.bfe(a, pos, ln, "s32")]


@_gpu_kernel("int_bfe64")
def _k_int_bfe64(a, pl):
    pos, ln = pl & np.uint32(0xFF), (pl >> np.uint32(8)) & np.uint32(0xFF)
    return [I.bfe(a, pos, ln, "u64"), I.bfe(a, pos, ln, "s64")]


@_gpu_kernel("int_bfi32")
def _k_int_bfi32(a, b, pl):
    return [I.bfi(a, b, pl & np.uint32(0xFF), (pl >> np.uint32(8)) & np.uint32(0xFF), "b32")]


@_gpu_kernel("int_bfi64")
def _k_int_bfi64(a, b, pl):
    return [I.bfi(a, b, pl & np.uint32(0xFF), (pl >> np.uint32(8)) & np.uint32(0xFF), "b64")]


@_gpu_kernel("int_byte_perm")
def _k_int_byte_perm(a, b, s):
    return [I.prmt(a, b, s & np.uint32(0x7777))]  # __byte_perm: NVRTC masks the selector with 0x7777


@_gpu_kernel("int_prmt_modes")
def _k_int_prmt_modes(a, b, s):
    return [I.prmt(a, b, s, m) for m in ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16")]


@_gpu_kernel("int_dp4a_dp2a")
def _k_int_dp4a_dp2a(a, b, c):
    return [I.dp4a(a, b, c, "s32", "s32"), I.dp4a(a, b, c, "u32", "u32"), I.dp2a(a, b, c, "s32", "s32", "lo"),
            I.dp2a(a, b, c, "s32", "s32", "hi"), I.dp2a(a, b, c, "u32", "u32", "lo"), I.dp2a(a, b, c, "u32", "u32", "hi")]


@_gpu_kernel("int_add_sat")
def _k_int_add_sat(a, b):
    return [I.add(a, b, "s32", sat=True), I.sub(a, b, "s32", sat=True)]


@_gpu_kernel("int_simd_video")
def _k_int_simd_video(a, b):
    z = np.zeros_like(a)
    s, u = "s32", "u32"
    return [I.vop("add", 4, a, b, z), I.vop("sub", 4, a, b, z), I.vop("add", 4, a, b, z, s, s, s, sat=True),
            I.vop("sub", 4, a, b, z, u, u, u, sat=True), I.vop("absdiff", 4, a, b, z),
            I.vop("max", 4, a, b, z, s, s, s), I.vop("min", 4, a, b, z),
            I.vop("set", 4, a, b, z, cmp="gt") * np.uint32(0xFF), I.vop("avrg", 4, a, b, z),
            I.vop("add", 2, a, b, z), None, I.vop("set", 2, a, b, z, s, s, s, cmp="le")]


@_gpu_kernel("int_funnel")
def _k_int_funnel(a, b, s):
    return [I.shf(a, b, s, "l", "wrap"), I.shf(a, b, s, "r", "wrap"), I.shf(a, b, s, "l", "clamp"),
            I.shf(a, b, s, "r", "clamp")]


@_gpu_kernel("logic_shf_asm")
def _k_logic_shf_asm(a, b, s):
    return [I.shf(a, b, s, "l", "wrap"), I.shf(a, b, s, "r", "wrap"), I.shf(a, b, s, "l", "clamp"),
            I.shf(a, b, s, "r", "clamp")]


@_gpu_kernel("int_shift_wide")
def _k_int_shift_wide(a, s):
    x = u64(a)
    lo = low(x, 32).astype(np.uint32)
    return [I.shl(lo, s, "b32"), I.shr(lo, s, "u32"), I.shr(lo, s, "s32"), I.shl(x, s, "b64"),
            I.shr(x, s, "u64"), I.shr(x, s, "s64")]


@_gpu_kernel("int_min_max_abs")
def _k_int_min_max_abs(a, b):
    return [I.imin(a, b, "s32"), I.imax(a, b, "s32"), I.imin(a, b, "u32"), I.imax(a, b, "u32"), I.abs_(a, "s32"), None]


@_gpu_kernel("int_min_max_s64")
def _k_int_min_max_s64(a, b):
    A, B = u64(a), u64(b)
    return [I.imin(A, B, "s64"), I.imax(A, B, "s64"), I.imin(A, B, "u64"), I.imax(A, B, "u64"), I.abs_(A, "s64")]


@_gpu_kernel("logic_lop3_asm")
def _k_logic_lop3_asm(a, b, c):
    return [I.lop3(a, b, c, lut) for lut in (0x96, 0xE8, 0x1B, 0x00)]


@_gpu_kernel("logic_bmsk_szext")
def _k_logic_bmsk_szext(a, s):
    pos, ln = s & np.uint32(0xFF), (s >> np.uint32(8)) & np.uint32(0xFF)
    return [I.bmsk(pos, ln, "clamp"), I.bmsk(pos, ln, "wrap"), I.szext(a, ln, "s32", "clamp"),
            I.szext(a, ln, "u32", "wrap")]




@pytest.mark.parametrize("name", sorted(_GPU))
def test_matches_gpu_recordings(name):
    _check_against_gpu(name, _GPU[name])
