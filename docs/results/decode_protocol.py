"""Decode-shaped GEMMs (M = 16 .. 256 rows of A against N = K = 8192) on a Hopper GPU: the decode rung
(bwlab.gemm.decode, cuda_src/gemm_sm90/sd_swap_ab.cu) against cuBLAS (torch.matmul), the ladder's
split-K rung, and a read-only stream of the same bytes (A + B + C) measured in the same run: the
roofline of the shape.

    python docs/results/decode_protocol.py probe [--out F]      # a few variants, short CUDA-event timings
    python docs/results/decode_protocol.py protocol [--out F]   # the sustained protocol (bwlab.gemm.protocol)

Every candidate's C is checked against the f32 reference before it is timed (runner.check). The stream
reads a buffer of exactly bytes_moved(M, N, K) bytes with 16-byte loads from every SM; its buffers
rotate like the operand sets, so no launch finds its bytes left in L2. Fractions of the roofline are
stream time / candidate time (the same bytes); library ratios are library time / candidate time.

The rung and the stream are timed twice: launched plainly and, in the rows marked '(PDL)', with
programmatic dependent launch (bwlab.pdl: cuLaunchKernelEx with programmatic stream serialization), so
that a launch may start before the one ahead of it has finished. A '(PDL)' row's fraction is of the
stream launched the same way (which reads all its bytes before its griddepcontrol.wait: the strictest
stream to compare with). The library is launched as torch launches it. The probe also runs PDL chains
(C2 = C1 B2^T right after C1 = A B1^T, C1 read as the second GEMM's A), with a negative control that
leaves the kernel's griddepcontrol.wait out and must fail.
"""
from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys

import numpy as np

STREAM_SRC = r"""
template <bool PDL>
__device__ __forceinline__ void stream_body(const uint4* __restrict__ p, unsigned long long n16, unsigned sentinel,
                                            unsigned* out) {
    // PDL: the next grid may be scheduled at once; every byte is read before this grid waits for the one
    // ahead of it (as if all were weights), and only the write waits: the strictest stream to compare with
    if (PDL) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    unsigned acc = 0;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n16; i += 4 * stride) {   // four independent 16-byte loads in flight per thread
        const uint4 a = __ldg(p + i), b = __ldg(p + i + stride), c = __ldg(p + i + 2 * stride),
                    d = __ldg(p + i + 3 * stride);
        acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
    }
    for (; i < n16; i += stride) {
        const uint4 a = __ldg(p + i);
        acc ^= a.x ^ a.y ^ a.z ^ a.w;
    }
    if (PDL) asm volatile("griddepcontrol.wait;" ::: "memory");
    if (acc == sentinel) out[0] = acc;   // never true for random data: keeps the loads alive
}
extern "C" __global__ void __launch_bounds__(512)
read_stream(const uint4* __restrict__ p, unsigned long long n16, unsigned sentinel, unsigned* out) {
    stream_body<false>(p, n16, sentinel, out);
}
extern "C" __global__ void __launch_bounds__(512)
read_stream_pdl(const uint4* __restrict__ p, unsigned long long n16, unsigned sentinel, unsigned* out) {
    stream_body<true>(p, n16, sentinel, out);
}
"""

SHAPES = [(16, 8192, 8192), (32, 8192, 8192), (64, 8192, 8192), (128, 8192, 8192), (256, 8192, 8192)]
SQUARE = (4096, 4096, 4096)
# probe variants: (consumer warpgroups, K pieces across the cluster, boxes of 64 K per stage[, (producer,
# consumer) setmaxnreg registers, (0, 0): none])
VARIANTS = [(4, 4, 1), (4, 4, 1, (0, 0)), (4, 4, 1, (40, 104)), (4, 4, 2), (4, 2, 1), (4, 2, 2), (2, 4, 1)]
PDL = " (PDL)"
# the probe's PDL variants per M: (consumers, K pieces, boxes per stage, setmaxnreg, CTAs per SM, launched
# with PDL): m2 = a ring of half the SMEM and registers for two CTAs per SM, so that the next grid's CTA
# fits beside this grid's and fills its ring with B while this one streams
PROBE_PDL = {16: [(1, 1, 2, (), 2, True), (1, 1, 4, (), 2, True), (1, 1, 2, (), 2, False)],
             32: [(1, 1, 2, (), 2, True), (1, 1, 4, (), 2, True)],
             64: [(1, 1, 1, (), 2, True), (1, 1, 2, (), 2, True), (1, 1, 1, (), 2, False)],
             128: [(1, 1, 1, (), 2, True), (1, 2, 1, (), 2, True), (1, 2, 2, (), 2, True), (1, 1, 2, (), 1, True)],
             256: []}
# --even: per M the table's own configuration with even rows (Config.even = 1: as many clusters as the SMs
# hold, N's rows shared evenly among them), launched plainly and with PDL
# --msplit: per M two consumer warpgroups with M split across a cluster of 2 (Config.msplit = 2: B's stage
# multicast to both CTAs, each its half of A over all of K), KB = 1 and 2, launched plainly and with PDL
MSPLIT_VARIANTS = [(2, 1, kb, (), 1, pdl, 0, 2) for kb in (1, 2) for pdl in (False, True)]


def stream_calls(nbytes, nsets, sms, per_sm=4, pdl=False, bufs=None):
    """A read-only stream of `nbytes` (rounded up to 16) per set, one buffer per set (random bytes);
    `pdl`: launched through cuLaunchKernelEx with programmatic stream serialization (bwlab.pdl), the
    kernel's griddepcontrol placed as in STREAM_SRC. `bufs`: the buffers of an earlier call, reused."""
    import cupy as cp
    from bwlab import pdl as P
    kern = cp.RawKernel(STREAM_SRC, "read_stream_pdl" if pdl else "read_stream", options=("-std=c++17",))
    n16 = (nbytes + 15) // 16
    if bufs is None:
        rng = cp.random.default_rng(7)
        bufs = [rng.integers(0, 2**31, size=4 * n16, dtype=cp.uint32) for _ in range(nsets)]
    out = cp.zeros(1, cp.uint32)
    grid = (sms * per_sm,)
    if pdl:
        calls = [P.launcher(kern, grid, (512,), (b, np.uint64(n16), np.uint32(0x9E3779B9), out)) for b in bufs]
    else:
        calls = [lambda b=b: kern(grid, (512,), (b, np.uint64(n16), np.uint32(0x9E3779B9), out)) for b in bufs]
    return calls, (bufs, out)


def candidates(m, n, k, sets, variants, with_sk=True, with_s8=False):
    """(name, calls per set, C of set 0, after-check) for the ladder rungs and the decode variants."""
    from bwlab.gemm import decode, runner
    out = []
    steps = (["sk_split_k"] if with_sk else []) + (["s8_epilogue_overlap"] if with_s8 else [])
    for name in steps:
        try:
            ls = [runner.prepare(name, a, b) for a, b in sets]
        except ValueError as e:
            out.append((name, None, str(e), None))
            continue
        out.append((name, ls, ls[0].c, lambda l=ls[0]: runner.raise_on_status(l)))
    for v in variants:
        label, r, pdl, defs = (*v, None) if len(v) == 3 else (*v, False, None) if len(v) == 2 else v
        try:
            ls = [decode.prepare(r, a, b, pdl=pdl, defines=defs) for a, b in sets]
        except ValueError as e:
            out.append((label, None, str(e), None))
            continue
        if pdl and not ls[0].pdl:   # never time a plain launch under the PDL label
            out.append((label, None, "programmatic dependent launch unavailable here (see the warning)", None))
            continue
        out.append((label, ls, ls[0].c, lambda l=ls[0]: runner.raise_on_status(l)))
    return out


def write_report(lines, script, argv, out):
    """Print a probe's lines and the command that made them, and write them to `out` (if given)."""
    text = "\n".join(lines) + f"\n\ncommand: python docs/results/{script} " + " ".join(
        sys.argv[1:] if argv is None else argv)
    print(text)
    if out:
        open(out, "w").write(text + "\n")


def event_ms(calls, launches=40, reps=5):
    import cupy as cp
    for c in calls:
        c()
    cp.cuda.Device().synchronize()
    res = []
    for _ in range(reps):
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        for i in range(launches):
            calls[i % len(calls)]()
        e.record()
        e.synchronize()
        res.append(cp.cuda.get_elapsed_time(s, e) / launches)
    return statistics.median(res)


def round_robin(lib_calls, named_calls, rounds=7):
    """(library ms, {name: ms}): every candidate and the library timed once per round (40 launches each), the
    median of the rounds. A kernel's time moves with its place in a run (decode_probe_h200.txt, 45), so none is
    timed only early or only late."""
    ts = {name: [] for name, _ in named_calls}
    lib = []
    for _ in range(rounds):
        lib.append(event_ms(lib_calls, reps=1))
        for name, calls in named_calls:
            ts[name].append(event_ms(calls, reps=1))
    return statistics.median(lib), {name: statistics.median(v) for name, v in ts.items()}


def even_variants(m):
    """The table's configuration at M with even rows, as probe variants: plain and with PDL."""
    from bwlab.gemm import decode
    c = decode.SWAP_AB.config(m)
    return [(c.consumers, c.split, c.kb, c.regs, c.minb, pdl, 1) for pdl in (False, True)]


def l2_variants(m):
    """--l2: the table's configuration at M with A's and B's tensor maps at each L2 promotion (plain), at
    256B with PDL too, and at 256B the K-per-stage and cluster variants near the table's (plain)."""
    from bwlab.gemm import decode
    r = decode.SWAP_AB
    c = r.config(m)
    out = [(f"{r.name} l2 {l2}", r.with_l2(l2), False) for l2 in decode.L2_PROMOTIONS]
    out.append((f"{r.name} l2 256B" + PDL, r.with_l2("256B"), True))
    near = {16: [(1, 1, 1), (1, 1, 2), (2, 2, 1)], 32: [(1, 1, 1), (1, 1, 2), (2, 2, 1)],
            64: [(1, 1, 1), (1, 1, 2), (2, 2, 1), (2, 2, 2)],
            128: [(1, 1, 1), (1, 1, 2), (2, 2, 1), (1, 2, 1), (1, 2, 2)],
            256: [(2, 2, 2), (1, 2, 1), (2, 1, 1, 2), (2, 1, 2, 2)]}[r.mt(m)]
    for v in near:
        if v[:3] == (c.consumers, c.split, c.kb) and (v[3] if len(v) > 3 else 1) == c.msplit:
            continue
        ms = v[3] if len(v) > 3 else 1
        out.append(("sd w{} s{} kb{}".format(*v[:3]) + (f" ms{ms}" if ms != 1 else "") + " l2 256B",
                    r.with_config(*v[:3], msplit=ms, l2="256B"), False))
    return out


def wait_variants(m):
    """--wait: the table's configuration at M and boxes of 64 K per stage around it, each with the three
    mbarrier waits of cuda_src/ptx/mbarrier.cuh (BW_WAIT_POLL 0: the timer and the status word read around
    every try; 1: a first try before any timer, then both only every 32nd miss; 2: no limit at all). Each
    variant is the table's configuration (A's ring, the early hand-back) with only KB changed."""
    import dataclasses as dc
    from bwlab.gemm import decode
    r = decode.SWAP_AB
    c = r.config(m)
    out = []
    for kb in sorted({c.kb, 1, 2, 4}):
        rk = dc.replace(r, table=tuple((t, dc.replace(x, kb=kb) if t == r.mt(m) else x) for t, x in r.table))
        try:
            rk.require_shape(m, 8192, 8192)
            if rk.stages(m) < 2:
                continue
        except ValueError:
            continue
        for w in (0, 1, 2):
            out.append((f"sd w{c.consumers} s{c.split} kb{kb} wait{w}", rk, False, {"BW_WAIT_POLL": w}))
        if kb == c.kb:
            out.append((f"sd w{c.consumers} s{c.split} kb{kb} wait1" + PDL, rk, True, {"BW_WAIT_POLL": 1}))
    return out


def aring_variants(m, which=1):
    """--aring: A in a ring of its own (Config.a_stages = R) and B's ring as deep as the rest of the SMEM holds,
    at the table's configuration and its neighbours (plain; two of them with PDL too), beside the table."""
    from bwlab.gemm import decode
    r = decode.SWAP_AB
    out = [(r.name, r, False)]
    near = {1: ARING_FIRST, 2: ARING_SECOND, 3: ARING_SHARE}[which]
    for c, s, kb, a, pdl, *share in near[r.mt(m)]:
        sh = share[0] if share else 1
        rv = r.with_config(c, s, kb, a_stages=a, a_share=sh)
        label = f"sd w{c} s{s} kb{kb} a{a}" + (f" sh{sh}" if sh > 1 else "")
        out.append((label, rv, False))
        if pdl:
            out.append((label + PDL, rv, True))
    return out


def stagger_variants(m):
    """--stagger: the table's configuration at M with each cluster starting its walk along K at its own offset
    (Config.stagger = 1), plain and with PDL, and near it (plain) the variants of STAGGER_NEAR with the stagger."""
    from bwlab.gemm import decode
    r = decode.SWAP_AB
    rs = r.with_each(stagger=1)
    out = [(r.name, r, False), (r.name + PDL, r, True), (r.name + " st", rs, False), (r.name + " st" + PDL, rs, True)]
    for c, s, kb, a in STAGGER_NEAR[r.mt(m)]:
        out.append((f"sd w{c} s{s} kb{kb} a{a} st", r.with_config(c, s, kb, a_stages=a, stagger=1), False))
    return out


def early_variants(m, near=None):
    """--early: the table's configuration at M with each stage handed back as soon as the consumer's own wgmma on it
    are done (Config.early = 1), plain and with PDL, and near it (plain) the variants of EARLY_NEAR with it."""
    from bwlab.gemm import decode
    r = decode.SWAP_AB
    re = r.with_each(early=1)
    out = [(r.name, r, False), (r.name + PDL, r, True), (r.name + " er", re, False), (r.name + " er" + PDL, re, True)]
    for c, s, kb, a, *rest in (near or EARLY_NEAR)[r.mt(m)]:
        ms, er = (rest + [1, 1])[:2]
        out.append((f"sd w{c} s{s} kb{kb} a{a}" + (f" ms{ms}" if ms > 1 else "") + (" er" if er else ""),
                    r.with_config(c, s, kb, a_stages=a, early=er, msplit=ms), False))
    return out


# --early: (consumers, K pieces, boxes per stage, A's ring depth[, M halves]) near the table's, each with the early
# hand-back (the first run, section 26; --early-msplit: M split across the pair, cuBLAS's shape at M = 256, section 30)
EARLY_NEAR = {16: [(1, 1, 2, 0), (1, 1, 4, 3), (1, 1, 2, 6)], 32: [(1, 1, 2, 0), (1, 1, 4, 3)],
              64: [(1, 1, 2, 4), (1, 1, 4, 3), (1, 1, 2, 6), (2, 2, 2, 3)],
              128: [(2, 2, 1, 6), (2, 2, 2, 2), (2, 2, 1, 4), (1, 1, 2, 3)],
              256: [(2, 2, 1, 3), (2, 2, 1, 4), (2, 2, 2, 2)]}
# (the first --early-msplit run had A in B's ring: every variant far slower; section 30. Now A in a ring of its own.)
EARLY_MSPLIT = {16: [], 32: [], 64: [(2, 1, 2, 3, 2), (2, 1, 4, 3, 2)],
                128: [(2, 1, 2, 3, 2), (2, 1, 1, 4, 2), (2, 1, 2, 4, 2), (2, 1, 4, 3, 2)],
                256: [(2, 1, 1, 4, 2), (2, 1, 2, 3, 2), (2, 1, 1, 6, 2), (2, 1, 2, 4, 2), (2, 1, 1, 6, 2, 0),
                      (2, 1, 2, 3, 2, 0)]}


# --stagger: (consumers, K pieces, boxes per stage, A's ring depth) near the table's, each with the stagger
STAGGER_NEAR = {16: [(1, 1, 2, 0), (1, 1, 4, 3), (1, 1, 8, 0)], 32: [(1, 1, 2, 0), (1, 1, 4, 3)],
                64: [(1, 1, 2, 4), (1, 1, 4, 2), (2, 2, 2, 3)], 128: [(2, 2, 1, 6), (2, 2, 2, 2), (1, 1, 2, 3)],
                256: [(2, 2, 1, 3), (2, 2, 2, 2)]}


# --aring: (consumers, K pieces, boxes per stage, A's ring depth, also with PDL) per MT; the second run (--aring
# 2) after the first showed A's ring of 2 far too shallow and 3 at or past the table
ARING_FIRST = {16: [(1, 1, 4, 2, 0), (1, 1, 4, 3, 1), (1, 1, 2, 3, 0), (1, 1, 2, 4, 1)],
               32: [(1, 1, 4, 2, 0), (1, 1, 4, 3, 1), (1, 1, 2, 3, 0), (1, 1, 2, 4, 1)],
               64: [(1, 1, 4, 2, 0), (1, 1, 4, 3, 1), (1, 1, 2, 3, 0), (1, 1, 2, 4, 1), (2, 2, 2, 2, 0), (2, 2, 2, 3, 0)],
               128: [(2, 2, 2, 2, 0), (2, 2, 2, 3, 1), (2, 2, 1, 3, 0), (2, 2, 1, 4, 1), (1, 1, 2, 2, 0), (1, 1, 2, 3, 0)],
               256: [(2, 2, 1, 2, 0), (2, 2, 1, 3, 1), (2, 2, 2, 2, 0), (1, 2, 1, 3, 1)]}
# --aring 3: A shared by the pair of a cluster (Config.a_share = 2: each CTA multicasts every other box of A)
ARING_SHARE = {16: [(1, 1, 4, 3, 0), (1, 1, 4, 3, 1, 2), (1, 1, 4, 4, 0, 2), (1, 1, 2, 6, 0, 2)],
               32: [(1, 1, 4, 3, 0), (1, 1, 4, 3, 1, 2), (1, 1, 4, 4, 0, 2)],
               64: [(1, 1, 4, 4, 1), (1, 1, 4, 3, 0, 2), (1, 1, 4, 4, 1, 2), (1, 1, 2, 6, 0, 2), (1, 1, 2, 4, 0, 2)],
               128: [], 256: []}
ARING_SECOND = {16: [(1, 1, 4, 3, 0), (1, 1, 4, 4, 0), (1, 1, 2, 6, 0), (1, 1, 2, 8, 0)],
                32: [(1, 1, 4, 3, 0), (1, 1, 4, 4, 0), (1, 1, 2, 6, 0)],
                64: [(1, 1, 4, 3, 0), (1, 1, 4, 4, 1), (2, 2, 2, 3, 0), (2, 2, 2, 4, 1), (2, 2, 1, 6, 0), (2, 2, 1, 8, 0)],
                128: [(2, 2, 2, 3, 1), (2, 2, 2, 4, 1), (2, 2, 1, 6, 0), (2, 2, 1, 8, 1), (2, 2, 1, 10, 0)],
                256: [(2, 2, 1, 3, 0), (2, 2, 1, 4, 1), (2, 2, 1, 5, 1), (2, 2, 1, 6, 0)]}


def variants_for(mode, extra=False, only=None, pdl=True, rung=None):
    """(label, rung, pdl) triples: the rung as its table has it (`rung`: with its table overridden by
    --table), launched plainly and (`pdl`) with programmatic dependent launch; the probe's variants (with
    --variants, the protocol's too)."""
    from bwlab.gemm import decode
    r = rung or decode.SWAP_AB
    out = [(r.name, r, False)] + ([(r.name + PDL, r, True)] if pdl else [])
    if mode == "protocol" and not extra:
        return out
    for v in (VARIANTS if only is None else only):
        v = tuple(v) + ((),) * (4 - len(v)) if len(v) < 4 else tuple(v)
        launch_pdl = len(v) > 5 and v[5]
        even = v[6] if len(v) > 6 else 0
        msplit = v[7] if len(v) > 7 else 1
        label = ("sd w{} s{} kb{}".format(*v[:3]) + (" r{}/{}".format(*v[3]) if v[3] else "")
                 + (" m{}".format(v[4]) if len(v) > 4 and v[4] != 1 else "") + (f" e{even}" if even else "")
                 + (f" ms{msplit}" if msplit != 1 else "") + (PDL if launch_pdl else ""))
        out.append((label, r.with_config(*v[:5], even=even, msplit=msplit), launch_pdl))
    return out


def parse_config(text):
    """--config 'MT:field=value,...' -> (MT, Config fields, launched with PDL): the Config fields by name
    (consumers, split, kb, a_stages, a_share, early, ...; consumers, split and kb default to the table's
    configuration at MT), pdl=1 for a launch with programmatic dependent launch, and D_NAME=V for a compile-time define
    NAME = V of the kernel (a probe's switch, e.g. D_BW_WAIT_POLL=2)."""
    import dataclasses as dc
    from bwlab.gemm import decode
    mt, _, rest = text.partition(":")
    base = dict(decode.SWAP_AB.table).get(int(mt)) if mt.isdigit() else None
    if base is None:
        raise SystemExit(f"--config {text!r}: starts with wgmma's N, one of {sorted(dict(decode.SWAP_AB.table))}, "
                         "then ':' and field=value pairs")
    names = {f.name for f in dc.fields(decode.Config)}
    fields, pdl, defines = {}, False, {}
    for kv in filter(None, rest.split(",")):
        k, _, v = kv.partition("=")
        if k == "pdl":
            pdl = v == "1"
        elif k.startswith("D_"):   # a compile-time define of the kernel (a probe's switch), not a Config field
            defines[k[2:]] = int(v)
        elif k in names:
            fields[k] = v if k == "l2" else int(v)
        else:
            raise SystemExit(f"--config {text!r}: no field {k!r}; the fields are {', '.join(sorted(names))} and pdl")
    fields = {"consumers": base.consumers, "split": base.split, "kb": base.kb, **fields}
    return int(mt), fields, pdl, defines


def config_variants(m, configs):
    """--config: the table (plain and with PDL) and each configuration given for M's wgmma N."""
    import dataclasses as dc
    from bwlab.gemm import decode
    r = decode.SWAP_AB
    out = [(r.name, r, False), (r.name + PDL, r, True)]
    for mt, fields, pdl, defines in configs:
        if mt != r.mt(m):
            continue
        short = {"consumers": "w", "split": "s", "kb": "kb", "a_stages": "a", "a_share": "sh", "msplit": "ms",
                 "early": "er", "stagger": "st", "minb": "m", "even": "e", "l2": "l2 "}
        label = "sd " + " ".join(f"{short.get(k, k + '=')}{v}" for k, v in fields.items()) + "".join(
            f" {k}={v}" for k, v in defines.items())
        table = tuple((t, dc.replace(c, **fields) if t == mt else c) for t, c in r.table)
        out.append((label + (PDL if pdl else ""), dc.replace(r, table=table), pdl, defines or None))
    return out


def probe(say, shapes, only=None, pdl_variants=True, even=False, msplit=False, times=None, l2=False,
          wait=False, aring=False, stagger=False, early=False, early_msplit=False, configs=None, rounds=7):
    """Short CUDA-event timings: the read stream launched plainly and with PDL, the library, the rung's
    table launched both ways, and per M the variants of PROBE_PDL (`only`: these plain variants instead;
    `even`: the table's configuration with even rows instead; `msplit`: MSPLIT_VARIANTS instead). `times`:
    a dict that gets {shape: {label: ms}} of everything timed."""
    import cupy as cp
    from bwlab.checks.gemm_sustained import _library
    from bwlab.device import gpu_info
    from bwlab.gemm import decode, runner
    from bwlab.gemm import protocol as P
    info = gpu_info()
    for m, n, k in shapes:
        nsets = P.operand_sets(2 * (m * k + n * k), info.l2_bytes, 2.0)
        sets = [runner.random_operands(m, n, k, seed=m + i) for i in range(nsets)]
        ref = runner.reference(*sets[0])
        nbytes = decode.bytes_moved(m, n, k)
        lib_name, lib_calls, lib_c = _library(sets, True)
        st_calls, keep = stream_calls(nbytes, nsets, info.sm_count)
        t_st = event_ms(st_calls)
        t_stp = event_ms(stream_calls(nbytes, nsets, info.sm_count, pdl=True, bufs=keep[0])[0])
        t_lib = event_ms(lib_calls)
        say(f"\n== {m}x{n}x{k}: {nbytes / 2**20:.1f} MiB must move; {nsets} sets; stream {t_st * 1e3:.1f} us "
            f"({nbytes / t_st / 1e9:.2f} TB/s), with PDL {t_stp * 1e3:.1f} us; library {t_lib * 1e3:.1f} us "
            f"({t_st / t_lib:.3f} of stream); {runner.check(*sets[0], lib_c, 'library', ref=ref).ok}")
        if times is not None:
            times[f"{m}x{n}x{k}"] = here = {"read stream": t_st, "read stream" + PDL: t_stp, "library": t_lib}
        if configs:
            vs = config_variants(m, configs)
        elif early_msplit:
            vs = early_variants(m, EARLY_MSPLIT)
        elif early:
            vs = early_variants(m)
        elif stagger:
            vs = stagger_variants(m)
        elif aring:
            vs = aring_variants(m, which=aring)
        elif wait:
            vs = wait_variants(m)
        elif l2:
            vs = l2_variants(m)
        elif even:
            vs = variants_for("probe", only=even_variants(m))
        elif msplit:
            vs = variants_for("probe", only=MSPLIT_VARIANTS)
        else:
            vs = variants_for("probe", only=only or PROBE_PDL.get(m, []) if pdl_variants else only)
        good = []
        for name, calls, c, after in candidates(m, n, k, sets, vs, with_sk=False):
            if calls is None:
                say(f"  {name:<26s} not run: {c}")
                continue
            runner.clear_status(calls[0])
            calls[0]()
            cp.cuda.Device().synchronize()
            ok = runner.check(*sets[0], c, name, ref=ref)
            if not ok.ok:
                say(f"  {name:<26s} {ok}")
                continue
            good.append((name, calls, after))
        if good:
            t_lib, ts = round_robin(lib_calls, [(name, calls) for name, calls, _ in good], rounds)
            say(f"  library, round robin        {t_lib * 1e3:7.1f} us ({rounds} rounds)")
        for name, calls, after in good:
            t = ts[name]
            after()
            if times is not None:
                here[name] = t
            cfg = calls[0].step.config(m)
            st = t_stp if calls[0].pdl else t_st
            say(f"  {name:<26s} {t * 1e3:7.1f} us  {nbytes / t / 1e9:5.2f} TB/s  {st / t:.3f} of the stream "
                f"launched alike  {t_lib / t:.3f} x lib  stages {calls[0].stages}, "
                f"{calls[0].grid[0] // (cfg.split * cfg.msplit)} clusters of {cfg.split * cfg.msplit}"
                + (f" (even rows: {2 * (n // 2 // g)}-{2 * -(-(n // 2) // g)} each)" if (g := calls[0].groups)
                   else ""))
        del sets, ref, keep
        cp.get_default_memory_pool().free_all_blocks()


def chains(say, even=False, msplit=False, ms=(128, 256)):
    """The PDL chain at M = 64 and 128 with the table's configuration, a two-CTAs-per-SM variant, and
    the negative control: the same kernels with griddepcontrol.wait left out, which must fail. `even`:
    the table's configuration and the same with even rows, at M = 16, 64 and 128."""
    from bwlab.gemm import decode
    r = decode.SWAP_AB
    say("\n== PDL chains: C1 = A B1^T, then C2 = C1 B2^T (C1 read as the second GEMM's A), both with PDL")
    if msplit:   # M split across the pair, B multicast: the table's configuration and the new mode, KB = 1
        for m in ms:
            chain_check(say, m, r, r.name)
            chain_check(say, m, r.with_config(2, 1, 1, msplit=2), "sd w2 s1 kb1 ms2")
        return
    if even:
        for m in (16, 64, 128):
            c = r.config(m)
            chain_check(say, m, r, r.name)
            chain_check(say, m, r.with_config(c.consumers, c.split, c.kb, c.regs, c.minb, even=1),
                        f"{r.name} with even rows")
        return
    for m in (64, 128):
        chain_check(say, m, r, f"{r.name}")
        chain_check(say, m, r.with_config(1, 1, 1, (), 2), "sd w1 s1 kb1 m2")
        chain_check(say, m, r, f"{r.name} with the waits left out (control: expected to fail)",
                    defines={"DECODE_GRID_WAIT": 0})


def chain_check(say, m, rung, label, defines=None, rounds=8):
    """Two decode GEMMs in a row where the second reads the first's C as its A (N = K = 8192, so C1 is an
    M x K operand), both launched with PDL: C2 = C1 B2^T, checked against the reference from the C1 the
    first launch wrote. C1 and C2 are filled with NaN bits before each round, so a second grid that read
    A before the first had finished would be seen. `defines`: e.g. the waits left out (the control)."""
    import cupy as cp
    from bwlab.gemm import decode, runner
    n = k = 8192
    a1, b1 = runner.random_operands(m, n, k, seed=100 + m)
    _, b2 = runner.random_operands(m, n, k, seed=200 + m)
    c1 = cp.full((m, n), 0xFFFF, dtype=cp.uint16)
    l1 = decode.prepare(rung, a1, b1, c=c1, pdl=True, defines=defines)
    l2 = decode.prepare(rung, c1, b2, pdl=True, defines=defines)
    if not (l1.pdl and l2.pdl):
        say(f"  chain {label}: not run (programmatic dependent launch unavailable)")
        return
    bad = []
    for r in range(rounds):
        c1.fill(0xFFFF)
        l2.c.fill(0xFFFF)
        l1()
        l2()
        cp.cuda.Device().synchronize()
        first = runner.check(a1, b1, c1, "C1")
        second = runner.check(c1, b2, l2.c, "C2")
        if not (first.ok and second.ok):
            bad.append(f"round {r}: {first if not first.ok else second}")
    say(f"  chain {label} at M = {m}: {rounds - len(bad)} of {rounds} rounds PASS" + (f"; {bad[0]}" if bad else ""))


def sustained(say, shapes, dump, extra=False, pdl=True, rung=None, configs=None):
    """Each shape under bwlab.gemm.protocol: checks, warm-up with the library, rounds of alternating
    sustained blocks (library, candidate, library, ...) with the stream as one more candidate. `configs`
    (--config): the table and these configurations as the candidates."""
    import cupy as cp
    from bwlab.checks.clocks import ClockLog, summarize
    from bwlab.checks.gemm_sustained import _library, launch_time_ms, time_block, warm_up
    from bwlab.device import gpu_info
    from bwlab.gemm import decode, runner
    from bwlab.gemm import protocol as P
    info = gpu_info()
    proto = P.SUSTAINED
    clocks = ClockLog(cp.cuda.Device().pci_bus_id).start()
    say(f"GPU {info.name}, {info.sm_count} SMs, L2 {info.l2_bytes / 2**20:.0f} MiB; clock log: {clocks.source}")
    say(proto.describe())
    if pdl:
        say("rows named '(PDL)': launched through cuLaunchKernelEx with programmatic stream serialization "
            "(bwlab.pdl), each launch free to start before the one ahead of it has finished (the rung reads B "
            "for its first ring pass, then waits with griddepcontrol.wait before A and C; the PDL stream reads "
            "all its bytes, then waits before its one write); their 'roofl.' is against the read stream launched "
            "with PDL. The library (torch.matmul) is launched as torch launches it: no launch attribute is set on "
            "it here.")
    rows = []
    try:
        for m, n, k in shapes:
            square = m == n == k
            nsets = P.operand_sets(2 * (m * k + n * k), info.l2_bytes, proto.l2_multiple)
            sets = [runner.random_operands(m, n, k, seed=m + n + k + i) for i in range(nsets)]
            ref = runner.reference(*sets[0])
            nbytes = decode.bytes_moved(m, n, k)
            shape = f"{m}x{n}x{k}"
            say(f"\n== {m} x {n} x {k} (C = A B^T, bf16 in, f32 accumulation, bf16 out); {nsets} operand sets; "
                f"bytes that must move (A + B + C, bf16): {nbytes / 2**20:.2f} MiB")
            lib_name, lib_calls, lib_c = _library(sets, True)
            lib_calls[0]()
            cp.cuda.Device().synchronize()
            say(f"  library: {lib_name}; {runner.check(*sets[0], lib_c, 'library', ref=ref)}")
            cands = []
            if not square:
                st_calls, keep = stream_calls(nbytes, nsets, info.sm_count)
                cands.append(("read stream", st_calls, None))
                if pdl:
                    cands.append(("read stream" + PDL, stream_calls(nbytes, nsets, info.sm_count, pdl=True,
                                                                    bufs=keep[0])[0], None))
            vs = (config_variants(m, configs) if configs and not square
                  else variants_for("protocol", extra, pdl=pdl, rung=rung))
            for name, calls, c, after in candidates(m, n, k, sets, vs, with_sk=not square,
                                                    with_s8=square):
                if calls is None:
                    say(f"  {name:<20s} not run: {c}")
                    continue
                runner.clear_status(calls[0])
                calls[0]()
                after()
                res = runner.check(*sets[0], c, name, ref=ref)
                say(f"  check before timing: {res}" + (f" (ring of {calls[0].stages} stages, "
                                                     f"{calls[0].smem} B of SMEM, grid {calls[0].grid}"
                                                     + (", even rows" if calls[0].groups else "") + ")"
                                                     if name.startswith("sd") else ""))
                if res.ok:
                    cands.append((name, calls, after))
            del ref
            spent, mhz, per_lib = warm_up(lib_calls, proto, clocks, shape)
            say(f"  warm-up {spent:.1f} s; window medians (MHz): {', '.join(f'{x:.0f}' for x in mhz[-4:])}")
            per = {nm: P.samples_per_launch(launch_time_ms(cl), proto.sample_ms) for nm, cl, _ in cands}
            lib_blocks, cand_blocks = [], {nm: [] for nm, _, _ in cands}
            for r in range(proto.rounds):
                for nm, cl, _ in cands:
                    clocks.mark(("library", shape, r, nm))
                    lib_blocks.append(time_block(lib_calls, proto.block_s, per_lib))
                    clocks.mark((nm, shape, r))
                    cand_blocks[nm].append((len(lib_blocks) - 1, time_block(cl, proto.block_s, per[nm])))
                for nm, cl, after in cands:
                    if after is not None:
                        after()
            clocks.mark(("library", shape, proto.rounds, "end"))
            lib_blocks.append(time_block(lib_calls, proto.block_s, per_lib))
            clocks.mark(None)
            lib_all = P.block_stats([x for blk in lib_blocks for x in blk])
            lib_ck = summarize([c for c in clocks.samples if c[1] and c[1][0] == "library" and c[1][1] == shape])
            summ = {}
            for nm, _, _ in cands:
                blocks = cand_blocks[nm]
                summ[nm] = (P.compare([b for _, b in blocks], [lib_blocks[i] for i, _ in blocks],
                                      [lib_blocks[i + 1] for i, _ in blocks]),
                            P.block_stats([x for _, b in blocks for x in b]),
                            summarize([c for c in clocks.samples if c[1] and c[1][0] == nm and c[1][1] == shape]))
            t_stream = summ["read stream"][0].candidate_ms if "read stream" in summ else None
            t_stream_pdl = summ["read stream" + PDL][0].candidate_ms if "read stream" + PDL in summ else None
            flop = 2.0 * m * n * k

            def line(nm, ms, ratio, spread, iqr, ck):
                ts = t_stream_pdl if nm.endswith(PDL) else t_stream   # the stream launched the same way
                frac = f"{ts / ms:6.3f}" if ts else f"{'-':>6s}"
                rr = f"{ratio:8.3f} {spread[0]:6.3f}-{spread[1]:6.3f}" if ratio else f"{'1':>8s} {'':13s}"
                return (f"  {nm:<20s} {ms * 1e3:8.2f} us {flop / ms / 1e9:7.1f} {nbytes / ms / 1e9:6.2f}  {frac}  {rr}  "
                        f"{100 * iqr:4.1f}%  {ck}")
            say(f"  {'':<20s} {'time':>11s} {'TFLOP/s':>7s} {'TB/s':>6s}  {'roofl.':>6s}  {'lib/x':>8s} {'rounds':>13s}  "
                f"{'IQR':>5s}  clocks during the blocks")
            say(line("library (cuBLAS)", lib_all.median, None, None, lib_all.iqr_rel, lib_ck))
            row = {"shape": shape, "bytes": nbytes, "library_ms": lib_all.median, "library_blocks": lib_blocks}
            for nm, _, _ in cands:
                s, st, ck = summ[nm]
                say(line(nm, s.candidate_ms, s.ratio, s.spread, st.iqr_rel, ck))
                row[nm] = {"ms": s.candidate_ms, "ratio": s.ratio, "per_round": s.per_round,
                           "blocks": [b for _, b in cand_blocks[nm]]}
            if t_stream:
                say(f"  roofline: {nbytes / 2**20:.2f} MiB / {nbytes / t_stream / 1e9:.2f} TB/s (the read stream, this run) "
                    f"= {t_stream * 1e3:.2f} us; cuBLAS at {t_stream / lib_all.median:.3f} of it")
            if t_stream_pdl:
                say(f"  launched with PDL the stream takes {t_stream_pdl * 1e3:.2f} us "
                    f"({nbytes / t_stream_pdl / 1e9:.2f} TB/s): the roofline of the (PDL) rows; cuBLAS (torch.matmul, launched as torch launches it) at "
                    f"{t_stream_pdl / lib_all.median:.3f} of it")
            rows.append(row)
            del sets
            if not square:
                del keep
            cp.get_default_memory_pool().free_all_blocks()
    finally:
        clocks.stop()
    dump["rows"] = rows
    dump["protocol"] = dataclasses.asdict(proto)
    names = [nm for nm in ("read stream", "read stream" + PDL, "sk_split_k", "sd_swap_ab", "sd_swap_ab" + PDL,
                           "s8_epilogue_overlap")]
    names += sorted({nm for row in rows for nm, v in row.items() if isinstance(v, dict) and nm not in names})
    say("\n== summary (sustained protocol): library time / candidate time (> 1: faster than cuBLAS); "
        "[fraction of the read stream of the same bytes, launched the same way: (PDL) rows against the "
        "stream launched with PDL]")
    say(f"  {'shape':<16s}" + "".join(f"{nm:>24s}" for nm in names))
    for row in rows:
        cells = []
        for nm in names:
            if nm not in row:
                cells.append(f"{'-':>24s}")
                continue
            t_st = row.get("read stream" + (PDL if nm.endswith(PDL) else ""), {}).get("ms")
            fr = f" [{t_st / row[nm]['ms']:.3f}]" if t_st else ""
            cells.append(f"{row[nm]['ratio']:.3f}{fr}".rjust(24))
        say(f"  {row['shape']:<16s}" + "".join(cells))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["probe", "protocol"])
    ap.add_argument("--out", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--m", type=int, nargs="*", default=None, help="only these M (N = K = 8192)")
    ap.add_argument("--no-square", action="store_true", help="protocol: leave out the square shape")
    ap.add_argument("--variants", action="store_true", help="protocol: the probe's variants as candidates too")
    ap.add_argument("--n", type=int, default=None, help="probe: this N instead of 8192 (K stays 8192)")
    ap.add_argument("--variant", type=int, nargs=3, action="append", metavar=("C", "S", "KB"),
                    help="probe: these variants (consumers, K pieces, boxes per stage) instead of PROBE_PDL")
    ap.add_argument("--no-chain", action="store_true", help="probe: leave out the PDL chain checks")
    ap.add_argument("--even", action="store_true", help="probe: the table's configuration with even rows "
                    "(one cluster per SM's worth of rows) instead of PROBE_PDL, and the chains with it")
    ap.add_argument("--no-pdl", action="store_true", help="protocol: the rung launched plainly only (no PDL rows)")
    ap.add_argument("--msplit", action="store_true", help="probe: the table against M split across a cluster of 2 "
                    "(MSPLIT_VARIANTS) instead of PROBE_PDL, and the chains with it")
    ap.add_argument("--l2", nargs="?", const="probe", default=None, metavar="PROMOTION",
                    help="probe: the table at each L2 promotion of A's and B's tensor maps and variants at 256B "
                         "(instead of PROBE_PDL; no chains); protocol: the rung's table at this L2 promotion")
    ap.add_argument("--wait", action="store_true", help="probe: the three mbarrier waits (BW_WAIT_POLL) at the "
                    "table's configuration and at 1, 2, 4 boxes of 64 K per stage (instead of PROBE_PDL; no chains)")
    ap.add_argument("--aring", type=int, nargs="?", const=1, default=0, choices=[1, 2, 3],
                    help="probe: A in a ring of its own (Config.a_stages) at the table's configuration and its "
                         "neighbours (instead of PROBE_PDL; no chains): 1 ARING_FIRST, 2 ARING_SECOND, 3 ARING_SHARE")
    ap.add_argument("--stagger", action="store_true",
                    help="probe: the table with and without each cluster's own start along K (Config.stagger) and "
                         "STAGGER_NEAR (instead of PROBE_PDL; no chains); protocol: the rung's table with the stagger")
    ap.add_argument("--early", action="store_true",
                    help="probe: the table with and without each stage handed back once its own wgmma are done "
                         "(Config.early) and EARLY_NEAR (instead of PROBE_PDL; no chains); protocol: the rung's "
                         "table with it")
    ap.add_argument("--early-msplit", action="store_true",
                    help="probe: the table with and without the early hand-back, and M split across the pair with it "
                         "(EARLY_MSPLIT; no chains)")
    ap.add_argument("--rounds", type=int, default=7, help="probe: rounds of the round-robin timing (each 40 launches)")
    ap.add_argument("--config", action="append", default=None, metavar="MT:FIELD=V,...",
                    help="probe (and protocol): the table against these configurations (instead of PROBE_PDL; no "
                         "chains), e.g. 64:a_stages=3,a_share=2,early=1 (fields of decode.Config; consumers, split, kb "
                         "default to the table's at MT; pdl=1: launched with PDL; D_NAME=V: a define of the kernel)")
    ap.add_argument("--table", type=int, nargs=5, action="append", metavar=("MT", "C", "S", "KB", "MS"),
                    help="protocol: the rung's table with this configuration at wgmma's N = MT (consumers, K pieces, "
                         "boxes per stage, M halves)")
    args = ap.parse_args(argv)
    from bwlab.checks.common import gpu_line
    out = open(args.out, "w") if args.out else None

    def say(s=""):   # printed and written as it comes, so a run cut short keeps what it measured
        print(s, flush=True)
        if out:
            out.write(s + "\n")
            out.flush()
    say(gpu_line())
    shapes = [s for s in SHAPES if args.m is None or s[0] in args.m]
    dump = {}
    if args.mode == "probe":
        if args.n:
            shapes = [(m, args.n, k) for m, _, k in shapes]
        dump["probe"] = {}
        probe(say, shapes, [tuple(v) for v in args.variant] if args.variant else None, even=args.even,
              msplit=args.msplit, times=dump["probe"], l2=args.l2 is not None,
              wait=args.wait, aring=args.aring, stagger=args.stagger, early=args.early, early_msplit=args.early_msplit,
              configs=[parse_config(c) for c in args.config or ()], rounds=args.rounds)
        if not (args.config or args.no_chain or args.l2 is not None or args.wait or args.aring or args.stagger
                or args.early or args.early_msplit):
            chains(say, even=args.even, msplit=args.msplit, ms=[s[0] for s in shapes])
    else:
        rung = None
        if args.table:
            import dataclasses as dc
            from bwlab.gemm import decode
            table = dict(decode.SWAP_AB.table)
            for mt, c, sp, kb, ms in args.table:
                if mt not in table:
                    raise SystemExit(f"--table: MT = {mt}; the rung's table has MT in {sorted(table)}")
                table[mt] = decode.Config(c, sp, kb, msplit=ms)
            rung = dc.replace(decode.SWAP_AB, table=tuple(table.items()))
        if args.l2:
            from bwlab.gemm import decode
            rung = (rung or decode.SWAP_AB).with_l2(args.l2)
        if args.stagger or args.early:
            from bwlab.gemm import decode
            rung = (rung or decode.SWAP_AB).with_each(**({"stagger": 1} if args.stagger else {}),
                                                      **({"early": 1} if args.early else {}))
        if rung is not None:
            say("the rung's table here: " + "; ".join(f"MT {mt}: {c}" for mt, c in rung.table))
        sustained(say, shapes + ([] if args.no_square else [SQUARE]), dump, args.variants, pdl=not args.no_pdl,
                  rung=rung, configs=[parse_config(c) for c in args.config or ()])
    say("")
    say("command: python docs/results/decode_protocol.py " + " ".join(sys.argv[1:] if argv is None else argv))
    if out:
        out.close()
    if args.json:
        import gzip
        import json
        with gzip.open(args.json, "wt") as f:
            json.dump(dump, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
