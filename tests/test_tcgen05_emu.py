"""The sm_100a kernels executed in the PTX emulator (bwlab.emu.isa.asynchronous.tcgen05), compared with the models, and
the tcgen05 protocol: one deliberately broken kernel per rule, each raising the named error.

No GPU is needed (the emulated tier runs the sm_100a PTX that NVRTC emits). Blackwell's accumulation
rounding has not been measured; the cases use operands whose sums are exact, so what is compared is
which element lands where (bwlab.umma.model says the same)."""
from __future__ import annotations

import numpy as np
import pytest

from bwlab import emu, umma
from bwlab.emu import (PeerExited, ProtocolError, ProxyFenceMissing, TcgenFenceMissing, TmemAllocError, TmemAllocHang,
                       TmemLaneQuarter, TmemLeak)
from bwlab.runtime import EMULATED, MbarrierTimeout, launch
from bwlab.source import source_text
from bwlab.umma.runner import UMMA_BARRIERS

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

TEACH = umma.UmmaCase("f16", "f32", 128, 64, 64, b_base=16384)


@pytest.fixture(autouse=True)
def _emulated(monkeypatch):
    monkeypatch.setenv("BWLAB_BACKEND", "emulated")


def _teach_args(case, xp=emu):
    ad, bd = case.descriptors()
    img = case.smem_image()
    out = xp.zeros((128, case.tmem_columns), np.uint32)
    return out, (xp.asarray(img), np.uint32(img.size), xp.asarray(ad), xp.asarray(bd), np.uint32(case.k_blocks),
                 np.uint32(case.idesc), out, np.uint32(case.tmem_columns))


def _launch_teach(module, case=TEACH):
    out, args = _teach_args(case)
    launch(module, "teach_umma", (1,), (128,), args, barrier_names=UMMA_BARRIERS)
    return out.get()


# ------------------------------------------------------------------------------------------------
# the kernels against their models
# ------------------------------------------------------------------------------------------------

def test_teach_umma_equals_model():
    assert TEACH.check(umma.run_teach_umma(TEACH)).ok


UMMA_CASES = [
    umma.UmmaCase("f16", "f32", 128, 256, 64),
    umma.UmmaCase("bf16", "f32", 128, 64, 64, "MN", "128B", "MN", "64B", 1024, 32768, accumulate=True),
    umma.UmmaCase("f16", "f32", 64, 32, 32, "K", "32B", "MN", "none", 2048, 16384),
    umma.UmmaCase("f16", "f16", 128, 16, 64, "K", "none", "K", "64B", 16, 40960),
    umma.UmmaCase("tf32", "f32", 128, 128, 32, "K", "128B", "MN", "128B_base32B", 0, 65536),
]


@pytest.mark.parametrize("case", UMMA_CASES, ids=lambda c: c.label())
def test_umma_sm100_equals_model(case):
    got = umma.run_umma(case)
    assert np.array_equal(got, case.model()), case.check(got)


# ------------------------------------------------------------------------------------------------
# the timeout path
# ------------------------------------------------------------------------------------------------

FIXED_TEARDOWN = """    if (warp == 0) {
        if (!mma_complete) tcgen05_wait_drained(&mma_done, 0);
        tcgen05_dealloc(tmem, tmem_cols);
    }"""
AUDITED_TEARDOWN = "    if (warp == 0 && mma_complete) tcgen05_dealloc(tmem, tmem_cols);"


def test_forced_timeout_reports_the_tmem_leak_of_the_audited_teach_umma():
    """teach_umma.cu as issue 20's audit found it: a bounded wait that gives up skipped tcgen05.dealloc. A
    budget of 0 ns forces the timeout; the emulator names the leak."""
    text = source_text("teach_umma.cu")
    assert text.count(FIXED_TEARDOWN) == 1
    m = emu.RawModule(code=text.replace(FIXED_TEARDOWN, AUDITED_TEARDOWN), options=("-DBW_WAIT_TIMEOUT_NS=0",),
                      arch="sm_100a", name="teach_umma.cu")
    with pytest.raises(TmemLeak, match=r"exits with TMEM still allocated: 64 columns.*bounded mbarrier wait"):
        _launch_teach(m)


@pytest.mark.parametrize("file", ["teach_umma.cu", "umma_sm100.cu"])
def test_forced_timeout_frees_tmem_and_the_next_launch_runs(file):
    """Today's kernels free TMEM on the timeout path (after waiting for the commit on their own budget):
    the launch reports MbarrierTimeout, not a leak, and the next launch runs and equals the model."""
    case = TEACH
    if file == "teach_umma.cu":
        forced = EMULATED.load(file, defines={"BW_WAIT_TIMEOUT_NS": "0"}, arch="sm_100a")
        with pytest.raises(MbarrierTimeout, match="mma_done"):
            _launch_teach(forced, case)
        assert np.array_equal(_launch_teach(EMULATED.load(file, arch="sm_100a"), case), case.model())
    else:
        forced = EMULATED.load(file, defines={"BW_WAIT_TIMEOUT_NS": "0"}, arch="sm_100a")
        with pytest.raises(MbarrierTimeout, match="mma_done"):
            umma.run_umma(case, module=forced)
        assert np.array_equal(umma.run_umma(case), case.model())


def test_forced_timeout_in_full_flow_frees_tmem():
    """full_flow_sm100.cu with no time to wait (BW_WAIT_TIMEOUT_NS 0): first on the TMA's `full` barrier
    (no MMA issued), then, with the load waited for without a budget, on `mma_done` (MMAs in flight). Both
    report MbarrierTimeout and free TMEM; the next launch equals the model."""
    from bwlab.flow import runner
    from bwlab.flow.case import GPU_SOURCES
    from bwlab.flow.model import flow_model
    from bwlab.flow.problem import FlowProblem
    from bwlab.flow.trace import Trace
    from bwlab.lab import TeachingKernel
    p = FlowProblem(3)
    k = TeachingKernel("full_flow_sm100.cu")
    k = TeachingKernel(k.file, "#define BW_WAIT_TIMEOUT_NS 0ull\n" + k.text)
    with pytest.raises(MbarrierTimeout, match="full"):
        runner.run_hardware(p, kernel=k)
    k2 = k.replace("const bool loaded = mbarrier_wait(&full, 0, BAR_FULL, 2 * TILE_BYTES);",
                   "while (!mbarrier_try_wait_parity(&full, 0)) {}\n    const bool loaded = true;")
    with pytest.raises(MbarrierTimeout, match="mma_done"):
        runner.run_hardware(p, kernel=k2)
    got = Trace("hardware", p, runner.run_hardware(p), GPU_SOURCES["hardware"])
    assert flow_model(p).compare(got, "emulator").ok



def test_teach_tmem_equals_model():
    from bwlab.tmem import case, teach
    assert np.array_equal(case.run_teach(), teach.teach_model())


def _forms():
    from bwlab.tmem.forms import TmemAccess
    return [TmemAccess("32x32b", 8), TmemAccess("16x64b", 4, True), TmemAccess("16x128b", 2),
            TmemAccess("16x256b", 8), TmemAccess("16x32bx2", 4, True), TmemAccess("32x32b", 32)]


@pytest.mark.parametrize("access", _forms(), ids=lambda a: a.label())
def test_tmem_sm100_roundtrips_equal_model(access):
    from bwlab.tmem import model, runner
    img = model.pattern_image(3)
    assert np.array_equal(runner.run_ld_roundtrip(access, img, 32), model.ld_roundtrip_model(access, img, 32))
    regs = model.register_pattern(access, 2)
    got = runner.run_st_roundtrip(access, img, regs, 32)
    assert model.compare_st_images(access, model.st_roundtrip_model(access, img, regs, 32), got, 32) == 0


def test_full_flow_sm100_taps_equal_the_model_hop_by_hop():
    from bwlab.flow import runner
    from bwlab.flow.case import GPU_SOURCES
    from bwlab.flow.model import flow_model
    from bwlab.flow.problem import FlowProblem
    from bwlab.flow.trace import Trace
    p = FlowProblem(3)
    got = Trace("hardware", p, runner.run_hardware(p), GPU_SOURCES["hardware"])
    res = flow_model(p).compare(got, "emulator")
    assert res.ok, str(res)
    assert len(res.results) == 9


LADDER = [(1, (128, 256, 128)), (2, (128, 256, 256)), (3, (128, 256, 256)), (4, (256, 512, 192)),
          (5, (512, 512, 128)), (6, (512, 512, 128))]


@pytest.mark.parametrize("step,shape", LADDER, ids=[f"s{s}" for s, _ in LADDER])
def test_gemm_sm100_ladder_equals_a_bt(step, shape):
    from bwlab.gemm import sm100
    A, B = sm100.example_inputs(*shape, seed=step)
    c, run = sm100.run_sm100_emulated(step, A, B)
    assert np.array_equal(c, sm100.reference_bf16(A, B))
    assert not run.warnings, run.warnings


# ------------------------------------------------------------------------------------------------
# the protocol: one broken kernel per rule
# ------------------------------------------------------------------------------------------------

BROKEN = r"""
#include "ptx.cuh"
enum { OK = 0, LEAK, LANE_QUARTER, READ_BEFORE_WAIT, DEALLOC_NOT_ALLOCATED, ALLOC_HANG, NO_FENCE_BEFORE,
       NO_FENCE_AFTER, DEALLOC_OTHER_WARP };
extern "C" __global__ void broken(u32* out, u32 mode) {
    __shared__ alignas(16) u32 slot;
    const u32 warp = warpid_in_cta();
    const u32 cols = mode == ALLOC_HANG ? 512 : 32;
    if (warp == 0) {
        tcgen05_alloc(&slot, cols);
        if (mode == ALLOC_HANG) tcgen05_alloc(&slot, 32);   // nobody else can ever free a column
        tcgen05_relinquish_alloc_permit();
    }
    tcgen05_fence_before_thread_sync();
    __syncthreads();
    tcgen05_fence_after_thread_sync();
    const u32 tmem = slot;
    const u32 quarter = mode == LANE_QUARTER ? (warp + 1) % 4 : warp % 4;
    u32 r[8];
    tcgen05_ld_32x32b_x8(r, tmem + ((32u * quarter) << 16));
    if (mode != READ_BEFORE_WAIT) tcgen05_wait_ld();
    out[threadIdx.x] = r[0] + r[7];
    tcgen05_wait_ld();
    if (mode != NO_FENCE_BEFORE) tcgen05_fence_before_thread_sync();
    __syncthreads();
    if (mode != NO_FENCE_AFTER) tcgen05_fence_after_thread_sync();
    if (warp == (mode == DEALLOC_OTHER_WARP ? 1u : 0u) && mode != LEAK) tcgen05_dealloc(tmem + (mode == DEALLOC_NOT_ALLOCATED ? 32 : 0), cols);
}
"""

MODES = dict(OK=0, LEAK=1, LANE_QUARTER=2, READ_BEFORE_WAIT=3, DEALLOC_NOT_ALLOCATED=4, ALLOC_HANG=5,
             NO_FENCE_BEFORE=6, NO_FENCE_AFTER=7, DEALLOC_OTHER_WARP=8)


@pytest.fixture(scope="module")
def broken():
    return emu.RawModule(code=BROKEN, arch="sm_100a", name="broken_tcgen05.cu")


def _run_broken(mod, mode):
    out = emu.zeros(128, np.uint32)
    mod.get_function("broken")((1,), (128,), (out, np.uint32(MODES[mode])))
    return out.get()


def test_broken_kernel_ok_mode_runs_clean(broken):
    assert np.array_equal(_run_broken(broken, "OK"), np.zeros(128, np.uint32))
    assert not emu.last_launch().warnings


def test_dealloc_from_another_warp_is_a_warning(broken):
    """The ISA asks one warp of the CTA to allocate and free; it does not say the same one (bwlab.tmem's
    allocator model: a note, not an error)."""
    _run_broken(broken, "DEALLOC_OTHER_WARP")
    assert any("tcgen05.dealloc from warp 1 of the allocation warp 0" in x for x in emu.last_launch().warnings)


@pytest.mark.parametrize("mode,error,rule", [
    ("LEAK", TmemLeak, r"exits with TMEM still allocated: 32 columns at column 0 .*tcgen05.dealloc before it exits"),
    ("LANE_QUARTER", TmemLaneQuarter, r"warp (\d) .*at TMEM lane \d+ touches lanes \d+\.\.\d+, but warp \1 may access lanes \d+\.\.\d+ only"),
    ("READ_BEFORE_WAIT", ProtocolError, r"reads a destination register of the tcgen05.ld at .* before tcgen05.wait::ld"),
    ("DEALLOC_NOT_ALLOCATED", TmemAllocError, r"tcgen05.dealloc of 0x00000020 .*holds no allocation starting there"),
    ("ALLOC_HANG", TmemAllocHang, r"tcgen05.alloc of 32 columns can never be satisfied: 0 of 512 columns are free"),
    ("NO_FENCE_BEFORE", TcgenFenceMissing, r"tcgen05.dealloc is ordered by bar.sync 0 after the tcgen05 operation of "
                                           r"CTA \(0, 0, 0\) warp [123] .*did not execute tcgen05.fence::before_thread_sync"),
    ("NO_FENCE_AFTER", TcgenFenceMissing, r"tcgen05.dealloc comes after bar.sync 0.*executed no "
                                          r"tcgen05.fence::after_thread_sync"),
])
def test_each_protocol_rule_is_named(broken, mode, error, rule):
    with pytest.raises(error, match=rule) as e:
        _run_broken(broken, mode)
    assert "CTA (0, 0, 0)" in str(e.value) and "broken_tcgen05.cu:" in str(e.value)   # the CTA and the line


def test_mma_operands_written_without_fence_proxy_async():
    text = source_text("teach_umma.cu")
    assert text.count("    fence_proxy_async_shared_cta();\n") == 1
    m = emu.RawModule(code=text.replace("    fence_proxy_async_shared_cta();\n", ""), arch="sm_100a",
                      name="teach_umma.cu")
    with pytest.raises(ProxyFenceMissing, match=r"tcgen05.mma operand A .*fence.proxy.async"):
        _launch_teach(m)


PAIR = r"""
#include "ptx.cuh"
extern "C" __global__ void __cluster_dims__(2, 1, 1) pair(u32 mode) {
    __shared__ alignas(16) u32 slot;
    if (cluster_ctarank() == 1 && mode == 1) return;          // the odd CTA leaves the pair alone
    if (cluster_ctarank() == 0) __nanosleep(100000);           // the even CTA comes later
    if (warpid_in_cta() == 0) {
        tcgen05_alloc_cta_group2(&slot, 32);
        tcgen05_relinquish_alloc_permit_cta_group2();
    }
    tcgen05_fence_before_thread_sync();
    __syncthreads();
    tcgen05_fence_after_thread_sync();
    if (warpid_in_cta() == 0) tcgen05_dealloc_cta_group2(slot, 32);
}
"""


def test_cta_group2_with_the_peer_exited():
    m = emu.RawModule(code=PAIR, arch="sm_100a", name="pair.cu")
    m.get_function("pair")((2,), (32,), (np.uint32(0),))      # both CTAs: the collectives meet
    with pytest.raises(PeerExited, match=r"tcgen05.alloc with .cta_group::2 while the peer CTA \(1, 0, 0\)"):
        m.get_function("pair")((2,), (32,), (np.uint32(1),))


@pytest.mark.parametrize("step,shape", LADDER, ids=[f"s{s}" for s, _ in LADDER])
def test_forced_timeout_in_the_ladder_frees_tmem_and_the_next_launch_runs(step, shape):
    """Issue 20's audit: every step returned without tcgen05.dealloc when a bounded wait gave up (the emulator
    reported TmemLeak on a forced timeout). Now the MMA thread ends with a commit on `drained` and the
    deallocating warp waits for it on every path: a forced timeout is reported, TMEM is freed, and the next
    launch equals A·Bᵀ."""
    from bwlab.gemm import sm100
    A, B = sm100.example_inputs(*shape, seed=step)
    with pytest.raises((MbarrierTimeout, RuntimeError), match=r"gave up|did not complete"):
        sm100.run_sm100_emulated(step, A, B, defines={"BW_WAIT_TIMEOUT_NS": "0"})
    c, _ = sm100.run_sm100_emulated(step, A, B)
    assert np.array_equal(c, sm100.reference_bf16(A, B))


def test_tmem_freed_or_read_while_an_mma_still_writes_it():
    """What the drain prevents: freeing TMEM (or reading it) right after a timeout, while the MMA is still running."""
    text = source_text("teach_umma.cu")
    no_drain = text.replace(FIXED_TEARDOWN, "    if (warp == 0) tcgen05_dealloc(tmem, tmem_cols);")
    m = emu.RawModule(code=no_drain, options=("-DBW_WAIT_TIMEOUT_NS=0",), arch="sm_100a", name="teach_umma.cu")
    with pytest.raises(TmemAllocError, match=r"tcgen05.dealloc of columns 0..63 while tcgen05.mma .* still writes"):
        _launch_teach(m)
    assert text.count("    if (mma_complete) {") == 1
    read_anyway = text.replace("    if (mma_complete) {", "    if (true) {")
    m = emu.RawModule(code=read_anyway, options=("-DBW_WAIT_TIMEOUT_NS=0",), arch="sm_100a", name="teach_umma.cu")
    with pytest.raises(ProtocolError, match=r"tcgen05.ld of columns .* while tcgen05.mma .* still writes"):
        _launch_teach(m)


def test_mbarrier_init_not_fenced_before_the_async_proxy_uses_it():
    text = source_text("teach_umma.cu")
    line = "        fence_mbarrier_init_release_cluster();  // the init is visible to tcgen05.commit\n"
    assert text.count(line) == 1
    m = emu.RawModule(code=text.replace(line, ""), arch="sm_100a", name="teach_umma.cu")
    with pytest.raises(ProtocolError, match=r"tcgen05.commit signals the mbarrier .* without "
                                            r"fence.mbarrier_init.release.cluster"):
        _launch_teach(m)


def test_ladder_timeline_in_virtual_time():
    """s4's own stamps in the emulator: CTA 0 walks 2 tiles of 3 k-blocks; each piece of work ends after it
    starts, and the epilogue of a tile ends after the MMA issuer finished that tile's last k-block."""
    from bwlab.gemm import sm100
    A, B = sm100.example_inputs(256, 512, 192, seed=4)
    c, _, st = sm100.run_sm100_emulated(4, A, B, stamps=True)
    assert np.array_equal(c, sm100.reference_bf16(A, B))
    reached = (st > 0).all(axis=2).sum(axis=1)
    assert reached.tolist() == [6, 6, 2, 2, 2, 2]
    live = st[(st > 0).all(axis=2)]
    assert (live[:, 1] >= live[:, 0]).all()
    for q in range(4):
        for tile in range(2):
            assert st[2 + q, tile, 1] > st[1, 3 * tile + 2, 1]


def test_one_cta_group_per_kernel():
    from bwlab.compile import CompileError
    mixed = PAIR.replace("tcgen05_relinquish_alloc_permit_cta_group2();", "tcgen05_relinquish_alloc_permit();")
    try:
        m = emu.RawModule(code=mixed, arch="sm_100a", name="pair.cu")
    except CompileError as e:
        # newer ptxas (CUDA 13) refuses the mix itself, before anything runs: the same rule, said earlier
        assert "cta_group" in str(e)
        return
    with pytest.raises(ProtocolError, match=r"\.cta_group::1, but the kernel used \.cta_group::2 at .*same \.cta_group"):
        m.get_function("pair")((2,), (32,), (np.uint32(0),))
