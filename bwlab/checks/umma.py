"""Stage 3 checks: the wgmma validation on a Hopper GPU and the benchmark of the tcgen05.mma model.

    python -m bwlab.validate wgmma [--seed S] [--no-exploratory] [--out FILE]
    python -m bwlab.bench umma_model [--repeat N] [--out FILE]

The validation runs every canonical layout x swizzle x f16/bf16 through wgmma (`WgmmaCase.run()`)
and compares D bit for bit with the model (`WgmmaCase.model()`), and the model with NumPy; then the
exploratory cases whose tiles start off their swizzle pattern, each compared with three readings of
the descriptor's base-offset field (the hypothesis models below, used only here).
"""
from __future__ import annotations

import statistics
import time

import numpy as np

from .. import device
from ..hw.swizzle import SWIZZLES, row_bytes
from ..umma import (CtaState, SmemDesc, UmmaCase, WgmmaCase, decode_smem_desc, descriptor_addresses,
                    elem_bytes, instr_k, operand_values, tcgen05_mma, wgmma_cases)
from ..umma.model import SMEM_BYTES
from ..util import round_up
from .common import EXIT_MISMATCH, EXIT_PASS, Command, NoSuitableGpu

__all__ = ["validate_wgmma_main", "bench_model", "bench_model_main", "hypothesis_model"]


# ------------------------------------------------------------------------------------------------
# Readings of the base-offset field, for the exploratory cases
# ------------------------------------------------------------------------------------------------

def _unswizzled(desc: SmemDesc, major: str, dtype: str, mn: int) -> np.ndarray:
    """Addresses a swizzled descriptor walks before the swizzle is applied."""
    w = row_bytes(desc.swizzle)
    eb = elem_bytes(dtype)
    i, j = np.meshgrid(np.arange(mn, dtype=np.int64), np.arange(instr_k(dtype), dtype=np.int64), indexing="ij")
    lbo, sbo = desc.leading_byte_offset, desc.stride_byte_offset
    if major == "K":
        off = (i % 8) * w + (i // 8) * sbo + j * eb
    else:
        b = i * eb
        off = (j % 8) * w + (j // 8) * sbo + (b // w) * lbo + b % w
    return desc.start_address + off


def hypothesis_model(case: WgmmaCase, rule: str) -> np.ndarray:
    """The model with an alternative reading of the descriptor base offset (for the exploratory
    cases): 'ignored' (the row is address bits 7-9 as they are), 'subtract' (bwlab's model: the row
    counts from the pattern start the base offset names), 'relative' (the row counts from the
    descriptor's start address plus the base offset)."""
    ad, bd = case.descriptors()
    img = np.zeros(SMEM_BYTES, np.uint8)
    raw = case.smem_image()
    img[:raw.size] = raw

    def read(desc_word, major, mn):
        desc = decode_smem_desc(desc_word, "sm90")
        if desc.swizzle == "none":
            addr = descriptor_addresses(desc, major, case.dtype, mn)
        else:
            plain = _unswizzled(desc, major, case.dtype, mn)
            mask = (1 << SWIZZLES[desc.swizzle].bits) - 1
            row = {"ignored": plain >> 7,
                   "subtract": (plain >> 7) - desc.base_offset,
                   "relative": ((plain - desc.start_address) >> 7) + desc.base_offset}[rule]
            addr = plain ^ ((row & mask) << 4)
        return operand_values(img.view(np.uint16)[addr // 2], case.dtype)

    d = case.values()[2].astype(np.float32) if case.accumulate else np.zeros((64, case.N), np.float32)
    for i, (a_w, b_w) in enumerate(zip(ad, bd)):
        a, b = read(a_w, case.a_major, 64), read(b_w, case.b_major, case.N)
        acc = d.astype(np.float64) if (i > 0 or case.accumulate) else 0.0
        d = (acc + a @ b.T).astype(np.float32)
    return d


# ------------------------------------------------------------------------------------------------
# python -m bwlab.validate wgmma
# ------------------------------------------------------------------------------------------------

def validate_wgmma_main(argv=None) -> int:
    """Every canonical layout x swizzle x f16/bf16 through wgmma on the H100, compared bit for bit
    with bwlab's model."""
    cmd = Command("validate wgmma", "Every canonical SMEM layout through wgmma on a Hopper GPU, "
                  "bit for bit against the model", stage="tma")
    cmd.add("--seed", type=int, default=0)
    cmd.add("--no-exploratory", action="store_true",
            help="skip the cases with tiles off their swizzle-span boundary")
    args, say = cmd.start(argv)
    info = device.gpu_info()
    if not info.has_wgmma:
        msg = "wgmma needs an sm_90a GPU (Hopper); nothing to validate here"
        say(msg)
        say.save(args.out)
        raise NoSuitableGpu(msg)
    from ..compile import load_module
    from ..umma.runner import launch_wgmma
    t0 = time.perf_counter()
    module = load_module("wgmma_sm90")
    say(f"compiled cuda_src/wgmma_sm90.cu for {device.native_arch()} in {time.perf_counter() - t0:.1f} s")
    regular, exploratory = wgmma_cases(args.seed)
    failures, bases = 0, set()
    say(f"{len(regular)} cases: D(hardware) vs D(model from SMEM bytes + SM90 descriptors), bit for bit; "
        "and D(model) vs NumPy D0 + A @ B^T")
    for case in regular:
        hw, base = launch_wgmma(case, module)
        bases.add(base)
        model = case.model()
        vs_hw = case.compare(model, hw, "H100")
        vs_ref = case.compare(case.reference(), model, "NumPy vs model")
        ok = vs_hw.ok and vs_ref.ok
        failures += not ok
        say(f"  {'ok  ' if ok else 'FAIL'} {case.label()}  hw!=model: {vs_hw.differing:5d}  "
            f"model!=numpy: {vs_ref.differing:5d}")
        if not vs_hw.ok:
            say("    " + str(vs_hw).replace("\n", "\n    "))
    say(f"regular cases: {len(regular) - failures}/{len(regular)} exact "
        f"(operand image at SMEM address {sorted(bases)})")
    if not args.no_exploratory:
        say("")
        say("exploratory: swizzled A tiles that start off their 256/512/1024-byte pattern boundary, with the "
            "descriptor base offset 0 and (start >> 7) & 7. Which reading of the base offset does the "
            "hardware follow? (bwlab's model: 'subtract')")
        tally = {"ignored": 0, "subtract": 0, "relative": 0}
        exp_fail = 0
        for case in exploratory:
            hw, _ = launch_wgmma(case, module)
            match = [rule for rule in tally if case.compare(hypothesis_model(case, rule), hw).ok]
            for rule in match:
                tally[rule] += 1
            ok = case.compare(case.model(), hw).ok
            exp_fail += not ok
            say(f"  {'ok  ' if ok else 'FAIL'} {case.label()}  matches: {', '.join(match) or 'none'}")
        say(f"exploratory: model exact on {len(exploratory) - exp_fail}/{len(exploratory)}; "
            f"hypotheses matching every case: {[r for r, n in tally.items() if n == len(exploratory)]}")
        failures += exp_fail
    return cmd.finish(failures, "wgmma validation")


# ------------------------------------------------------------------------------------------------
# python -m bwlab.bench umma_model
# ------------------------------------------------------------------------------------------------

def bench_model(M: int = 128, N: int = 256, repeat: int = 50) -> dict:
    """Median wall time of one modelled tcgen05.mma (kind::f16, f16 x f16 -> f32, K-major SW128),
    from SMEM bytes and descriptors to the TMEM image."""
    case = UmmaCase("f16", "f32", M, N, 64, a_base=0, b_base=round_up(M * 64 * 2, 1024))
    cta = CtaState()
    img = case.smem_image()
    cta.smem[:img.size] = img
    ad, bd = (int(x[0]) for x in case.descriptors())
    times = []
    for i in range(repeat + 3):
        t0 = time.perf_counter()
        tcgen05_mma(cta, 0, ad, bd, case.idesc, False)
        if i >= 3:
            times.append(time.perf_counter() - t0)
    a, b, _ = case.values()
    ok = np.array_equal(case.d_from_tmem(cta.tmem), a[:, :16] @ b[:, :16].T)
    return {"shape": (M, N, 16), "median_ms": statistics.median(times) * 1e3,
            "min_ms": min(times) * 1e3, "repeat": repeat, "exact": ok}


def bench_model_main(argv=None) -> int:
    """python -m bwlab.bench umma_model [--repeat N]: time the NumPy tcgen05.mma model (no GPU)."""
    cmd = Command("bench umma_model", "time the NumPy tcgen05.mma model (runs on the CPU)", stage=None)
    cmd.add("--repeat", type=int, default=50)
    args, say = cmd.start(argv)
    from .sustained import NOT_APPLICABLE
    say(NOT_APPLICABLE)
    r = bench_model(repeat=args.repeat)
    m, n, k = r["shape"]
    say(f"tcgen05.mma model, {m}x{n}x{k} kind::f16 f16->f32, K-major SW128: median {r['median_ms']:.2f} ms "
        f"(min {r['min_ms']:.2f} ms, n={r['repeat']}); D equals NumPy A @ B^T: {r['exact']}")
    say.save(args.out)
    return EXIT_PASS if r["exact"] else EXIT_MISMATCH


if __name__ == "__main__":
    raise SystemExit(validate_wgmma_main())


# ------------------------------------------------------------------------------------------------
# how wgmma adds: random operands across exponents, the hardware's accumulators vs the model
# ------------------------------------------------------------------------------------------------
def accumulation_cases(n: int = 24, dtype: str = "bf16", seed: int = 1000):
    """WgmmaCases whose operands are random `dtype` values spread over 2^-s..2^s (s in 0, 2, 6, 12), K = 16
    or 32, every third with a random incoming D: sums that are not exact in float32, so the way the tensor
    core aligns, cuts and rounds shows in the last bits."""
    from ..hw.dtypes import from_float, to_float
    from ..umma import WgmmaCase
    out = []
    for i in range(n):
        r = np.random.default_rng(seed + i)
        spread = (0, 2, 6, 12)[i % 4]
        k = 16 if i < 2 * n // 3 else 32

        def vals(shape):
            x = r.choice([-1, 1], shape) * np.exp2(r.integers(-spread, spread + 1, shape)) * (1 + r.random(shape))
            return to_float(from_float(x, dtype), dtype).astype(np.float64)
        a, b = vals((64, k)), vals((64, k))
        acc = i % 3 == 2
        d0 = ((r.standard_normal((64, 64)) * np.exp2(r.integers(-4, 5, (64, 64)))).astype(np.float32)
              .astype(np.float64) if acc else np.zeros((64, 64)))
        c = WgmmaCase(dtype, 64, k, "K", "none", "K", "none", accumulate=acc, seed=seed + i)
        object.__setattr__(c, "values", lambda a=a, b=b, d0=d0: (a, b, d0))
        out.append(c)
    return out


def _rne_reference(case) -> np.ndarray:
    a, b, d0 = case.values()
    acc = d0.astype(np.float32)
    for k0 in range(0, case.K, 16):
        acc = (acc.astype(np.float64) + a[:, k0:k0 + 16] @ b[:, k0:k0 + 16].T).astype(np.float32)
    return acc


def validate_accumulation_main(argv=None) -> int:
    """python -m bwlab.validate wgmma_accumulation: random-operand wgmma on this GPU vs
    bwlab.umma.model.wgmma_block_fma (and vs exact addition rounded to nearest, for contrast)."""
    import argparse
    ap = argparse.ArgumentParser(prog="python -m bwlab.validate wgmma_accumulation")
    ap.add_argument("--cases", type=int, default=24)
    args = ap.parse_args(argv)
    from ..umma import launch_wgmma
    info = device.gpu_info()
    if device.tier("tma") != "emulated" and (info is None or not info.has_wgmma):
        # wgmma runs on an sm_90a GPU, or in the PTX emulator where there is no GPU with TMA
        msg = ("validate wgmma_accumulation: wgmma needs an sm_90a GPU (Hopper) or the PTX emulator; this machine "
               f"has {'BWLAB_BACKEND=model' if info is None else f'{info.name} ({info.sm})'}: nothing to validate here")
        print(msg)
        raise NoSuitableGpu(msg)
    print(f"{info.name if info else 'no GPU'}: wgmma m64n64k16 accumulators over random operands vs the model")
    total = bad_model = bad_rne = 0
    for dtype in ("bf16", "f16"):
        for c in accumulation_cases(args.cases, dtype):
            hw, _ = launch_wgmma(c)
            m = c.model()
            hb, mb, rb = (np.asarray(x, np.float32).view(np.uint32) for x in (hw, m, _rne_reference(c)))
            nm, nr = int((hb != mb).sum()), int((hb != rb).sum())
            ulp = int(np.abs(hb.astype(np.int64) - rb.astype(np.int64)).max())
            total, bad_model, bad_rne = total + hb.size, bad_model + nm, bad_rne + nr
            print(f"  {dtype} K={c.K:<3} {'D0 ' if c.accumulate else '   '} seed {c.seed}: model differs in {nm:5d}, "
                  f"exact-then-nearest differs in {nr:5d} (max {ulp} ulp)")
    print(f"{total} accumulators: the model (align to the largest exponent, cut to 2^(e-25), add, cut to f32) "
          f"differs in {bad_model}; exact addition rounded to nearest differs in {bad_rne}")
    print("PASS" if bad_model == 0 else "FAIL")
    return 0 if bad_model == 0 else 1
