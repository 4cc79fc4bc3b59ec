"""bwlab.checks.mutants (`python -m bwlab.validate mutants`): the locator finds every synchronisation point
and only those; a few mutants the emulator names today must stay named; the known survivors (a broken
rule the emulator does not report yet) are strict xfails, so this list can only shrink.

The whole measurement is `python -m bwlab.validate mutants` (docs/results/mutants_baseline.txt)."""
import pytest

from bwlab.checks import mutants as M


# ---- the locator (no emulator) --------------------------------------------------------------------------------
SNIPPET = """
// mbarrier_arrive(&bar);  a comment is not a call
__device__ __forceinline__ void mbarrier_arrive(u64* bar) { asm volatile("" ::: "memory"); }
__device__ void f(u64* bar, bool ok) {
    /* tcgen05_commit(bar); */
    const char* s = "wgmma_fence();";
    if (laneid() == 0) mbarrier_arrive(bar);
    ok = __any_sync(0xffffffffu, mbarrier_wait(bar, 0, 1, 0)) != 0;
    wgmma_wait_group<1>();
}
"""


def test_call_sites_skip_comments_strings_and_definitions():
    sites = M.call_sites(SNIPPET, "x.cu")
    assert [(s.name, s.statement) for s in sites] == [("mbarrier_arrive", True), ("mbarrier_wait", False),
                                                      ("wgmma_wait_group", True)]
    assert len(M.mask_comments(SNIPPET)) == len(SNIPPET) and "tcgen05_commit" not in M.mask_comments(SNIPPET)


def test_every_kernel_has_mutants_of_every_kind_it_can():
    total = 0
    for name, t in M.TARGETS.items():
        ms = M.mutants_of(name)
        total += len(ms)
        assert ms, name
        assert len({m.id for m in ms}) == len(ms), f"{name}: two mutants with one id"
        for m in ms:
            assert m.new_text and m.before and m.after and m.before != m.after, m.describe()
    ops = {m.op for m in M.mutants_of("sm100/s6_tma_store")}
    assert ops == {"remove", "count+1", "count-1", "tx+16", "tx-16", "early", "depth+1"}
    assert total > 500


def test_the_issues_examples_are_among_the_mutants():
    """The broken kernels the emulator was seen to pass: each is one mutant of the tool."""
    s6 = M.mutants_of("sm100/s6_tma_store")
    after_full = M.find_mutant("sm100/s4_persistent", "remove", "tcgen05_fence_after_thread_sync();", 2)
    assert "tmem_full" in after_full.new_text.split("\n")[after_full.line - 3]     # the fence after that wait
    assert M.find_mutant("sm100/s6_tma_store", "depth+1", "bulk_wait_group_read<1>").after.count("<2>") == 1
    assert M.find_mutant("sm100/s6_tma_store", "remove", "bulk_wait_group<0>()") in s6
    assert M.find_mutant("sm100/s6_tma_store", "remove", "tcgen05_wait_drained") in s6
    assert M.find_mutant("sm90/s6_tma_store", "depth+1", "wgmma_wait_group<1>").after == "wgmma_wait_group<2>();"
    assert M.find_mutant("sm90/s6_tma_store", "remove", "cluster_sync();", 1).line > 120   # the one before exit
    early = M.find_mutant("sm100/s4_persistent", "early", "mbarrier_arrive(&tmem_empty[buf])")
    assert "tmem_rows_to_gmem" in early.after     # the release moved above the reads it releases
    with pytest.raises(LookupError, match="no #5"):
        M.find_mutant("teach_tma", "remove", "__syncthreads();", 5)


def test_header_helpers_are_mutated_for_the_kernels_that_call_them():
    files = {m.file for m in M.mutants_of("sm100/s6_tma_store")}
    assert "gemm_sm100/ladder.cuh" in files                   # pair_sync
    assert not any(m.file.endswith("ladder.cuh") and "mbarrier_wait" in m.before
                   for m in M.mutants_of("sm100/s6_tma_store"))   # never the body of every wait at once


def test_classify():
    from bwlab import emu
    assert M.classify(None, True) == ("pass", "")
    assert M.classify(None, False)[0] == "wrong"
    assert M.classify(emu.ProxyFenceMissing("x"), None) == ("named", "ProxyFenceMissing: x")
    assert M.classify(emu.EmuHang("stuck", "warp 0 waits"), None)[0] == "hang"
    assert M.classify(emu.UnsupportedInstruction("y"), None)[0] == "error"
    assert M.classify(ValueError("z"), None)[0] == "error"


# ---- mutants run in the emulator (a worker each) -------------------------------------------------------------
# Named today: each must stay loud, with this error.
NAMED = [
    ("teach_umma", "remove", "tcgen05_wait_ld();", 0, "ProtocolError"),
    ("teach_umma", "remove", "tcgen05_fence_after_thread_sync();  // TMEM reads", 0, "TcgenFenceMissing"),
    ("teach_tmem", "remove", "tcgen05_wait_ld();", 0, "ProtocolError"),
    ("teach_store", "remove", "fence_proxy_async_shared_cta();", 0, "ProxyFenceMissing"),
    ("teach_wgmma", "depth+1", "wgmma_wait_group<0>();", 0, "ProtocolError"),
    ("teach_tma", "tx+16", "mbarrier_arrive_expect_tx", 0, "MbarrierTimeout"),
    ("teach_multicast", "remove", "cluster_sync();", 0, "ProtocolError"),
    ("sm90/s2_pipeline", "remove", "wgmma_wait_group<0>();", 0, "ProtocolError"),
    # named since the emulator keeps the order of asynchronous work (bwlab.emu.order)
    # (the TMEM address read before the allocating warp wrote it: shared memory's 0xA5 fill, not an address)
    ("teach_tmem", "remove", "__syncthreads();", 0, "TmemAllocError"),
    ("teach_tmem", "remove", "__syncthreads();", 1, "TmemAllocError"),
    ("teach_tmem", "remove", "tcgen05_wait_st();", 0, "TmemStoreNotWaited"),
    ("teach_store", "remove", "bulk_commit_group();", 0, "AsyncInFlightAtExit"),
    ("teach_store", "remove", "bulk_wait_group_read<0>();", 0, "AsyncInFlightAtExit"),
    ("teach_store", "depth+1", "bulk_wait_group_read<0>();", 0, "AsyncInFlightAtExit"),
    ("teach_umma", "remove", "tcgen05_fence_before_thread_sync();", 0, "TcgenFenceMissing"),
    ("teach_wgmma", "remove", "__syncthreads();", 0, "GenericWriteNotOrdered"),
    ("teach_wgmma", "remove", "wgmma_fence();", 0, "WgmmaFenceMissing"),
    ("teach_tma", "remove", "mbarrier_wait(&smem_full", 0, "AsyncWriteNotObserved"),
    ("full_flow_sm100", "remove", "tcgen05_fence_before_thread_sync();", 0, "TcgenFenceMissing"),
    ("full_flow_sm100", "remove", "tcgen05_fence_after_thread_sync();", 0, "TcgenFenceMissing"),
    ("full_flow_sm100", "remove", "bulk_wait_group_read<0>();", 0, "AsyncInFlightAtExit"),
    ("full_flow_sm100", "remove", "mbarrier_wait(&full", 0, "AsyncWriteNotObserved"),
    ("sm90/s1_one_warpgroup", "remove", "__syncthreads();  // every warp's wgmma", 0, "AsyncReadHazard"),
    ("sm90/s1_one_warpgroup", "remove", "wgmma_fence();", 0, "WgmmaFenceMissing"),
    ("sm90/s2_pipeline", "depth+1", "wgmma_wait_group<1>();", 0, "AsyncReadHazard"),
    ("sm90/s2_pipeline", "remove", "wgmma_wait_group<1>();", 0, "AsyncReadHazard"),
    ("sm90/s2_pipeline", "remove", "mbarrier_wait(&empty[ps]", 0, "AsyncReadHazard"),
    ("sm90/s2_pipeline", "early", "mbarrier_arrive(&empty[ps])", 0, "AsyncReadHazard"),
    # an arrival before the phase its previous arrival ended was observed; a lane's tcgen05.ld handed on by
    # lane 0 alone (no __syncwarp after the fence)
    ("sm90/sk_split_k", "early", "mbarrier_arrive_expect_tx", 0, "MbarrierArrivalUnordered"),
    ("sm100/s4_persistent", "remove", "__syncwarp();", 2, "TcgenFenceMissing"),
]


@pytest.mark.parametrize("target,op,before,nth,error", NAMED, ids=[f"{t}-{o}-{b[:24]}" for t, o, b, *_ in NAMED])
def test_mutant_stays_named(target, op, before, nth, error):
    o = M.run_mutant(M.find_mutant(target, op, before, nth))
    assert o.result in M.LOUD and o.detail.startswith(error), (o.result, o.detail)


# The known survivors: rule-breaking mutants that today pass or give a silently wrong result, with the
# rule the emulator should name. Strict xfails: when the emulator learns a rule, its line goes (the list
# only shrinks). Only the cheap kernels are here; the whole list is in docs/results/mutants_baseline.txt.
SURVIVORS = [
    ("sm90/sk_split_k", "remove", "__threadfence();", 1, "the partial sums' stores are not ordered before the "
                                                        "counter's atomicAdd at GPU scope (a release fence); the "
                                                        "emulator keeps no order of global memory between CTAs"),
]


@pytest.mark.parametrize("target,op,before,nth,rule", [
    pytest.param(*s, marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=s[4])) for s in SURVIVORS],
    ids=[f"{t}-{o}-{b[:24]}-{n}" for t, o, b, n, _ in SURVIVORS])
def test_known_survivor(target, op, before, nth, rule):
    m = M.find_mutant(target, op, before, nth)
    assert M._not_rule_breaking(m) is None
    o = M.run_mutant(m)
    if o.result not in ("pass", "wrong") + M.LOUD:      # a crash of the tool is no expected failure
        pytest.fail(f"{m.describe()}: {o.result} {o.detail}")
    assert o.result in M.LOUD, f"{m.describe()}: {o.result} {o.detail} (the rule: {rule})"


# ---- the table of mutants that break no rule -------------------------------------------------------------------
def test_every_not_rule_breaking_entry_names_mutants_that_exist():
    """An entry that no longer matches (the kernel changed) would silently stop excusing anything, or, with a
    shifted `nth`, excuse another line: each names an existing mutant of every kernel its prefix covers (or, for
    a text matching every equal line, of at least one)."""
    every = {t: M.mutants_of(t) for t in M.TARGETS}
    for (prefix, op, before, nth), why in M.NOT_RULE_BREAKING.items():
        assert len(why) > 80, (prefix, before)
        hits = {t: [m for m in ms if m.op == op and before in m.before] for t, ms in every.items()
                if t.startswith(prefix)}
        assert any(hits.values()), (prefix, op, before)
        if nth is not None:
            for t, found in hits.items():
                assert len(found) > nth, (t, op, before, nth)    # the line is gone, or one fewer of them
    setup = M.find_mutant("sm100/s4_persistent", "remove", "tcgen05_fence_after_thread_sync();", 0)
    assert M._not_rule_breaking(setup) and "tcgen05_alloc" in "".join(setup.new_text.split("\n")[setup.line - 20:
                                                                                                 setup.line])
    handoff = M.find_mutant("sm100/s4_persistent", "remove", "__syncwarp();", 2)   # orders the lanes: not excused
    assert M._not_rule_breaking(handoff) is None and "mbarrier_arrive(&tmem_empty" in \
        handoff.new_text.split("\n")[handoff.line]


# ---- what a learner reads ---------------------------------------------------------------------------------------
def test_the_new_rules_name_the_line_that_broke_them_and_the_other_one():
    o = M.run_mutant(M.find_mutant("sm90/sk_split_k", "early", "mbarrier_arrive_expect_tx"))
    assert o.detail.startswith("MbarrierArrivalUnordered"), o.detail
    assert o.message.count("sk_split_k.cu:") >= 2 and "previous arrival at sk_split_k.cu:" in o.message
    assert "pending arrival count" in o.message and "tx-count" in o.message
    o = M.run_mutant(M.find_mutant("sm100/s4_persistent", "remove", "__syncwarp();", 2))
    assert o.detail.startswith("TcgenFenceMissing"), o.detail
    msg = o.message
    assert "tcgen05.mma" in msg and "s4_persistent.cu:" in msg and "__syncwarp" in msg
    assert "only, at s4_persistent.cu:" in msg                              # the arrive of lane 0
    assert "tcgen05_ldst.cuh" in msg or "ladder.cuh" in msg                 # the tcgen05.ld of the other lanes


def test_an_mma_and_commit_issued_by_every_lane_warn_with_the_count():
    """All 32 lanes of the MMA warp issue the MMAs and the commits (elect_one_sync() dropped; the barrier
    counts the 32 commits): legal PTX that issues 32 MMAs per instruction — a warning with the count."""
    from bwlab.compile import CUDA_SRC
    text = (CUDA_SRC / "teach_umma.cu").read_text()
    assert text.count("if (elect_one_sync()) {") == 1 and text.count("mbarrier_init(&mma_done, 1);") == 1
    new = text.replace("if (elect_one_sync()) {", "if (true) {").replace("mbarrier_init(&mma_done, 1);",
                                                                       "mbarrier_init(&mma_done, 32);")
    line = text[:text.index("if (elect_one_sync()) {")].count("\n") + 1
    o = M.run_mutant(M.Mutant("teach_umma", "teach_umma.cu", line, "edit", "issue", "if (elect_one_sync()) {",
                              "if (true) {", new))
    assert o.result in ("wrong", "pass"), (o.result, o.detail)
    assert "tcgen05.mma executed by 32 threads of the warp issues 32 separate operations" in o.message
    assert "tcgen05.commit executed by 32 threads" in o.message
