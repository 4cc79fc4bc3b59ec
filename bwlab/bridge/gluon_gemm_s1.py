"""Step 1 of the Blackwell GEMM ladder (cuda_src/gemm_sm100/s1_one_stage.cu) written in Gluon.

C = A * B^T, bf16 in, f32 in Tensor Memory, bf16 out; one CTA of four warps per 128 x 256 tile of C,
one SMEM stage: for each 64-wide slice of K, load A and B with TMA, wait, four tcgen05.mma, commit,
wait for the MMAs before the next loads overwrite the stage. Then every warp reads its lane quarter
of the accumulator 32 columns at a time, rounds to bf16 and stores its rows straight to C.

This file needs `triton` (pip install 'bwlab[bridge]'); bwlab.bridge reads it as text otherwise.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.blackwell import (
    TensorMemoryLayout, allocate_tensor_memory, mbarrier, tcgen05_commit, tcgen05_mma, tma)

KERNEL = "gemm_s1"
NUM_WARPS = 4


@gluon.jit
def gemm_s1(a_desc, b_desc, c_ptr, M, N, K, num_warps: gl.constexpr):
    BM: gl.constexpr = a_desc.block_type.shape[0]   # 128: the tile's rows = TMEM lanes
    BK: gl.constexpr = a_desc.block_type.shape[1]   # 64 bf16 = one 128-byte swizzle row
    BN: gl.constexpr = b_desc.block_type.shape[0]   # 256: the tile's columns = TMEM columns
    LD_N: gl.constexpr = 32                         # columns per tcgen05.ld in the epilogue
    m0 = gl.program_id(1) * BM
    n0 = gl.program_id(0) * BN

    a_smem = gl.allocate_shared_memory(a_desc.dtype, a_desc.block_type.shape, a_desc.layout)
    b_smem = gl.allocate_shared_memory(b_desc.dtype, b_desc.block_type.shape, b_desc.layout)
    full = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mma_done = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(full, count=1)
    mbarrier.init(mma_done, count=1)
    acc_layout: gl.constexpr = TensorMemoryLayout([BM, BN], col_stride=1)
    acc = allocate_tensor_memory(gl.float32, [BM, BN], acc_layout)

    # The K loop: one stage, nothing overlaps. Both barriers complete one phase per slice, so the
    # parity to wait for flips every iteration.
    phase = 0
    for kb in range(K // BK):
        mbarrier.expect(full, a_desc.block_type.nbytes + b_desc.block_type.nbytes)
        tma.async_load(a_desc, [m0, kb * BK], full, a_smem)   # coordinates (row, k): outermost first
        tma.async_load(b_desc, [n0, kb * BK], full, b_smem)
        mbarrier.wait(full, phase)
        tcgen05_mma(a_smem, b_smem.permute((1, 0)), acc, use_acc=kb > 0)  # the first slice overwrites D
        tcgen05_commit(mma_done)
        mbarrier.wait(mma_done, phase)   # the stage is free again
        phase ^= 1

    # The epilogue: tcgen05.ld.32x32b gives thread t the row in TMEM lane t; round, store to C.
    slice_layout: gl.constexpr = acc.slice(0, LD_N).get_reg_layout()
    rows = m0 + gl.arange(0, BM, gl.SliceLayout(1, slice_layout))
    for c in gl.static_range(BN // LD_N):
        part = acc.slice(c * LD_N, LD_N).load(slice_layout)
        cols = n0 + c * LD_N + gl.arange(0, LD_N, gl.SliceLayout(0, slice_layout))
        gl.store(c_ptr + rows[:, None] * N + cols[None, :], part.to(gl.bfloat16))


# ---- compile without a GPU --------------------------------------------------------------------------------

def signature():
    """Argument types, constexprs and the specialisation a launch would infer from real tensors: C's
    pointer and N, K divisible by 16 (which lets the epilogue store 16 bytes at a time, as bwlab's does)."""
    ab = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)
    sig = {"a_desc": f"tensordesc<bf16[128,64],{ab!r}>", "b_desc": f"tensordesc<bf16[256,64],{ab!r}>",
           "c_ptr": "*bf16", "M": "i32", "N": "i32", "K": "i32", "num_warps": "constexpr"}
    div16 = [["tt.divisibility", 16]]
    return sig, {"num_warps": NUM_WARPS}, {(2,): div16, (4,): div16, (5,): div16}
