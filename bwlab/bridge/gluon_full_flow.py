"""The whole trip of cuda_src/full_flow_sm100.cu written in Gluon (triton.experimental.gluon).

One CTA of four warps computes D (128 x 128 f32) = A (128 x 64 f16) * B (128 x 64 f16)^T: two TMA loads
on one mbarrier, four tcgen05.mma into Tensor Memory, tcgen05.commit, tcgen05.ld of the accumulator in
32-column slices, st.shared into four 128B-swizzled boxes of 128 x 32, fence.proxy.async and four TMA
stores. Gluon names each hardware step as bwlab's wrappers do; what it chooses for you is the SMEM
placement, the register layouts, which threads issue the single-thread instructions and the barriers
between the steps.

This file needs `triton` (pip install 'bwlab[bridge]'); bwlab.bridge reads it as text otherwise.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.blackwell import (
    TensorMemoryLayout, allocate_tensor_memory, fence_async_shared, mbarrier, tcgen05_commit, tcgen05_mma, tma)

KERNEL = "full_flow"
NUM_WARPS = 4


@gluon.jit
def full_flow(a_desc, b_desc, d_desc, num_warps: gl.constexpr):
    M: gl.constexpr = a_desc.block_type.shape[0]       # 128 rows of A and D
    N: gl.constexpr = b_desc.block_type.shape[0]       # 128 rows of B = columns of D
    BOX_N: gl.constexpr = d_desc.block_type.shape[1]   # 32 f32 = one 128-byte swizzle row per box

    # SMEM for the operands (128B swizzle: the tensor descriptors' NVMMASharedLayout) and two mbarriers.
    a_smem = gl.allocate_shared_memory(a_desc.dtype, a_desc.block_type.shape, a_desc.layout)
    b_smem = gl.allocate_shared_memory(b_desc.dtype, b_desc.block_type.shape, b_desc.layout)
    full = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mma_done = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(full, count=1)
    mbarrier.init(mma_done, count=1)
    # The accumulator: M lanes x N columns of f32 in Tensor Memory (tcgen05.alloc of N columns).
    acc_layout: gl.constexpr = TensorMemoryLayout([M, N], col_stride=1)
    acc = allocate_tensor_memory(gl.float32, [M, N], acc_layout)

    # 1. TMA load: announce the bytes, start both loads, wait for the phase to complete.
    mbarrier.expect(full, a_desc.block_type.nbytes + b_desc.block_type.nbytes)
    tma.async_load(a_desc, [0, 0], full, a_smem)
    tma.async_load(b_desc, [0, 0], full, b_smem)
    mbarrier.wait(full, phase=0)

    # 2. MMA: B is stored N x K (K-major); permute gives the K x N view the product needs. Gluon splits
    #    K = 64 into instructions of K = 16 itself. 3. commit: one arrival once they complete.
    tcgen05_mma(a_smem, b_smem.permute((1, 0)), acc, use_acc=False)
    tcgen05_commit(mma_done)
    mbarrier.wait(mma_done, phase=0)

    # 4. tcgen05.ld, 5. st.shared: each 32-column slice of the accumulator goes to its own swizzled box.
    d_smem = gl.allocate_shared_memory(d_desc.dtype, [N // BOX_N, M, BOX_N], d_desc.layout)
    for c in gl.static_range(N // BOX_N):
        d_smem.index(c).store(acc.slice(c * BOX_N, BOX_N).load())
    # 6. fence: the threads' SMEM writes before the TMA engine reads them. 7. TMA store, then wait.
    fence_async_shared()
    for c in gl.static_range(N // BOX_N):
        tma.async_store(d_desc, [0, c * BOX_N], d_smem.index(c))
    tma.store_wait(pendings=0)


# ---- compile without a GPU --------------------------------------------------------------------------------

def signature():
    """The argument types triton.compile needs without a GPU: the tensor descriptors' element type,
    box shape and SMEM layout (128B swizzle), as a launch with real tensors would specialise them."""
    ab = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)
    d = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=32, rank=2)
    return ({"a_desc": f"tensordesc<fp16[128,64],{ab!r}>", "b_desc": f"tensordesc<fp16[128,64],{ab!r}>",
             "d_desc": f"tensordesc<fp32[128,32],{d!r}>", "num_warps": "constexpr"},
            {"num_warps": NUM_WARPS}, {})
