"""The second outside set (tests/outside/second_*.cu): its kernels and inputs, added to run.py's list.

Written as an ordinary CUDA author would, without reading bwlab/emu: non-inlined calls (structs by value,
pointers to local arrays), recursion with stack arrays, switch statements, __launch_bounds__, dynamic shared
memory, templates, cooperative-groups tiles, block and warp votes, atomics (double, half2, 64-bit CAS loops),
volatile flags between warps, integer and half/bf16 intrinsics, the math library, printf, cuda::std, 3-D grids.
Atomic results are order-independent by construction (integers, dyadic sums, or a sorted multiset).
"""
from __future__ import annotations

import numpy as np

SOURCES = {"second_calls": (), "second_sync": (), "second_math": (), "second_misc": ()}


def add(k, r):
    """Append the second set's kernels with k(name, src, grid, block, args, ...); r is run.py's module."""
    In, Out, InOut = r.In, r.Out, r.InOut
    rng = np.random.default_rng(2029)
    small = rng.integers(-20, 20, 128).astype(np.int32)
    pos = rng.integers(0, 10000, 128).astype(np.int32)
    # ---- second_calls.cu
    c = "second_calls"
    k("call_void_mixed", c, (1,), (64,), [In(r.f32_inputs(200, 64, spread=3)), Out("f4", 128), Out("i4", 64)])
    k("call_struct_byval", c, (1,), (64,), [In(rng.standard_normal(192).astype(np.float32)), Out("f4", 256)])
    k("call_local_ptr", c, (1,), (64,), [In(r.i32_inputs(201, 64) >> 8), Out("i4", 128)])
    k("call_struct_return", c, (1,), (64,), [In(r.f32_inputs(202, 80, spread=2)), Out("f8", 64), Out("f4", 128),
                                             Out("i4", 64)])
    k("call_many_params", c, (1,), (64,), [In(r.i32_inputs(203, 64)), In(r.i64_inputs(204, 64)),
                                           In(r.f32_inputs(205, 64)), In(r.f64_inputs(206, 64)), Out("f8", 64)])
    k("recursion_stack", c, (1,), (64,), [In(pos[:64]), Out("i4", 128)])
    k("recursion_qsort", c, (1,), (32,), [In(rng.standard_normal(320).astype(np.float32)), Out("f4", 320)])
    k("switch_dense", c, (1,), (64,), [In(r.i32_inputs(207, 64)), Out("i4", 64)])
    sw = rng.integers(-5000, 5000, 64).astype(np.int32)
    sw[:12] = [3, 17, 18, 100, 101, 102, 200, 255, 0x1203, 0x7711, -256 + 100, -1]
    k("switch_sparse", c, (1,), (64,), [In(sw), Out("f4", 64)])
    k("switch_in_call", c, (1,), (64,), [In(pos[64:]), In(r.f32_inputs(208, 64, spread=3)), Out("f4", 64)])
    k("bounded", c, (3,), (128,), [In(r.f32_inputs(209, 300)), Out("f4", 300), np.int32(300)])
    k("bounded_regs", c, (1,), (64,), [In(r.f32_inputs(210, 64, spread=2)), Out("f4", 64)])
    k("templ_int", c, (1,), (64,), [In(r.i32_inputs(211, 64) >> 12), Out("i4", 128)])
    k("templ_float", c, (1,), (64,), [In(r.f32_inputs(212, 64)), Out("f4", 128)])
    k("templ_double", c, (1,), (64,), [In(r.f64_inputs(213, 64)), Out("f8", 128)])
    k("templ_half", c, (1,), (64,), [In(r.f16_bits(214, 64)), Out("u2", 128)])
    k("templ_nontype", c, (1,), (64,), [In(r.i32_inputs(215, 128) >> 8), Out("i4", 192)])
    k("call_divergent", c, (1,), (64,), [In(rng.integers(-500, 500, 64).astype(np.int32)), Out("i4", 64)])
    # ---- second_sync.cu
    s = "second_sync"
    k("dyn_shared_carve", s, (2,), (64,), [In(r.f32_inputs(220, 128)), In(r.i32_inputs(221, 128)), Out("f4", 256),
                                           Out("i4", 128)], shared=64 * (4 + 8 + 4 + 2))
    k("dyn_shared_reduce", s, (3,), (128,), [In(r.f64_inputs(222, 384)), Out("f8", 3)], shared=128 * 8)
    k("cg_tile16", s, (1,), (64,), [In(small[:64]), Out("i4", 384)])
    k("cg_tile8", s, (1,), (64,), [In(r.f32_inputs(223, 64, spread=1)), Out("f4", 192), Out("u4", 128)])
    k("cg_coalesced", s, (1,), (64,), [In(small[64:]), Out("i4", 64)])
    k("sync_count", s, (1,), (128,), [In(small), Out("i4", 128)])
    k("warp_votes", s, (1,), (64,), [In(small[32:96]), Out("u4", 384)])
    k("atomic_double", s, (2,), (64,), [In(rng.integers(-800, 800, 128) / 8.0), InOut(np.zeros(3)), Out("i4", 128)])
    k("atomic_half2", s, (2,), (64,), [InOut(np.zeros(8, np.uint32)),
                                       In((rng.integers(-32, 32, 256) / 4.0).astype(np.float16).view(np.uint32)),
                                       InOut(np.zeros(4, np.uint16))])
    k("atomic_cas64", s, (2,), (64,), [In(rng.integers(0, 2 ** 64, 128, dtype=np.uint64)), InOut(np.zeros(1, np.uint64)),
                                       InOut(np.ones(1)), InOut(np.zeros(129, np.uint64))])
    k("atomic_misc32", s, (2,), (64,), [InOut(np.array([0xFFFFFFFF, 0x12345678, 0], np.uint32)),
                                        InOut(np.array([0, 0, 1000], np.int32)), Out("u4", 128)], sorted_outs=(2,))
    k("ldg_readonly", s, (3,), (128,), [In(r.f32_inputs(224, 300)), In(r.i32_inputs(225, 300)), Out("f4", 300),
                                        np.int32(300)])
    k("volatile_flag", s, (1,), (64,), [In(r.i32_inputs(226, 64) >> 4), Out("i4", 32)])
    k("grid_stride", s, (3,), (64,), [In(r.f32_inputs(227, 1000)), Out("f4", 1000), np.int32(1000)])
    k("grid_stride_reduce", s, (4,), (64,), [In(r.i32_inputs(228, 5000)), InOut(np.zeros(1, np.int64)), np.int32(5000)])
    k("grid3d", s, (2, 3, 2), (4, 2, 3), [Out("i4", 288)])
    k("block3d_shared", s, (2, 2), (8, 4, 4), [In(rng.standard_normal(512).astype(np.float32)), Out("f4", 512)])
    k("shared_atomics", s, (1,), (128,), [In(r.i32_inputs(229, 128)), Out("i4", 19)])
    # ---- second_math.cu
    m = "second_math"
    u32 = r.i32_inputs(230, 128).view(np.uint32)
    k("int_intrinsics", m, (2,), (64,), [In(u32), In(r.i32_inputs(231, 128)[::-1].copy().view(np.uint32)),
                                         In(r.i64_inputs(232, 128).view(np.uint64)), Out("u4", 1024), Out("u8", 384)])
    k("div_by_consts", m, (2,), (64,), [In(r.i32_inputs(233, 128)), In(r.i32_inputs(234, 128).view(np.uint32)),
                                        In(r.i64_inputs(235, 128)), Out("i4", 1280), Out("i8", 512)])
    k("long_math", m, (2,), (64,), [In(r.i64_inputs(236, 128)), In(r.i64_inputs(237, 128)[::-1].copy()), Out("i8", 1024)])
    k("half_intrinsics", m, (2,), (64,), [In(r.f32_inputs(238, 128)), In(r.f16_bits(239, 128)), Out("u2", 1536)])
    k("half2_fma_max", m, (2,), (64,), [In(r.f16_bits(240, 256).view(np.uint32)),
                                        In(r.f16_bits(241, 256)[::-1].copy().view(np.uint32)),
                                        In(r.f16_bits(242, 256).view(np.uint32)), Out("u4", 1024)])
    k("bf16_math", m, (2,), (64,), [In(r.f16_bits(243, 128, "bf16")), In(r.f16_bits(244, 128, "bf16")[::-1].copy()),
                                    In(r.f16_bits(245, 128, "bf16")), Out("u2", 1024), Out("f4", 256)])
    k("saturate_f", m, (2,), (64,), [In(r.f32_inputs(246, 128, spread=1)), Out("f4", 512)])
    k("math_more_f", m, (2,), (64,), [In(r.f32_inputs(247, 128, spread=3)), In(r.f32_inputs(248, 128, spread=3)),
                                      In(r.f32_inputs(249, 128, spread=3)), Out("f4", 1024)], cmp="approx")
    ea, eb = r.f32_pairs(250, 128)
    k("math_exact_f", m, (2,), (64,), [In(ea), In(eb), Out("f4", 768), Out("i4", 256)])
    k("double_more", m, (2,), (64,), [In(r.f64_inputs(251, 128)), In(r.f64_inputs(252, 128)[::-1].copy()),
                                      Out("f8", 768)])
    # ---- second_misc.cu
    x = "second_misc"
    k("printf_many", x, (1,), (64,), [In(r.i32_inputs(260, 64)), In(r.f32_inputs(261, 64)), In(r.i64_inputs(262, 64))],
      cmp="printf")
    k("printf_pointer", x, (1,), (64,), [In(pos[:64])], cmp="printf")
    k("printf_loop", x, (1,), (32,), [In(pos[:32])], cmp="printf")
    k("custd_numerics", x, (1,), (64,), [In(r.f32_inputs(263, 64)), In(r.i32_inputs(264, 64)), Out("f4", 256),
                                         Out("i4", 256)])
    k("local_tree", x, (1,), (64,), [In(rng.integers(0, 1000, 128).astype(np.int32)), Out("i4", 128)])
    k("bit_matrix", x, (1,), (64,), [In(r.i32_inputs(265, 64).view(np.uint32)), Out("u4", 64)])
    k("mixed_types", x, (1,), (64,), [In(rng.integers(-128, 128, 64).astype(np.int8)),
                                      In(r.i32_inputs(266, 64).astype(np.int16)),
                                      In(r.i32_inputs(267, 64).astype(np.uint16)), Out("f4", 128), Out("i4", 192)])
