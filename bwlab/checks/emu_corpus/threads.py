"""The corpus's chapters where threads work together or the machine shows through: memory, control,
warp, atomics (with the checks that an order of the atomics explains the result), printf, mma, sched."""
from __future__ import annotations

import numpy as np

from .inputs import (F32_EDGES, F32_SMALL, F64_EDGES, F64_SMALL, H16_EDGES, I32_EDGES, I64_EDGES, f32, half_bits,
                     rand_bits32, rand_f32, rng_for, unary_f32, unary_i32, unary_i64)
from .manifest import AnyOf, Check, In, InOut, K, Out, Printf, Sorted, Val, elem


def _memory():
    c = "memory"
    r = rng_for("mem")
    K("mem_vec_float4", c, [In(rand_f32(r, 256, 3)), Out("f4", 256), Val(np.int32(64))], block=(64, 1, 1))
    i4 = r.integers(-(1 << 31), 1 << 31, 256).astype(np.int32)
    l2 = r.integers(-(1 << 63), (1 << 63) - 1, 128, dtype=np.int64)
    K("mem_vec_int4_longlong2", c, [In(i4), In(l2), Out("i4", 256), Out("i8", 128), Val(np.int32(64))],
      block=(64, 1, 1))
    K("mem_vec_double2_short4", c, [In(r.standard_normal(128)), In(r.integers(-32768, 32768, 256).astype(np.int16)),
                                    Out("f8", 128), Out("i2", 256), Val(np.int32(64))], block=(64, 1, 1))
    K("mem_b128_asm", c, [In(l2.view(np.uint64)), Out("u8", 128), Val(np.int32(64))], block=(64, 1, 1))
    K("mem_bytes_signext", c, [In(r.integers(-128, 128, 128).astype(np.int8)),
                               In(r.integers(-32768, 32768, 128).astype(np.int16)), Out("i4", 384),
                               Val(np.int32(128))], block=(64, 1, 1))
    elem("mem_byte_stores", c, [rand_bits32(r, 128)], "u1", 4)
    elem("mem_local_array", c, [unary_i32("loc", 96)], "i4", 1)
    elem("mem_local_struct", c, [rand_f32(r, 96, 1)], "f4", 2)
    K("mem_shared_transpose", c, [In(rand_f32(r, 1024, 2)), Out("f4", 1024)], block=(128, 1, 1))
    K("mem_shared_dynamic", c, [In(r.integers(-1000, 1000, 200).astype(np.int32)), Out("i4", 200), Val(np.int32(200))],
      block=(64, 1, 1), shared=800)
    K("mem_shared_bytes", c, [In(rand_bits32(r, 256)), Out("u4", 256)], block=(256, 1, 1))
    elem("mem_ldg_hints", c, [rand_f32(r, 128, 2)], "f4", 2)
    elem("mem_struct_copy", c, [unary_i32("struct", 96)], "i4", 3)
    elem("mem_globals_const", c, [unary_i32("glob", 64)], "f4", 1)
    K("mem_vec_char4_uchar2", c, [In(r.integers(-128, 128, 256).astype(np.int8)),
                                  In(r.integers(0, 256, 128).astype(np.uint8)), Out("i1", 256), Out("u2", 128),
                                  Val(np.int32(64))], block=(64, 1, 1))


def _control():
    c = "control"
    r = rng_for("ctl")
    K("ctl_fib_recursive", c, [In(np.array(list(range(11)) * 3 + [10] * 5, np.int32)[:32]), Out("i4", 32),
                               Val(np.int32(32))])
    K("ctl_deep_recursion", c, [In(np.arange(32, dtype=np.uint32)), Out("u8", 32), Val(np.int32(32))])
    K("ctl_function_pointers", c, [In(r.integers(0, 4, 64).astype(np.int32)), In(rand_f32(r, 64, 2)), Out("f4", 64),
                                   Val(np.int32(64))], block=(64, 1, 1))
    ia = np.concatenate([np.array([-5, 0, 3, 11, 12, 13, 28, 29, 16, 17, -1, 33], np.int32),
                         r.integers(-20, 200, 52).astype(np.int32)])
    K("ctl_divergent_return", c, [In(ia), Out("i4", 64), Val(np.int32(60))], block=(64, 1, 1))
    elem("ctl_break_continue", c, [unary_i32("brk", 64)], "i4", 1)
    elem("ctl_switch", c, [unary_i32("sw", 96)], "i4", 1)
    elem("ctl_call_many_args", c, [unary_i32("args", 64)], "i8", 1)
    elem("ctl_struct_return", c, [rand_f32(r, 64, 2)], "f8", 1)
    K("ctl_nested_divergence", c, [In(unary_i32("nest", 64)), Out("i4", 64), Val(np.int32(64))], block=(64, 1, 1))
    elem("ctl_goto_loop", c, [unary_i32("goto", 64)], "i4", 1)
    K("ctl_exit_asm", c, [In(unary_i32("exit", 64)), Out("i4", 64), Val(np.int32(64))], block=(64, 1, 1))


def _warp():
    c = "warp"
    r = rng_for("warp")
    v = unary_i32("wv", 64)
    src = np.concatenate([np.array([0, 31, 32, 33, -1, 63, 100, 16, 15, 8, 7, 1], np.int32),
                          r.integers(-40, 80, 52).astype(np.int32)])
    K("warp_shfl_idx", c, [In(v), In(src), Out("i4", 256)], block=(64, 1, 1))
    K("warp_shfl_up_down", c, [In(v), Out("i4", 384)], block=(64, 1, 1))
    K("warp_shfl_xor", c, [In(unary_f32("wx", 64)), Out("f4", 256)], block=(64, 1, 1))
    K("warp_shfl_64bit", c, [In(r.standard_normal(64)), In(unary_i64("w64", 64)), Out("f8", 64), Out("i8", 64)],
      block=(64, 1, 1))
    K("warp_shfl_asm_clamp", c, [In(v), Out("u4", 192)], block=(64, 1, 1))
    bv = r.integers(-3, 10, 64).astype(np.int32)
    bv[[0, 5, 33, 40]] = 7
    K("warp_ballot_in_branch", c, [In(bv), Out("u4", 64)], block=(64, 1, 1))
    K("warp_votes", c, [In(np.concatenate([np.ones(32, np.int32), bv[32:]])), Out("u4", 320)], block=(64, 1, 1))
    K("warp_match", c, [In(r.integers(0, 4, 64).astype(np.int32)),
                        In((r.integers(0, 3, 64).astype(np.int64) << 40) | 5), Out("u4", 256)], block=(64, 1, 1))
    K("warp_redux", c, [In(v), Out("i4", 448)], block=(64, 1, 1))
    K("warp_redux_partial", c, [In(v), Out("i4", 64)], block=(64, 1, 1))
    K("warp_tile_reduce", c, [In(rand_f32(r, 64, 3)), Out("f4", 128)], block=(64, 1, 1))
    K("warp_inclusive_scan", c, [In(v), Out("i4", 64)], block=(64, 1, 1))
    K("warp_partial_shfl", c, [In(v), Out("i4", 64)], block=(64, 1, 1))
    K("warp_block_votes", c, [In(r.integers(-50, 100, 128).astype(np.int32)), Out("i4", 128)], block=(128, 1, 1))
    K("warp_lanemask_elect", c, [In(v), Out("u4", 256)], block=(64, 1, 1))
    ex = r.integers(-5, 20, 64).astype(np.int32)
    ex[[0, 1, 31, 32, 40]] = -1
    K("warp_ballot_after_exit", c, [In(ex), Out("u4", 128)], block=(64, 1, 1))
    K("warp_syncwarp_masks", c, [In(r.integers(-1000, 1000, 128).astype(np.int32)), Out("i4", 128)],
      block=(128, 1, 1))


# -- atomics: the order checks ----------------------------------------------------------------------

def _chain(init, olds, step, final):
    """Is there an order of the threads in which each one's old value is the running value before it,
    starting at `init` and ending at `final`? `step(value, thread) -> next value`. Thread t is the
    edge old[t] -> step(old[t], t); an order is an Euler trail from init to final over all edges
    (in-/out-degrees balanced but at the ends, every edge reachable from init)."""
    key = lambda v: np.asarray(v).tobytes()  # noqa: E731
    deg, adj = {}, {}
    for t in range(len(olds)):
        u, v = key(olds[t:t + 1]), key(step(olds[t:t + 1], t))
        deg[u] = deg.get(u, 0) + 1
        deg[v] = deg.get(v, 0) - 1
        adj.setdefault(u, set()).add(v)
        adj.setdefault(v, set()).add(u)
    a, b = key(init), key(final)
    if not olds.size:
        return a == b
    want = {a: 1, b: -1} if a != b else {}
    if any(d != want.get(n, 0) for n, d in deg.items()) or (a != b and (deg.get(a) != 1 or deg.get(b) != -1)):
        return False
    seen, todo = {a}, [a]
    while todo:
        for m in adj.get(todo.pop(), ()):
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return seen >= set(adj)


def _check_float_order(outs, k):
    acc, old = outs[0], outs[1]
    v = k.args[1].data
    init = k.args[0].data[0:1]
    ok = _chain(init, old, lambda cur, t: (cur + v[t:t + 1]).astype(np.float32), acc[0:1])
    return None if ok else "no order of the float atomicAdds gives these old values and this sum"


def _check_double_order(outs, k):
    acc, old = outs[0], outs[1]
    v = k.args[1].data
    ok = _chain(k.args[0].data[0:1], old, lambda cur, t: cur + v[t:t + 1], acc[0:1])
    return None if ok else "no order of the double atomicAdds gives these old values and this sum"


def _check_exch_chain(outs, k):
    slot, old = outs[0], outs[1]
    init = k.args[0].data[0:1]
    ok = _chain(init, old, lambda cur, t: np.array([t + 100], np.int32), slot[0:1])
    return None if ok else "the exchanged values do not form one chain from the initial value to the final one"


def _check_cas(outs, k):
    counter, seen = outs[0], outs[1]
    vals, x = [], int(k.args[0].data[0])
    for _ in range(len(seen)):
        vals.append(x)
        x = (x * 3 + 1) & 0xFFFFFFFF
    if sorted(int(s) for s in seen) != sorted(vals) or int(counter[0]) != x:
        return "the CAS loop's values are not the chain x -> 3x+1 applied once per thread"
    return None


def _atomics():
    c = "atomics"
    r = rng_for("atom")
    ha = r.integers(-(1 << 31), 1 << 31, 300).astype(np.int32)
    K("atom_histogram", c, [In(ha), InOut(np.zeros(16, np.int32)), Val(np.int32(300))], block=(64, 1, 1),
      grid=(2, 1, 1))
    sv = np.concatenate([F32_SMALL, F32_SMALL[::-1], rand_f32(r, 32, 3)])[:64]
    sd = np.concatenate([F32_SMALL[5:], f32([0x00000003, 0x80000002, 0x00400000, 0x00000001]), F32_SMALL,
                         rand_f32(r, 64, 3)])[:64]
    K("atom_add_float_slots", c, [InOut(sv.copy()), In(sd.astype(np.float32)), Out("f4", 64)], block=(64, 1, 1),
      note="float atomics flush subnormals on the GPU")
    dv = np.concatenate([F64_SMALL, F64_SMALL[::-1], r.standard_normal(40)])[:64]
    K("atom_add_double_slots", c, [InOut(dv.copy()), In(np.roll(dv, 3)), Out("f8", 64)], block=(64, 1, 1))
    hv = np.concatenate([H16_EDGES, H16_EDGES[::-1], half_bits("ah", H16_EDGES[:0], 76)])[:128]
    K("atom_add_half2_slots", c, [InOut(hv.view(np.uint32).copy()), In(np.roll(hv, 5).view(np.uint32)),
                                  Out("u4", 64)], block=(64, 1, 1))
    K("atom_ticket", c, [InOut(np.zeros(1, np.int32)), Out("i4", 128)], block=(64, 1, 1), grid=(2, 1, 1),
      cmp=Sorted((1,)))
    fo = (np.array([1e8, -3e7, 12345.678, 0.001, 7.5, -2.25e6, 3.14159, 1e-3] * 8, np.float32)
          * np.float32(1) + rand_f32(r, 64, 1))
    K("atom_float_order", c, [InOut(np.array([1.0], np.float32)), In(fo.astype(np.float32)), Out("f4", 64)],
      block=(32, 1, 1), grid=(2, 1, 1),
      cmp=Check(_check_float_order, "the old values form one order of the adds, which gives the final sum"))
    K("atom_exch_chain", c, [InOut(np.array([-5], np.int32)), Out("i4", 64)], block=(32, 1, 1), grid=(2, 1, 1),
      cmp=Check(_check_exch_chain, "the exchanged values form one chain"))
    K("atom_cas_increment", c, [InOut(np.array([1], np.uint32)), Out("u4", 64)], block=(64, 1, 1),
      cmp=Check(_check_cas, "each thread applied x -> 3x+1 exactly once"))
    cv = rand_bits32(r, 64).astype(np.uint64) << np.uint64(32) | rand_bits32(r, 64).astype(np.uint64)
    cmpv = np.where(np.arange(64) % 2 == 0, cv, cv ^ np.uint64(1))
    K("atom_cas_edges", c, [InOut(cv.copy()), In(cmpv), In(rand_bits32(r, 64).astype(np.uint64) * np.uint64(3)),
                            Out("u8", 128)], block=(64, 1, 1))
    K("atom_min_max", c, [InOut(np.array([0, 0], np.int32)), InOut(np.array([0xFFFFFFFF, 0], np.uint32)),
                          InOut(np.array([0, 0], np.int64)), InOut(np.array([2 ** 64 - 1, 0], np.uint64)),
                          In(unary_i32("amm", 64))], block=(64, 1, 1))
    K("atom_bitwise", c, [InOut(np.array([0xFFFFFFFF, 0, 0x12345678, 0xFFFFFFFF], np.uint32)),
                          InOut(np.array([0, 0xF0F0], np.uint64)), In(rand_bits32(r, 64))], block=(64, 1, 1))
    K("atom_inc_dec", c, [InOut(np.array([3, 2], np.uint32)), Out("u4", 128)], block=(64, 1, 1),
      cmp=Check(_check_inc_dec, "the old values are the wrap sequences of atomicInc(9) and atomicDec(5)"))
    K("atom_add_u64", c, [InOut(np.array([2 ** 64 - 5, 0, 0], np.uint64)),
                          In(rand_bits32(r, 64).astype(np.uint64) << np.uint64(31))], block=(64, 1, 1))
    K("atom_shared_hist", c, [In(rand_bits32(r, 300).view(np.int32)), Out("i4", 34), Val(np.int32(300))],
      block=(128, 1, 1))
    ev = np.resize(np.array([1, 2, 0.5, 0.25, 3, 4, 1024, 0.125], np.float32), 128)
    K("atom_add_float_sum_exact", c, [InOut(np.array([0.0, 0.0], np.float32)), In(ev)], block=(64, 1, 1),
      grid=(2, 1, 1))
    sub = f32([0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00400000, 0x00800000, 0x80800000, 0x00000003])
    K("atom_shared_float_subnormal", c, [In(np.concatenate([sub, sub[::-1], F32_SMALL, rand_f32(r, 32, 30)])),
                                         Out("f4", 128)], block=(64, 1, 1), note="shared float atomics and .ftz")
    dv2 = np.array([1e16, 1.0, 0.5, -3e15, 2.0 ** -30, 7.25, -1e16, 3.0] * 8) + r.standard_normal(64)
    K("atom_double_order", c, [InOut(np.array([1.0])), In(dv2), Out("f8", 64)], block=(32, 1, 1), grid=(2, 1, 1),
      cmp=Check(_check_double_order, "the old values form one order of the double adds, which gives the final sum"))
    K("atom_block_scope", c, [InOut(np.zeros(2, np.int32)), Out("i4", 128)], block=(64, 1, 1), grid=(2, 1, 1),
      cmp=Sorted((1,)))


def _check_inc_dec(outs, k):
    c, old = outs[0], outs[1]
    inc, dec = [], []
    x, y = int(k.args[0].data[0]), int(k.args[0].data[1])
    for _ in range(len(old) // 2):
        inc.append(x); dec.append(y)  # noqa: E702
        x = 0 if x >= 9 else x + 1
        y = 5 if (y == 0 or y > 5) else y - 1
    if sorted(old[0::2].tolist()) != sorted(inc) or sorted(old[1::2].tolist()) != sorted(dec):
        return "the old values are not the atomicInc/atomicDec wrap sequences"
    if int(c[0]) != x or int(c[1]) != y:
        return f"the final counters are {int(c[0])}, {int(c[1])}; the sequences end at {x}, {y}"
    return None


def _printf():
    c = "printf"
    r = rng_for("printf")
    ia = np.concatenate([I32_EDGES[:20], r.integers(-100000, 100000, 44).astype(np.int32)])
    K("printf_ints", c, [In(ia), In(np.resize(I64_EDGES, 64))], block=(64, 1, 1), cmp=Printf())
    fa = np.concatenate([F32_EDGES[:40], rand_f32(r, 24, 8)])
    K("printf_floats", c, [In(fa), In(np.resize(F64_EDGES, 64))], block=(64, 1, 1), cmp=Printf())
    K("printf_widths_flags", c, [In(ia)], block=(64, 1, 1), cmp=Printf())
    K("printf_strings", c, [In(r.integers(0, 64, 64).astype(np.int32))], block=(64, 1, 1), cmp=Printf())
    K("printf_diverged_warps", c, [In(np.resize(ia, 128))], block=(128, 1, 1),
      cmp=Printf())
    K("printf_special_floats", c, [In(F32_EDGES[:32])], block=(32, 1, 1), cmp=Printf())
    K("printf_more_formats", c, [In(ia), In(np.resize(F64_EDGES, 64))], block=(64, 1, 1), cmp=Printf())


def _mma():
    c = "mma"
    r = rng_for("mma")

    def h(n, spread=3):
        return (r.standard_normal(n) * 2.0 ** r.integers(-spread, spread + 1, n)).astype(np.float16).view(np.uint16)

    def bf(n):
        x = (r.standard_normal(n) * 2.0 ** r.integers(-8, 9, n)).astype(np.float32)
        return (x.view(np.uint32) >> 16).astype(np.uint16)

    cf = (r.standard_normal(128) * 2.0 ** r.integers(-6, 7, 128)).astype(np.float32)
    K("mma_f16_f32_m16n8k16", c, [In(h(256).view(np.uint32)), In(h(128).view(np.uint32)), In(cf), Out("f4", 128)],
      note="accumulation order and rounding of mma.sync, measured")
    K("mma_bf16_f32_m16n8k16", c, [In(bf(256).view(np.uint32)), In(bf(128).view(np.uint32)), In(cf),
                                   Out("f4", 128)])
    K("mma_f16_f16_m16n8k16", c, [In(h(256).view(np.uint32)), In(h(128).view(np.uint32)),
                                  In(h(128).view(np.uint32)), Out("u4", 64)])
    K("mma_f16_f32_m16n8k8", c, [In(h(128).view(np.uint32)), In(h(64).view(np.uint32)), In(cf), Out("f4", 128)])
    tf = (r.standard_normal(256) * 2.0 ** r.integers(-10, 11, 256)).astype(np.float32)
    K("mma_tf32_m16n8k8", c, [In(tf[:128].view(np.uint32)), In(tf[128:192].view(np.uint32)), In(cf), Out("f4", 128)],
      note="tf32 operands given with all 23 mantissa bits: what the unit ignores is measured")
    s8a = r.integers(-128, 128, 512).astype(np.int8)
    s8a[:16] = -128
    s8b = r.integers(-128, 128, 256).astype(np.int8)
    s8b[:16] = -128
    ci = np.concatenate([np.array([0x7FFFFF00, -0x7FFFFF00, 0x7FFFFFFF, -0x80000000], np.int32),
                         r.integers(-(1 << 20), 1 << 20, 124).astype(np.int32)])
    K("mma_s8_s32_m16n8k32", c, [In(s8a.view(np.uint32)), In(s8b.view(np.uint32)), In(ci), Out("i4", 256)])
    rows = r.permutation(32).astype(np.int32)
    K("mma_ldmatrix_forms", c, [In(np.arange(128, dtype=np.uint32) * np.uint32(0x00020002) + np.uint32(0x00010000)),
                                In(rows), Out("u4", 32 * 15)])
    K("mma_ldmatrix_gemm", c, [In(h(256, 2)), In(h(128, 2)), Out("f4", 128)])
    cw = (r.standard_normal(2048) * 2.0 ** r.integers(-6, 7, 2048)).astype(np.float32)
    K("wgmma_rs_bf16_m64n32k16", c, [In(bf(1024).view(np.uint32)), In(bf(512).view(np.uint32)), In(cw),
                                     Out("f4", 2048)], block=(128, 1, 1),
      note="wgmma with A's fragment from registers; the block FMA's alignment and truncation, measured")



def _sched():
    c = "sched"
    K("sched_warp_spinlock", c, [InOut(np.zeros(1, np.int32)), InOut(np.zeros(1, np.int32)), Out("i4", 32)],
      cmp=Sorted((2,)), note="needs independent thread scheduling inside the warp")
    K("sched_two_block_handshake", c, [InOut(np.zeros(2, np.int32)), InOut(np.zeros(128, np.int32)), Out("i4", 128)],
      grid=(2, 1, 1), block=(64, 1, 1), note="both blocks must be resident together")
    K("sched_cluster_nanosleep", c, [InOut(np.zeros(1, np.int32)), Out("i4", 64)], grid=(2, 1, 1),
      note="a CTA in __nanosleep is waiting for time to pass, not idle")
    K("sched_intra_block_flag", c, [Out("i4", 32)], block=(64, 1, 1))
    K("sched_producer_consumer", c, [In(rng_for("pc").integers(-1000, 1000, 256).astype(np.int32)), Out("i4", 128)],
      block=(128, 1, 1))
    K("sched_racy_increment", c, [InOut(np.zeros(1, np.int32))], block=(64, 1, 1), cmp=AnyOf((1, 2, 3)))
    K("sched_racy_last_writer", c, [InOut(np.zeros(1, np.int32)), Out("i4", 1)], block=(128, 1, 1),
      cmp=AnyOf((1, 2, 3, 4)))


