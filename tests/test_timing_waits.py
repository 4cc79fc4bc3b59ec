"""bwlab.timing: what the ladder's kernels do that the replay must see -- wgmma that ptxas serialized, the
order in which a diverged warp's lanes run on the GPU, and what mbarrier waits and arrivals cost -- on toys
whose timeline is known by construction."""
from __future__ import annotations

import pytest

from bwlab.timing import machine, model
from bwlab.timing.trace import FULL_MASK, Trace, _reconverge_order, wgmma_serialized

ENV = model.Env(clock_mhz=1000, active_sms=1, miss=0.0)


def simple_machine(**over):
    m = machine.load("h100_sxm").at()
    m.update(alu_cpi=1.0, tma_issue=0.0, sm_l2_port=100.0, l2_bw=1e18, dram_bw=1e18, tma_latency=300.0,
             mbar_wake=50.0, mbar_try=40.0, mbar_arrive=10.0, mma_flops=4096.0, mma_latency=70.0, launch_us=0.0)
    m.update(over)
    return m


# ---- wgmma that ptxas serialized ---------------------------------------------------------------------------
NOTE = ("ptxas info    : (C7520) Potential Performance Loss: wgmma.mma_async instructions are serialized due to "
        "program dependence on compiler-inserted WG.AR in divergent path in the function 'gemm'")


def test_the_ptxas_note_is_read_for_its_own_kernel():
    assert wgmma_serialized(NOTE, "gemm")
    assert not wgmma_serialized(NOTE, "other_kernel")
    assert not wgmma_serialized("", "gemm") and not wgmma_serialized(None, "gemm")


def test_step_2_is_serialized_and_steps_1_and_3_are_not():
    """What ptxas says of the ladder's files (NVRTC's log; the SASS has a WARPGROUP.DEPBAR after every
    HGMMA of step 2): thread 0's loads inside the math loop are the cause."""
    from bwlab.compile import compile_cuda
    assert wgmma_serialized(compile_cuda("gemm_sm90/s2_pipeline.cu").log, "gemm")
    for f in ("gemm_sm90/s1_one_warpgroup.cu", "gemm_sm90/s3_warp_specialized.cu"):
        assert not wgmma_serialized(compile_cuda(f).log, "gemm"), f


def mma_toy(n, flops, serial):
    tr = Trace(ctas={0: ((0, 0, 0), 0, 0)}, wgmma_serial=serial)
    for w in range(4):
        tr.warps[(0, w)] = [("mma", flops, 0)] * n + [("mma_commit", 0, 0), ("mma_wait", 0, 0), ("exit", 0, 0)]
    return tr


def test_a_serialized_wgmma_waits_for_the_one_before():
    m = simple_machine()
    # a warp's 16-row share of m64n128k16: 65,536 FLOP at 1,024 FLOP/cycle per sub-partition: 64 cycles
    queued = model.replay(mma_toy(8, 65_536, serial=False), m, ENV).cycles
    serial = model.replay(mma_toy(8, 65_536, serial=True), m, ENV).cycles
    assert queued == pytest.approx(8 * 64 + 70, abs=3)
    assert serial == pytest.approx(8 * (64 + 70), abs=3)


# ---- mbarrier waits and arrivals ---------------------------------------------------------------------------
def test_a_wait_on_a_phase_long_complete_costs_the_try_wait():
    tr = Trace(ctas={0: ((0, 0, 0), 0, 0)})
    tr.warps[(0, 0)] = [("marrive", 0, 0)] + [("alu", 0, 0)] * 200 + [("mwait", 0, 0), ("exit", 0, 0)]
    tr.contrib = {(0, 0): [("i", (0, 0), 0)]}
    tl = model.replay(tr, simple_machine(), ENV)
    wait = [x for x in tl.warps[(0, 0)] if x[1] == "mwait"][0]
    assert wait[3] - wait[2] == pytest.approx(40)          # mbar_try, not mbar_wake


def test_arrivals_on_one_barrier_are_applied_one_at_a_time():
    """Four warps arrive at once while a fifth waits: the phase completes after four arrivals' worth of
    the barrier's time, and the waiter runs mbar_wake later."""
    tr = Trace(ctas={0: ((0, 0, 0), 0, 0)})
    for w in range(4):
        tr.warps[(0, w)] = [("marrive", 0, 0), ("exit", 0, 0)]
    tr.warps[(0, 4)] = [("mwait", 0, 0), ("exit", 0, 0)]
    tr.contrib = {(0, 0): [("i", (0, w), 0) for w in range(4)]}
    for arrive in (10.0, 30.0):
        tl = model.replay(tr, simple_machine(mbar_arrive=arrive), ENV)
        wait = [x for x in tl.warps[(0, 4)] if x[1] == "mwait"][0]
        assert wait[3] == pytest.approx(1 + 4 * arrive + 50, abs=2)


# ---- a diverged warp, in the order the GPU runs it ---------------------------------------------------------
LANE0, REST = 0x1, FULL_MASK & ~0x1


def test_lanes_that_ran_ahead_wait_where_the_paths_join():
    """Step 2's pattern: lane 0 waits for a free buffer and issues loads; the emulator let the other lanes
    run ahead meanwhile, past the join (pc 20) into the next iteration's wait (pc 6). On the GPU they meet
    lane 0 at the join first, and from there the warp runs each instruction once."""
    recs = [("alu", 0, 0), ("mwait", 1, 0),                      # lane 0: its wait for the free buffer
            ("alu", 0, 0), ("alu", 0, 0), ("mwait", 2, 0),       # lanes 1-31, ahead: join, loop, next wait
            ("marrive", 0, 0), ("tma_load", 7, 64),              # lane 0: expect_tx, the load
            ("alu", 0, 0), ("alu", 0, 0), ("mwait", 2, 0),       # lane 0 reaches the join: the same three
            ("mma", 1, 0)]                                       # the whole warp
    marks = [(10, LANE0, False), (11, LANE0, False),
             (20, REST, True), (5, REST, False), (6, REST, False),
             (12, LANE0, True), (13, LANE0, True),
             (20, LANE0, False), (5, LANE0, False), (6, LANE0, False),
             (7, FULL_MASK, False)]
    key = (0, 0)
    events = {("i", key, 5)}
    order = _reconverge_order(recs, marks, key, events)
    assert order == [0, 1, 5, 6, 2, 3, 4, 10]
    # a group ahead holding a signal (here an arrival someone waits for) stays where the emulator ran it
    recs2 = list(recs)
    recs2[3] = ("marrive", 0, 0)
    order2 = _reconverge_order(recs2, marks, key, events | {("i", key, 3)})
    assert order2 == list(range(len(recs)))
