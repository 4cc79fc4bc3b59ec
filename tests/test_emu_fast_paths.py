"""The emulator's fast paths give the bits of its exact paths (bwlab.hw.floats) on inputs chosen to part them."""
import numpy as np

from bwlab.emu.isa.float import _fma_f32_rn
from bwlab.hw import floats as hf


def _f32_bits(x):
    return np.asarray(x, np.float32).view(np.uint32)


def test_fma_f32_rn_fast_path_equals_the_exact_one():
    rng = np.random.default_rng(0)
    sets = []
    # random bit patterns (NaNs, infinities, subnormals included)
    sets += [tuple(rng.integers(0, 2**32, 32, dtype=np.uint64).astype(np.uint32) for _ in range(3)) for _ in range(300)]
    # a*b + c with close exponents: exact f64 sums that sit on f32 midpoints (the fast path's new case)
    for _ in range(300):
        a = rng.random(32, dtype=np.float32) * 2 - 1
        b = np.full(32, rng.choice([1.0, 2.0, 0.5, 3.0, -1.5]), np.float32)
        c = rng.random(32, dtype=np.float32) * 2 - 1
        sets.append((_f32_bits(a), _f32_bits(b), _f32_bits(c)))
    # far-apart exponents (the f64 sum rounds: double rounding possible), cancellation, exact zeros of either sign
    for _ in range(300):
        a = (rng.standard_normal(32) * np.exp2(rng.integers(-60, 60, 32))).astype(np.float32)
        b = (rng.standard_normal(32) * np.exp2(rng.integers(-60, 60, 32))).astype(np.float32)
        c = (rng.standard_normal(32) * np.exp2(rng.integers(-140, 100, 32))).astype(np.float32)
        k = rng.random(32) < 0.2
        c[k] = -(a[k].astype(np.float64) * b[k]).astype(np.float32)
        z = rng.random(32) < 0.1
        a[z] = np.copysign(0.0, rng.standard_normal(z.sum()))
        c[z] = np.copysign(0.0, rng.standard_normal(z.sum()))
        sets.append((_f32_bits(a), _f32_bits(b), _f32_bits(c)))
    # double rounding on purpose: a*b = 2^-24 - 2^-60 exactly, c = 1 + 2^-23: the f64 sum drops 2^-60 and lands on
    # the f32 midpoint 1 + 2^-23 + 2^-24, which ties to even (1 + 2^-22); the exact value rounds to 1 + 2^-23
    a = np.full(32, 2.0 ** -24 * (1 + 2.0 ** -18), np.float32)
    b = np.full(32, 1 - 2.0 ** -18, np.float32)
    c = np.full(32, 1 + 2.0 ** -23, np.float32)
    c[::2] = 1.0 + 2.0 ** -22          # some lanes on an exact f64 midpoint (fast), the others not
    sets.append((_f32_bits(a), _f32_bits(b), _f32_bits(c)))
    with np.errstate(all="ignore"):
        assert _fma_f32_rn(*sets[-1])[1] == _f32_bits(np.float32(1 + 2.0 ** -23))
    for a, b, c in sets:
        want = np.asarray(hf.fma(a, b, c, "f32"), np.uint64)
        with np.errstate(all="ignore"):      # as inside a launch
            got = np.asarray(_fma_f32_rn(a, b, c), np.uint64)
        assert np.array_equal(got, want), (a, b, c)


def test_shl_shr_native_paths_equal_hw_ints():
    from bwlab.emu.isa import logic
    from bwlab.emu.values import from_bits
    from bwlab.hw import ints as hi
    rng = np.random.default_rng(1)
    for ty, dt in (("b32", np.uint32), ("u32", np.uint32), ("s32", np.int32), ("b64", np.uint64),
                   ("u64", np.uint64), ("s64", np.int64)):
        w = np.dtype(dt).itemsize * 8
        for counts in (rng.integers(0, w, 32), rng.integers(0, 2 * w + 3, 32), np.full(32, w - 1), np.zeros(32)):
            a = from_bits(rng.integers(0, 2**63, 32, dtype=np.uint64) * 2 + rng.integers(0, 2, 32, dtype=np.uint64), ty)
            b = counts.astype(np.uint32)
            for name, ref in (("shl", hi.shl), ("shr", hi.shr)):
                if name == "shl" and ty[0] != "b":
                    continue
                if name == "shr" and ty[0] == "b" and ty != "b32" and ty != "b64":
                    continue
                got = getattr(logic, name)(ty, [ty], ty)(a, b)
                want = from_bits(ref(a, b, ty).astype(np.uint64), ty)
                assert got.dtype == want.dtype and np.array_equal(got, want), (name, ty, counts)


def test_register_writes_of_signed_values_equal_to_bits():
    from bwlab.emu.isa.operands import _bits_converter
    from bwlab.emu.values import to_bits
    rng = np.random.default_rng(2)
    for ty, dt in (("s32", np.int32), ("s64", np.int64)):
        v = rng.integers(np.iinfo(dt).min, np.iinfo(dt).max, 32, dtype=dt, endpoint=True)
        v[:3] = [np.iinfo(dt).min, -1, 0]
        for width in (32, 64):
            if width < np.dtype(dt).itemsize * 8:
                continue
            got = np.zeros(32, np.uint64)
            got[:] = _bits_converter(ty, width)(v)
            assert np.array_equal(got, to_bits(v, ty, width)), (ty, width)


def test_mul_wide_native_equals_hw_ints():
    from bwlab.emu.isa import integer
    from bwlab.emu.values import from_bits
    from bwlab.hw import ints as hi
    rng = np.random.default_rng(3)
    for ty, out in (("s32", "s64"), ("u32", "u64"), ("s16", "s32"), ("u16", "u32")):
        w = int(ty[1:])
        edges = np.array([0, 1, (1 << w) - 1, 1 << (w - 1), (1 << (w - 1)) - 1], np.uint64)
        for _ in range(20):
            bits = np.concatenate([edges, rng.integers(0, 1 << w, 32 - edges.size, dtype=np.uint64)])
            a, b = from_bits(bits, ty), from_bits(rng.permutation(bits), ty)
            got = integer.mul(ty, ["wide", ty], out)(a, b)
            want = integer._t(hi.mul(a, b, ty, "wide"), out)
            assert got.dtype == want.dtype and np.array_equal(got, want), ty
