"""The whole trip of cuda_src/full_flow_sm100.cu written in CuTe DSL (nvidia-cutlass-dsl: `cutlass.cute`).

One CTA of four warps computes D (128 x 128 f32) = A (128 x 64 f16) * B (128 x 64 f16)^T, hop by hop as
bwlab's kernel does: warp 0 starts the two TMA loads on one mbarrier, warp 1 issues the MMAs and
tcgen05.commit, every warp reads its lane quarter of the accumulator 32 columns at a time and stores it
into four 128B-swizzled boxes of 128 x 32, fence.proxy.async, four TMA stores. CuTe derives the SMEM
layouts, the TMA boxes and the register-to-SMEM store from the MMA atom and the epilogue tile.

This file needs `nvidia-cutlass-dsl` (pip install 'bwlab[bridge]'); bwlab.bridge reads it as text otherwise.
"""
import cutlass
import cutlass.cute as cute
import cutlass.utils.blackwell_helpers as sm100_utils
from cutlass.cute.nvgpu import OperandMajorMode, cpasync, tcgen05
from cutlass.experimental.primitives import tcgen05_fence   # 4.8.1 has it here only
from cutlass.memory import SmemAllocator
from cutlass.utils import LayoutEnum

M, N, K = 128, 128, 64
TILER = (M, N, K)
BOX_N = 32                    # 32 f32 = one 128-byte swizzle row: the D boxes are 128 x 32
THREADS = 128
TX_BYTES = (M + N) * K * 2    # both f16 tiles


@cute.struct
class Barriers:
    full: cute.struct.MemRange[cutlass.Int64, 1]       # the TMA loads' bytes
    mma_done: cute.struct.MemRange[cutlass.Int64, 1]   # tcgen05.commit's arrival
    tmem_slot: cute.struct.MemRange[cutlass.Int32, 1]


@cute.kernel
def full_flow(tiled_mma: cute.TiledMma, tma_a: cute.CopyAtom, mA: cute.Tensor, tma_b: cute.CopyAtom,
              mB: cute.Tensor, tma_d: cute.CopyAtom, mD: cute.Tensor, a_layout: cute.ComposedLayout,
              b_layout: cute.ComposedLayout, d_layout: cute.ComposedLayout):
    tidx, _, _ = cute.arch.thread_idx()
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    smem = SmemAllocator()
    bars = smem.allocate(Barriers)
    full, mma_done = bars.full.data_ptr(), bars.mma_done.data_ptr()
    sA = smem.allocate_tensor(cutlass.Float16, a_layout.outer, byte_alignment=1024, swizzle=a_layout.inner)
    sB = smem.allocate_tensor(cutlass.Float16, b_layout.outer, byte_alignment=1024, swizzle=b_layout.inner)
    sD = smem.allocate_tensor(cutlass.Float32, d_layout.outer, byte_alignment=1024, swizzle=d_layout.inner)

    # setup: warp 0 allocates N TMEM columns, one thread initialises the two mbarriers
    if warp == 0:
        cute.arch.alloc_tmem(N, bars.tmem_slot.data_ptr())
        cute.arch.relinquish_tmem_alloc_permit()
    if tidx == 32:
        cute.arch.mbarrier_init(full, 1)
        cute.arch.mbarrier_init(mma_done, 1)
        cute.arch.mbarrier_init_fence()
    tcgen05_fence("before_thread_sync")
    cute.arch.sync_threads()
    tcgen05_fence("after_thread_sync")
    tmem_ptr = cute.arch.retrieve_tmem_ptr(cutlass.Float32, 16, bars.tmem_slot.data_ptr())

    gA = cute.local_tile(mA, TILER, (0, 0, None), proj=(1, None, 1))
    gB = cute.local_tile(mB, TILER, (0, 0, None), proj=(None, 1, 1))
    thr_mma = tiled_mma.get_slice(0)
    tCrA, tCrB = tiled_mma.make_fragment_A(sA), tiled_mma.make_fragment_B(sB)   # SMEM descriptors
    acc = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C(TILER[:2]))
    acc = cute.make_tensor(tmem_ptr, acc.layout)                                 # D in TMEM
    tAsA, tAgA = cpasync.tma_partition(tma_a, 0, cute.make_layout(1), cute.group_modes(sA, 0, 3),
                                       cute.group_modes(thr_mma.partition_A(gA), 0, 3))
    tBsB, tBgB = cpasync.tma_partition(tma_b, 0, cute.make_layout(1), cute.group_modes(sB, 0, 3),
                                       cute.group_modes(thr_mma.partition_B(gB), 0, 3))

    # 1. TMA load: warp 0 announces the bytes and starts both loads; every thread waits
    if warp == 0:
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive_and_expect_tx(full, TX_BYTES)
        cute.copy(tma_a, tAgA[(None, 0)], tAsA[(None, 0)], tma_bar_ptr=full)
        cute.copy(tma_b, tBgB[(None, 0)], tBsB[(None, 0)], tma_bar_ptr=full)
    cute.arch.mbarrier_wait(full, 0)

    # 2. MMA (K = 64 as K / 16 instructions; the first overwrites D), 3. commit
    tiled_mma.set(tcgen05.Field.ACCUMULATE, False)
    if warp == 1:
        for k in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
            cute.gemm(tiled_mma, acc, tCrA[(None, None, k, 0)], tCrB[(None, None, k, 0)], acc)
            tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
        with cute.arch.elect_one():
            tcgen05.commit(mma_done)
    cute.arch.mbarrier_wait(mma_done, 0)
    tcgen05_fence("after_thread_sync")

    # 4. tcgen05.ld (thread t <- TMEM lane t, 32 columns a time), 5. st.shared into box c of D
    acc_epi = cute.zipped_divide(acc, ((cute.size(acc, mode=[0, 0]), BOX_N),))
    tmem_ld = tcgen05.make_tmem_copy(cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x32),
                                                         cutlass.Float32), acc_epi[None, 0])
    tDtC = tmem_ld.get_slice(tidx).partition_S(acc_epi)
    r_acc = cute.make_rmem_tensor(tmem_ld.get_slice(tidx).partition_D(acc_epi)[None, None, 0].shape,
                                  cutlass.Float32)
    smem_st = cute.make_tiled_copy_D(
        sm100_utils.get_smem_store_op(LayoutEnum.ROW_MAJOR, cutlass.Float32, cutlass.Float32, tmem_ld), tmem_ld)
    tRS_sD = smem_st.get_slice(tidx).partition_D(cute.group_modes(sD, 0, 2))
    tRS_rD = smem_st.retile(r_acc)
    for c in cutlass.range_constexpr(N // BOX_N):
        cute.copy(tmem_ld, tDtC[None, None, c], r_acc)
        cute.arch.fence_view_async_tmem_load()   # tcgen05.wait::ld
        cute.copy(smem_st, tRS_rD, tRS_sD[(None, None, c)])

    # 6. fence: the threads' SMEM writes before the TMA engine reads them; then a CTA barrier
    cute.arch.fence_proxy("async.shared", space="cta")
    tcgen05_fence("before_thread_sync")
    cute.arch.sync_threads()
    tcgen05_fence("after_thread_sync")

    # 7. TMA store: warp 0 stores the four boxes, commits the bulk group and waits until they are read
    gD = cute.local_tile(mD, (M, BOX_N), (0, None))
    bSG_sD, bSG_gD = cpasync.tma_partition(tma_d, 0, cute.make_layout(1), cute.group_modes(sD, 0, 2),
                                           cute.group_modes(gD, 0, 2))
    if warp == 0:
        for c in cutlass.range_constexpr(N // BOX_N):
            cute.copy(tma_d, bSG_sD[(None, c)], bSG_gD[(None, c)])
        cute.arch.cp_async_bulk_commit_group()
        cute.arch.cp_async_bulk_wait_group(0, read=True)
        cute.arch.dealloc_tmem(tmem_ptr, N)   # every warp's TMEM reads came before the barrier above


@cute.jit
def launch(a: cute.Tensor, b: cute.Tensor, d: cute.Tensor):
    op = tcgen05.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (M, N, 16), tcgen05.CtaGroup.ONE,
                              tcgen05.OperandSource.SMEM, OperandMajorMode.K, OperandMajorMode.K)
    tiled_mma = cute.make_tiled_mma(op)
    a_layout = sm100_utils.make_smem_layout_a(tiled_mma, TILER, a.element_type, 1)
    b_layout = sm100_utils.make_smem_layout_b(tiled_mma, TILER, b.element_type, 1)
    d_layout = sm100_utils.make_smem_layout_epi(cutlass.Float32, LayoutEnum.ROW_MAJOR, (M, BOX_N), N // BOX_N)
    g2s = cpasync.CopyBulkTensorTileG2SOp(tcgen05.CtaGroup.ONE)
    tma_a, ta = cute.nvgpu.make_tiled_tma_atom_A(g2s, a, cute.select(a_layout, mode=[0, 1, 2]), TILER, tiled_mma)
    tma_b, tb = cute.nvgpu.make_tiled_tma_atom_B(g2s, b, cute.select(b_layout, mode=[0, 1, 2]), TILER, tiled_mma)
    tma_d, td = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), d,
                                            cute.select(d_layout, mode=[0, 1]), (M, BOX_N))
    full_flow(tiled_mma, tma_a, ta, tma_b, tb, tma_d, td, a_layout, b_layout, d_layout).launch(
        grid=(1, 1, 1), block=(THREADS, 1, 1))


# ---- compile without a GPU --------------------------------------------------------------------------------

def compile_ptx() -> str:
    """PTX for sm_100a (run with CUTE_DSL_ARCH=sm_100a): row-major A (128 x 64), B (128 x 64) of f16 and
    D (128 x 128) of f32, described by fake tensors."""
    import tempfile
    from cutlass.cute.runtime import make_fake_compact_tensor
    a = make_fake_compact_tensor(cutlass.Float16, (M, K), stride_order=(1, 0), assumed_align=16)
    b = make_fake_compact_tensor(cutlass.Float16, (N, K), stride_order=(1, 0), assumed_align=16)
    d = make_fake_compact_tensor(cutlass.Float32, (M, N), stride_order=(1, 0), assumed_align=16)
    with tempfile.TemporaryDirectory() as dump:   # --keep-ptx also writes a file: not into the caller's folder
        return cute.compile(launch, a, b, d, options=f"--keep-ptx --dump-dir={dump}").__ptx__
