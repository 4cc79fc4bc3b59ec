"""Step 1 of the Blackwell GEMM ladder (cuda_src/gemm_sm100/s1_one_stage.cu) written in CuTe DSL
(nvidia-cutlass-dsl: `cutlass.cute`).

The same job as bwlab's step 1 and the Gluon twin: C = A * B^T, bf16 in, f32 in Tensor Memory, bf16 out,
one CTA of four warps per 128 x 256 tile, one SMEM stage, nothing overlapped. CuTe describes the data
with layouts and atoms — a tiled MMA built from one tcgen05.mma instruction shape, SMEM layouts derived
from it, TMA atoms and a TMEM copy atom — and `cute.copy` / `cute.gemm` issue the instructions.

This file needs `nvidia-cutlass-dsl` (pip install 'bwlab[bridge]'); bwlab.bridge reads it as text otherwise.
"""
import cutlass
import cutlass.cute as cute
import cutlass.utils.blackwell_helpers as sm100_utils
from cutlass.cute.nvgpu import OperandMajorMode, cpasync, tcgen05
from cutlass.experimental.primitives import tcgen05_fence   # 4.8.1 has it here only
from cutlass.memory import SmemAllocator

BM, BN, BK = 128, 256, 64      # the CTA's tile of C and the K of one stage
TILER = (BM, BN, BK)
THREADS = 128                  # four warps: one TMEM lane quarter each
TX_BYTES = (BM + BN) * BK * 2  # what one stage's two TMA loads bring (bf16)
LD_COLS = 32                   # accumulator columns per tcgen05.ld in the epilogue


@cute.struct
class Barriers:
    full: cute.struct.MemRange[cutlass.Int64, 1]       # the stage's bytes have landed
    mma_done: cute.struct.MemRange[cutlass.Int64, 1]   # tcgen05.commit: the stage's MMAs completed
    tmem_slot: cute.struct.MemRange[cutlass.Int32, 1]  # tcgen05.alloc writes the TMEM address here


@cute.kernel
def gemm_s1(tiled_mma: cute.TiledMma, tma_a: cute.CopyAtom, mA: cute.Tensor, tma_b: cute.CopyAtom,
            mB: cute.Tensor, mC: cute.Tensor, a_layout: cute.ComposedLayout, b_layout: cute.ComposedLayout):
    tidx, _, _ = cute.arch.thread_idx()
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    bx, by, _ = cute.arch.block_idx()

    # SMEM: the barriers, then A and B in the 128B-swizzled layouts the MMA atom asked for.
    smem = SmemAllocator()
    bars = smem.allocate(Barriers)
    full, mma_done = bars.full.data_ptr(), bars.mma_done.data_ptr()
    sA = smem.allocate_tensor(cutlass.BFloat16, a_layout.outer, byte_alignment=1024, swizzle=a_layout.inner)
    sB = smem.allocate_tensor(cutlass.BFloat16, b_layout.outer, byte_alignment=1024, swizzle=b_layout.inner)

    # Setup: warp 0 allocates BN TMEM columns, one thread initialises the barriers.
    if warp == 0:
        cute.arch.alloc_tmem(BN, bars.tmem_slot.data_ptr())
        cute.arch.relinquish_tmem_alloc_permit()
    if tidx == 32:
        cute.arch.mbarrier_init(full, 1)
        cute.arch.mbarrier_init(mma_done, 1)
        cute.arch.mbarrier_init_fence()
    tcgen05_fence("before_thread_sync")   # order tcgen05 work around the CTA barrier (PTX ISA, tcgen05 memory model)
    cute.arch.sync_threads()
    tcgen05_fence("after_thread_sync")
    tmem_ptr = cute.arch.retrieve_tmem_ptr(cutlass.Float32, 16, bars.tmem_slot.data_ptr())

    # This CTA's tiles, partitioned for the MMA and for TMA (one TMA box per operand and stage).
    coord = (bx, by, None)
    gA = cute.local_tile(mA, TILER, coord, proj=(1, None, 1))   # (BM, BK, k-tiles)
    gB = cute.local_tile(mB, TILER, coord, proj=(None, 1, 1))   # (BN, BK, k-tiles)
    gC = cute.local_tile(mC, TILER, coord, proj=(1, 1, None))   # (BM, BN)
    thr_mma = tiled_mma.get_slice(0)
    tCgA, tCgB, tCgC = thr_mma.partition_A(gA), thr_mma.partition_B(gB), thr_mma.partition_C(gC)
    tCrA, tCrB = tiled_mma.make_fragment_A(sA), tiled_mma.make_fragment_B(sB)   # SMEM descriptors
    acc = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C(TILER[:2]))
    acc = cute.make_tensor(tmem_ptr, acc.layout)                                 # D in TMEM
    tAsA, tAgA = cpasync.tma_partition(tma_a, 0, cute.make_layout(1), cute.group_modes(sA, 0, 3),
                                       cute.group_modes(tCgA, 0, 3))
    tBsB, tBgB = cpasync.tma_partition(tma_b, 0, cute.make_layout(1), cute.group_modes(sB, 0, 3),
                                       cute.group_modes(tCgB, 0, 3))

    # The K loop, warp 0: load, wait, multiply, wait. The first MMA of the tile overwrites D.
    tiled_mma.set(tcgen05.Field.ACCUMULATE, False)
    if warp == 0:
        for kb in cutlass.range(cute.size(gA, mode=[2])):
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive_and_expect_tx(full, TX_BYTES)
            cute.copy(tma_a, tAgA[(None, kb)], tAsA[(None, 0)], tma_bar_ptr=full)
            cute.copy(tma_b, tBgB[(None, kb)], tBsB[(None, 0)], tma_bar_ptr=full)
            cute.arch.mbarrier_wait(full, kb % 2)
            for k in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):   # BK / 16 instructions
                cute.gemm(tiled_mma, acc, tCrA[(None, None, k, 0)], tCrB[(None, None, k, 0)], acc)
                tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
            with cute.arch.elect_one():
                tcgen05.commit(mma_done)
            cute.arch.mbarrier_wait(mma_done, kb % 2)   # the stage is free again
    tcgen05_fence("before_thread_sync")   # warp 0 saw the last MMAs complete: hand that on to every warp
    cute.arch.sync_threads()
    tcgen05_fence("after_thread_sync")

    # The epilogue: tcgen05.ld.32x32b (thread t <- TMEM lane t) in slices of 32 columns, bf16, to C.
    slices = BN // LD_COLS
    epi = ((cute.size(acc, mode=[0, 0]), cute.size(acc, mode=[0, 1]) // slices),)
    acc_epi, gC_epi = cute.zipped_divide(acc, epi), cute.zipped_divide(tCgC, epi)
    ld_atom = cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x32), cutlass.Float32)
    tmem_ld = tcgen05.make_tmem_copy(ld_atom, acc_epi[None, 0])
    ld = tmem_ld.get_slice(tidx)
    tDtC, tDgC = ld.partition_S(acc_epi), ld.partition_D(gC_epi)
    r_acc = cute.make_rmem_tensor(tDgC[None, None, 0].shape, cutlass.Float32)
    r_c = cute.make_rmem_tensor(tDgC[None, None, 0].shape, cutlass.BFloat16)
    for i in cutlass.range(cute.size(tDtC, mode=[2])):
        cute.copy(tmem_ld, tDtC[None, None, i], r_acc)
        cute.arch.fence_view_async_tmem_load()   # tcgen05.wait::ld: the registers are valid only now
        r_c.store(r_acc.load().to(cutlass.BFloat16))
        cute.autovec_copy(r_c, tDgC[None, None, i])

    # Teardown: every warp is past its TMEM reads; warp 0 frees the columns.
    tcgen05_fence("before_thread_sync")
    cute.arch.sync_threads()
    tcgen05_fence("after_thread_sync")
    if warp == 0:
        cute.arch.dealloc_tmem(tmem_ptr, BN)


@cute.jit
def launch(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor):
    # One tcgen05.mma.cta_group::1.kind::f16 of 128 x 256 x 16, both operands K-major in SMEM.
    op = tcgen05.MmaF16BF16Op(cutlass.BFloat16, cutlass.Float32, (BM, BN, 16), tcgen05.CtaGroup.ONE,
                              tcgen05.OperandSource.SMEM, OperandMajorMode.K, OperandMajorMode.K)
    tiled_mma = cute.make_tiled_mma(op)
    a_layout = sm100_utils.make_smem_layout_a(tiled_mma, TILER, a.element_type, 1)   # one stage
    b_layout = sm100_utils.make_smem_layout_b(tiled_mma, TILER, b.element_type, 1)
    g2s = cpasync.CopyBulkTensorTileG2SOp(tcgen05.CtaGroup.ONE)
    tma_a, ta = cute.nvgpu.make_tiled_tma_atom_A(g2s, a, cute.select(a_layout, mode=[0, 1, 2]), TILER, tiled_mma)
    tma_b, tb = cute.nvgpu.make_tiled_tma_atom_B(g2s, b, cute.select(b_layout, mode=[0, 1, 2]), TILER, tiled_mma)
    grid = cute.ceil_div((*c.layout.shape, 1), TILER[:2])
    gemm_s1(tiled_mma, tma_a, ta, tma_b, tb, c, a_layout, b_layout).launch(grid=grid, block=(THREADS, 1, 1))


# ---- compile without a GPU --------------------------------------------------------------------------------

def compile_ptx() -> str:
    """PTX for sm_100a (run with CUTE_DSL_ARCH=sm_100a): row-major A (M x K), B (N x K), C (M x N) of bf16,
    described by fake tensors whose sizes are runtime values divisible by the tile."""
    import tempfile
    from cutlass.cute.runtime import make_fake_compact_tensor
    M, N, K = (cute.sym_int32(divisibility=d) for d in (BM, BN, BK))
    a = make_fake_compact_tensor(cutlass.BFloat16, (M, K), stride_order=(1, 0), assumed_align=16)
    b = make_fake_compact_tensor(cutlass.BFloat16, (N, K), stride_order=(1, 0), assumed_align=16)
    c = make_fake_compact_tensor(cutlass.BFloat16, (M, N), stride_order=(1, 0), assumed_align=16)
    with tempfile.TemporaryDirectory() as dump:   # --keep-ptx also writes a file: not into the caller's folder
        return cute.compile(launch, a, b, c, options=f"--keep-ptx --dump-dir={dump}").__ptx__
