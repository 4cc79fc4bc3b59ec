"""bwlab.timing: machine descriptions, the discrete-event replay on toy traces whose timeline is known by
construction, the emulator's recording, determinism, and the committed Hopper table."""
from __future__ import annotations

from pathlib import Path

import pytest

from bwlab.timing import gemm, hopper, machine, model
from bwlab.timing.trace import Trace, classify

ROOT = Path(__file__).resolve().parents[1]


def simple_machine(**over):
    """Round numbers so that a toy's timeline can be computed by hand."""
    m = machine.load("h100_sxm").at()
    m.update(alu_cpi=1.0, tma_issue=0.0, sm_l2_port=100.0, l2_bw=1e18, dram_bw=1e18, tma_latency=300.0,
             mbar_wake=50.0, mma_flops=4096.0, mma_latency=70.0, bar_sync=30.0, launch_us=0.0)
    m.update(over)
    return m


ENV = model.Env(clock_mhz=1000, active_sms=1, miss=0.0)


# ---- machine descriptions -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", machine.NAMES)
def test_every_number_has_a_source_and_lies_in_its_range(name):
    m = machine.load(name)
    for field, p in m.params():
        assert p.source, field
        assert p.lo <= p.value <= p.hi, field
    fast, slow = m.at("fast"), m.at("slow")
    assert fast["dram_bw"] >= slow["dram_bw"] and fast["tma_latency"] <= slow["tma_latency"]


def test_bad_numbers_and_names_are_refused():
    with pytest.raises(ValueError, match="must lie in its range"):
        machine.Param(5, 1, 2, "cycles", "x")
    with pytest.raises(ValueError, match="names its source"):
        machine.Param(1, 1, 1, "cycles", "")
    with pytest.raises(KeyError, match="no machine description"):
        machine.load("h300")
    with pytest.raises(ValueError, match="fraction"):
        model.Env(1000, 132, miss=1.5)
    with pytest.raises(ValueError, match="clock_mhz"):
        model.Env(0, 132)
    with pytest.raises(ValueError, match="sm_90a"):
        gemm.predict("s1", 4096, 4096, 4096, "b200")


# ---- the replay on toys ---------------------------------------------------------------------------------
def tma_toy(n, nbytes, pipelined):
    """One warp loads n boxes; each completes phase i of mbarrier 0. Serial: load, wait, load, wait ...;
    pipelined: n loads, then n waits."""
    tr = Trace(ctas={0: ((0, 0, 0), 0, 0)})
    loads = [("tma_load", i + 1, nbytes) for i in range(n)]
    waits = [("mwait", 0, i) for i in range(n)]
    recs = [x for pair in zip(loads, waits) for x in pair] if not pipelined else loads + waits
    tr.warps[(0, 0)] = recs + [("exit", 0, 0)]
    tr.contrib = {(0, i): [("c", i + 1)] for i in range(n)}
    return tr


def test_a_serial_tma_toy_costs_transfer_latency_and_wake_per_load():
    m = simple_machine()
    tl = model.replay(tma_toy(10, 10_000, pipelined=False), m, ENV)
    # per load: 10,000 B at 100 B/cycle + 300 latency + 50 wake; the first load issues at 0
    assert tl.cycles == pytest.approx(10 * (100 + 300 + 50), abs=2)


def test_a_pipelined_tma_toy_is_bound_by_bandwidth():
    m = simple_machine()
    tl = model.replay(tma_toy(10, 10_000, pipelined=True), m, ENV)
    assert tl.cycles == pytest.approx(10 * 100 + 300 + 50, abs=12)
    # half the port: twice the transfer
    tl2 = model.replay(tma_toy(10, 10_000, pipelined=True), simple_machine(sm_l2_port=50.0), ENV)
    assert tl2.cycles == pytest.approx(10 * 200 + 300 + 50, abs=12)


def mma_toy(warps, n, flops):
    tr = Trace(ctas={0: ((0, 0, 0), 0, 0)})
    for w in range(warps):
        tr.warps[(0, w)] = [("mma", flops, 0)] * n + [("mma_commit", 0, 0), ("mma_wait", 0, 0), ("exit", 0, 0)]
    return tr


def test_a_tensor_bound_toy_runs_at_the_pipe_rate():
    m = simple_machine()
    # a warp's 16-row share of m64n256k16: 131,072 FLOP at 1,024 FLOP/cycle per sub-partition: 128 cycles
    one = model.replay(mma_toy(4, 20, 131_072), m, ENV)
    assert one.cycles == pytest.approx(20 * 128 + 70, abs=3)
    # two warpgroups share the four sub-partitions' pipes: twice as long
    two = model.replay(mma_toy(8, 20, 131_072), m, ENV)
    assert two.cycles == pytest.approx(40 * 128 + 70, abs=3)
    assert one.busy[("tensor", 0, 0)] == pytest.approx(20 * 128)


def test_a_named_barrier_releases_after_the_last_arrival():
    m = simple_machine()
    tr = Trace(ctas={0: ((0, 0, 0), 0, 0)})
    tr.warps[(0, 0)] = [("alu", 0, 0)] * 100 + [("bar", 0, 0), ("exit", 0, 0)]
    tr.warps[(0, 1)] = [("bar", 0, 0), ("exit", 0, 0)]
    tl = model.replay(tr, m, ENV)
    bar1 = [x for x in tl.warps[(0, 1)] if x[1] == "bar"][0]
    assert bar1[3] == pytest.approx(100 + 30, abs=2)


def store_toy(stores, sectors):
    """One warp writes `stores` direct global stores of `sectors` 32-byte sectors each, one after the other."""
    tr = Trace(ctas={0: ((0, 0, 0), 0, 0)})
    tr.warps[(0, 0)] = [("st_global", 32 * sectors, sectors)] * stores + [("exit", 0, 0)]
    return tr


def test_direct_stores_share_the_chips_store_rate_with_the_sms_storing_at_once():
    # the warp waits for each store to drain (lsu_queue 0); the SM alone: 2 cycles per sector; the chip takes
    # 800 B of sectors per cycle at 1 GHz, so 100 SMs storing at once get 100 x 32 / 800 = 4 cycles per sector
    m = simple_machine(gst_sector=2.0, gst_warp=0.0, lsu_queue=0.0, st_l2_bw=0.8e12)
    alone = model.Env(1000, 100, storing_sms=1)
    lock = model.Env(1000, 100, storing_sms=100)
    assert model.store_sector_cycles(m, alone) == 2.0
    assert model.store_sector_cycles(m, lock) == pytest.approx(4.0)
    assert model.replay(store_toy(4, 8), m, alone).cycles == pytest.approx(4 * 8 * 2.0 + 1)     # + the exit
    assert model.replay(store_toy(4, 8), m, lock).cycles == pytest.approx(4 * 8 * 4.0 + 1)
    # a slower SM clock: the same bytes per second are more bytes per SM cycle, fewer cycles per sector
    m2 = simple_machine(gst_sector=2.0, st_l2_bw=0.4e12)
    assert model.store_sector_cycles(m2, lock) == pytest.approx(8.0)
    assert model.store_sector_cycles(m2, model.Env(500, 100, storing_sms=100)) == pytest.approx(4.0)
    with pytest.raises(ValueError, match="storing_sms"):
        model.Env(1000, 100, storing_sms=101)
    with pytest.raises(ValueError, match="storing_sms"):
        model.Env(1000, 100, storing_sms=0.5)


def test_how_many_sms_store_at_once():
    # lockstep: every running SM; spread: each other SM is storing for its store path's busy fraction
    assert gemm.storing_sms("lockstep", 132, 10.0, 100.0) == 132
    assert gemm.storing_sms("spread", 132, 10.0, 100.0) == pytest.approx(1 + 131 * 0.1)
    assert gemm.storing_sms("spread", 1, 10.0, 100.0) == 1
    assert gemm.storing_sms("spread", 132, 500.0, 100.0) == 132
    with pytest.raises(ValueError, match="align is one of"):
        gemm.storing_sms("staggered", 132, 10.0, 100.0)
    with pytest.raises(ValueError, match="align is one of"):
        gemm.predict("s1", 4096, 4096, 4096, align="staggered")
    with pytest.raises(ValueError, match="drift_env"):
        gemm.storing_sms("drift", 132, 10.0, 100.0)


def test_the_overlap_of_two_epilogue_windows_whose_ends_drift():
    import numpy as np
    # no drift: the windows coincide; E[max(0, 1 - |d| / w)] by sampling d ~ N(0, sigma^2)
    assert gemm.window_overlap(1000.0, 0.0) == 1.0
    d = np.random.default_rng(1).normal(0.0, 1.0, 400_000)
    for w, sigma in ((1000.0, 300.0), (1000.0, 1000.0), (500.0, 3000.0)):
        sampled = float(np.mean(np.maximum(0.0, 1.0 - np.abs(d * sigma) / w)))
        assert gemm.window_overlap(w, sigma) == pytest.approx(sampled, abs=0.003)
    with pytest.raises(ValueError, match="positive"):
        gemm.window_overlap(0.0, 10.0)
    # the SMs storing with CTA 0 fall tile by tile (a random walk) and with the SMs that still have a tile
    c = gemm.drift_storing([132] * 15 + [68], 8000.0, 140_000.0, 128, 0.108)
    assert c[0] > c[7] > c[14] > c[15] and c[0] < 132
    assert gemm.drift_storing([132], 8000.0, 140_000.0, 128, 0.0) == [132.0]
    assert gemm.round_counts(512, 132, 1) == [132, 132, 132, 116]
    assert gemm.round_counts(1024, 132, 3) == [132, 132, 78]


def test_the_kslice_jitter_is_the_one_measured_in_the_h200_tile_logs():
    import numpy as np
    from bwlab.timing import phases
    at8k, at4k = phases.measured_kslice_jitter(8192), phases.measured_kslice_jitter(4096)
    for name in ("h100_sxm", "h200"):
        j = machine.load(name).kslice_jitter
        assert j.value == pytest.approx(float(np.median(at8k)), abs=0.002)
        assert j.lo <= min(at8k) and max(at4k) <= j.hi
    with pytest.raises(ValueError, match="4096"):
        phases.measured_kslice_jitter(512)


def test_the_drift_reproduces_the_sms_storing_counted_in_the_tile_logs():
    """With the logs' own tile time and the GPU's epilogue as the window, the random walk at the measured
    k-slice jitter gives the counts the tile logs hold (docs/results/tile_drift_h200.npz): step 3's first
    tile (a non-persistent CTA 0) and step 4's CTA 0 over its tiles (the median), at 8192^3 and 4096^3."""
    import numpy as np
    from bwlab.timing import phases
    z = np.load(hopper.RESULTS / "tile_drift_h200.npz")
    jitter = machine.load("h200").kslice_jitter.value
    for persistent, size, ep in ((False, 8192, 8014), (False, 4096, 9768), (True, 8192, 8692), (True, 4096, 11505)):
        log = z[f"{'s4_persistent' if persistent else 's3_warp_specialized'}_{size}_1"]
        end = np.maximum(log[:, 3], log[:, 4]).astype(np.float64)
        ghz = np.median((log[:, 5].astype(np.float64) - log[:, 1]) / (log[:, 3].astype(np.float64) - log[:, 0]))
        tile = float(np.median(end - log[:, 0])) * ghz            # cycles
        tiles = (size // 128) * (size // 256)
        by_tile = [min(132, tiles - r * 132) for r in range(-(-tiles // 132))] if persistent else [132]
        model_count = float(np.median(gemm.drift_storing(by_tile, ep, tile, size // 64, jitter)))
        assert model_count == pytest.approx(phases.drift_storing(persistent, size, ep), rel=0.06), (persistent, size)


def test_the_drift_predicts_the_epilogues_of_the_phases_table():
    """The point prediction of docs/results/timing_phases.txt: step 4's epilogue on the H200 at 8192^3 (its
    16 tiles, the SMs drifted apart: far fewer storing than at lockstep) and step 1's on the H100 at 4096^3
    (an SM's three CTAs out of step), each within 20 % of CTA 0's GEMM_STAMPS epilogue."""
    from bwlab.timing import phases
    ks, ep, mhz = phases.probed_h200()["s4_persistent"]
    d = phases.model_phases("s4", 8192, 8192, 8192, mach="h200", clock_mhz=mhz)
    lock = phases.model_phases("s4", 8192, 8192, 8192, mach="h200", clock_mhz=mhz, align="lockstep")
    assert 50 < d["storing_sms"] < 80 and lock["storing_sms"] == 132
    assert abs(d["epilogue"] / ep - 1) <= phases.TOLERANCE < abs(lock["epilogue"] / ep - 1)
    ks, ep, mhz = phases.recorded_h100()["s1_one_warpgroup"]
    apart = phases.model_phases("s1", 4096, 4096, 4096, clock_mhz=mhz)
    together = phases.model_phases("s1", 4096, 4096, 4096, clock_mhz=mhz, apart=False)
    assert abs(apart["epilogue"] / ep - 1) <= phases.TOLERANCE < together["epilogue"] / ep - 1
    text = (hopper.RESULTS / "timing_phases.txt").read_text()
    assert f"{d['epilogue']:6.0f} {d['storing_sms']:5.1f}" in text


def test_a_launch_with_several_ctas_per_sm_fills_its_last_wave():
    # one CTA per SM: a partial last wave costs a whole round
    assert gemm.launch_rounds(512, 132, 1) == 4
    assert gemm.launch_rounds(100, 132, 1) == 1
    # several: the SM's CTAs end at different moments and each freed slot refills, tiles / slots rounds
    assert gemm.launch_rounds(1024, 132, 3) == pytest.approx(1024 / 396)
    assert gemm.launch_rounds(4096, 132, 3) == pytest.approx(4096 / 396)
    # a launch that fits in the slots is one round, whatever it leaves free
    assert gemm.launch_rounds(256, 132, 2) == 1
    with pytest.raises(ValueError, match="at least 1"):
        gemm.launch_rounds(0, 132, 3)
    # step 1 at 4096^3 (1,024 tiles, 3 CTAs per SM) is predicted at 2.586 rounds, not 3
    assert "2.586 rounds of 3 CTA(s) per SM" in (hopper.RESULTS / "timing_h200_sustained.txt").read_text()


def test_the_sms_storing_at_once_counted_in_the_measured_tile_logs():
    from bwlab.timing import phases
    # step 3's first tile ends with most SMs writing C (the first round is nearly in step); step 4's CTA 0,
    # over its 16 tiles at 8192^3, with fewer (the SMs drift apart round by round)
    first = phases.drift_storing(False, 8192, 8014)
    walked = phases.drift_storing(True, 8192, 8692)
    assert 90 < first <= 132 and 40 < walked < 90 and walked < first
    # a longer epilogue overlaps more of the others'
    assert phases.drift_storing(True, 8192, 20000) > walked
    with pytest.raises(ValueError, match="4096"):
        phases.drift_storing(True, 512, 8000)


def test_a_wait_nothing_completes_is_reported():
    tr = tma_toy(2, 1000, pipelined=True)
    tr.contrib[(0, 1)] = [("c", 99)]          # an op the trace never issues
    with pytest.raises(model.ModelError, match="no recorded event completes"):
        model.replay(tr, simple_machine(), ENV)


def test_classes_of_instructions():
    assert classify("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16") == "mma"
    assert classify("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes") == "tma_load"
    assert classify("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group") == "tma_store"
    assert classify("mbarrier.try_wait.parity.shared::cta.b64") == "mwait"
    assert classify("st.global.v2.u32") == "st_global"
    assert classify("add.s32") == "alu"


# ---- the emulator's recording ------------------------------------------------------------------------------
def test_recording_a_ladder_step_and_determinism():
    gemm._TRACES.clear()
    tr = gemm.emulated_trace("s1", 128, 128, 128, seed=0)
    mma = [r for r in tr.warps[(0, 0)] if r[0] == "mma"]
    assert len(mma) == 2 * 8                         # 2 k-slices x (2 slabs x 4 k16 steps)
    assert all(r[1] == 2 * 16 * 128 * 16 for r in mma)
    m = machine.load("h100_sxm").at()
    env = model.Env(1500, 132, 0.1)
    a = model.replay(tr, m, env).cycles
    assert model.replay(tr, m, env).cycles == a       # the replay is deterministic
    gemm._TRACES.clear()
    tr2 = gemm.emulated_trace("s1", 128, 128, 128, seed=0)
    assert tr2.warps == tr.warps and tr2.contrib == tr.contrib      # one seed, one trace
    assert model.replay(tr2, m, env).cycles == a


def test_the_committed_hopper_table_is_what_the_code_computes():
    text = (ROOT / "docs" / "results" / "timing_hopper.txt").read_text()
    table = hopper.parse_table(text)
    meas = hopper.measured(ROOT / "docs" / "results" / "gemm_protocol_h100.txt")
    name, shape = "s1_one_warpgroup", (4096, 4096, 4096)      # the cheapest row
    assert (name, shape) in table
    p = gemm.predict(name, *shape, machine="h100_sxm", clock_mhz=meas[(name, shape)].mhz, align=hopper.ALIGN)
    assert hopper.ALIGN == "drift" and p.parts["align"] == "drift"
    assert round(p.ms, 4) == pytest.approx(table[(name, shape)], abs=1e-4)
    # the range's slow end: the slow numbers with every SM writing C at once (lockstep), slower than spread
    slow = gemm.predict(name, *shape, machine="h100_sxm", clock_mhz=meas[(name, shape)].mhz, which="slow",
                        align="lockstep")
    drift = gemm.predict(name, *shape, machine="h100_sxm", clock_mhz=meas[(name, shape)].mhz, which="slow",
                         align="drift")
    assert slow.parts["storing_sms"] == 132 and drift.parts["storing_sms"] < 132
    assert slow.ms > drift.ms
    row = next(x for x in text.splitlines() if x.startswith(name) and "4096x4096x4096" in x)
    assert f"-{slow.ms:8.4f}" in row


def test_any_sustained_report_compares_with_the_model():
    """`hopper --report`: every rung and shape of one report, each at its own clock (the H200's steps 3 and 4
    of the first H200 run, at NVML's clock)."""
    rs = hopper.rows(machine="h200", report="gemm_protocol_s3s4_h200.txt")
    assert {(m.step, m.shape) for m, *_ in rs} == {(s, sh) for s in ("s3_warp_specialized", "s4_persistent")
                                                   for sh in ((8192, 8192, 8192), (512, 8192, 8192))}
    for m, p, *_ in rs:
        assert p.clock_mhz == m.mhz
        assert abs(p.ms / m.ms - 1) <= hopper.TOLERANCE, (m.step, m.shape, p.ms, m.ms)


def test_the_committed_h200_table_holds_every_rung_within_15_percent():
    """The whole ladder measured on an H200 under the sustained protocol (gemm_protocol_h200.txt) against the
    H200 description at each rung's SM clock (NVML's x the clock checks' clock64 / NVML ratio at that shape):
    every row of the committed table within 15 % (from its numbers, not its 'yes'), the order line's
    reversed pairs the ones its numbers give, and the cheapest rows recomputed from the code."""
    results = ROOT / "docs" / "results"
    text = (results / "timing_h200_sustained.txt").read_text()
    meas = hopper.measured(results / "gemm_protocol_h200.txt")
    table = hopper.parse_table(text)
    assert len(meas) == 27 and set(table) == set(meas)
    for key, m in meas.items():
        assert abs(table[key] / m.ms - 1) <= hopper.TOLERANCE, (key, table[key], m.ms)
    reversed_, total = set(), 0
    for shape in {sh for _, sh in meas}:
        here = [(meas[k].ms, table[k], k[0]) for k in meas if k[1] == shape]
        for i, (m1, p1, a) in enumerate(here):
            for m2, p2, b in here[i + 1:]:
                if abs(m1 / m2 - 1) > 0.03:
                    total += 1
                    if (m1 < m2) != (p1 < p2):
                        reversed_.add(f"{a.split('_')[0]} vs {b.split('_')[0]} at {'x'.join(map(str, shape))}")
    line = next(x for x in text.splitlines() if x.startswith("measured order"))
    assert f"{total - len(reversed_)} of {total} reproduced" in line
    assert set(line.split("reversed: ")[1].split(", ")) == reversed_ if reversed_ else "reversed" not in line
    # the cheapest rows again, from the code and the clock checks
    ratios = hopper.clock_ratios(["clock_check_h200.txt", "clock_check_shapes_h200.txt"])
    assert set(ratios) == set(meas)
    name = "s1_one_warpgroup"          # its traces are the H100 table test's: only replays
    for shape in ((4096, 4096, 4096), (8192, 8192, 8192)):
        m = meas[(name, shape)]
        p = gemm.predict(name, *shape, machine="h200", clock_mhz=m.mhz * ratios[(name, shape)], align=hopper.ALIGN)
        assert round(p.ms, 4) == pytest.approx(table[(name, shape)], abs=1e-4)
        row = next(x for x in text.splitlines() if x.startswith(name) and "x".join(map(str, shape)) in x)
        nvml = gemm.predict(name, *shape, machine="h200", clock_mhz=m.mhz, align=hopper.ALIGN)
        assert f"{m.mhz:4.0f} {nvml.ms / m.ms:8.3f}" in row        # the ratio at NVML's clock beside it


def test_a_clock_check_that_is_not_one_is_a_clear_error(tmp_path):
    bad = tmp_path / "clock_check_x.txt"
    bad.write_text("# a report of something else\n  s1_one_warpgroup  2.1 ms\n")
    with pytest.raises(ValueError, match="no clock check rows"):
        hopper.clock_ratios(bad)
    bad.write_text("  s3_warp_specialized      1.8663   1440 (1395-1470)   1276 (1229-1308)        0.886   2.687  2.382\n")
    with pytest.raises(ValueError, match="names its shape"):
        hopper.clock_ratios(bad)
    bad.write_text("  clock log: NVML; 8192^3, 2 operand sets rotated\n"
                   "  s3_warp_specialized      1.8663   1440 (1395-1470)   1276 (1229-1308)        2.886   2.687  2.382\n")
    with pytest.raises(ValueError, match="outside 0.5-1.5"):
        hopper.clock_ratios(bad)
    with pytest.raises(FileNotFoundError, match="clock_check.py"):
        hopper.clock_ratios(tmp_path / "missing.txt")
    # a clock check applies to the GPU it was measured on: the H200's not to the H100's reports
    with pytest.raises(ValueError, match="NVIDIA H200.*NVIDIA H100.*GPU it was made on"):
        hopper.rows(clocks=["clock_check_h200.txt"])


def test_step_predicted_is_the_model_fraction_the_code_computes():
    """ladder.Step.predicted comes from bwlab/gemm/model_fractions.py, which `python -m bwlab.timing
    fractions --write` writes from the committed Hopper table; the cheapest rung's 8192^3 row of that
    table is recomputed here (its traces are the 4096^3 test's: only replays)."""
    from bwlab.gemm import ladder, model_fractions
    assert model_fractions.FRACTIONS == {k: round(v, 3) for k, v in hopper.fractions().items()}
    assert (ROOT / "bwlab" / "gemm" / "model_fractions.py").read_text() == hopper.fractions_module()
    for s in ladder.ALL_STEPS:
        assert s.predicted == model_fractions.FRACTIONS[s.name], s.name
    name, shape = "s1_one_warpgroup", hopper.FRACTION_SHAPE
    meas = hopper.measured(ROOT / "docs" / "results" / "gemm_protocol_h100.txt")
    p = gemm.predict(name, *shape, machine="h100_sxm", clock_mhz=meas[(name, shape)].mhz, align=hopper.ALIGN)
    table = hopper.parse_table((ROOT / "docs" / "results" / "timing_hopper.txt").read_text())
    assert round(p.ms, 4) == pytest.approx(table[(name, shape)], abs=1e-4)
    lib = hopper.library_ms(ROOT / "docs" / "results" / "gemm_protocol_h100.txt")[shape]
    assert ladder.step("s1").predicted == pytest.approx(lib / p.ms, abs=1e-3)


def test_a_ring_too_deep_for_the_smem_is_a_clear_error():
    import dataclasses
    from bwlab.gemm import ladder
    s = dataclasses.replace(ladder.step("s3"), stages=5)
    with pytest.raises(ValueError, match="SMEM"):
        gemm.predict(s, 8192, 8192, 8192)


def test_the_blackwell_summary_is_the_committed_table():
    """Notebook 07 prints blackwell.committed_summary(): every sm_100a step at both shapes, with a range that
    holds the point value, and the published ladders beside them; labelled a prediction, no machine path."""
    from bwlab.timing import blackwell
    text = (ROOT / "docs" / "results" / blackwell.COMMITTED).read_text()
    pred = blackwell.parse_table(text)
    assert len(pred) == 12
    for (step, size), (tf, lo, hi) in pred.items():
        assert lo <= tf <= hi, (step, size)
    out = blackwell.committed_summary(text)
    assert "PREDICTED" in out and "not measured" in out and "/work/" not in out
    assert all(name in out for _, _, _, steps in blackwell.PUBLISHED for name, *_ in steps)
    assert "\n".join(blackwell.beside_published(pred)) in text      # the same comparison the table holds


def test_a_report_with_the_smS_own_clock_is_predicted_at_it(tmp_path):
    """`bench gemm --protocol sustained --clock-stamps` writes 'SMs N MHz by clock64' in a rung's row: `measured`
    reads it and the table predicts at it (no clock check), NVML's clock and ratio beside it."""
    report = tmp_path / "gemm_protocol_x.txt"
    report.write_text(
        "GPU NVIDIA H200, 132 SMs, L2 60 MiB, CuPy 14.2.0; clock log: NVML (nvidia-ml-py)\n"
        "== 4096 x 4096 x 4096 (C = A B^T, bf16 in, f32 accumulation, bf16 out); 2 operand sets\n"
        "  s1_one_warpgroup         0.2771 ms   495.9     0.753  0.752- 0.753   1.2%   0.76  SM 1665 MHz (1500-1725), "
        "691 W, throttle: SW power cap; SMs 1472 MHz by clock64 (1401-1500, 380 stamped launches)\n")
    (m,) = hopper.measured(report).values()
    assert (m.mhz, m.sms_mhz) == (1665.0, 1472.0)
    text = hopper.table(report=report, machine="h200")
    assert "counted in the rung's own blocks" in text and "1 of 1 rows" in text
    row = next(x for x in text.splitlines() if x.startswith("s1_one_warpgroup"))
    p = gemm.predict("s1", 4096, 4096, 4096, machine="h200", clock_mhz=1472, align=hopper.ALIGN)
    nv = gemm.predict("s1", 4096, 4096, 4096, machine="h200", clock_mhz=1665, align=hopper.ALIGN)
    assert row.split()[2] == "1472" and f"{p.ms:9.4f}" in row and f"1665 {nv.ms / 0.2771:8.3f}" in row


def test_the_h200_table_at_the_clock_counted_in_each_rungs_own_blocks():
    """gemm_protocol_stamped_h200.txt (bench gemm --protocol sustained --clock-stamps): every rung's row carries
    the SMs' own clock in its blocks; the committed table (timing_h200_stamped.txt) predicts at it: every row
    within 15 % from its numbers, every measured order (> 3 %) reproduced, the cheapest rows recomputed."""
    results = ROOT / "docs" / "results"
    text = (results / "timing_h200_stamped.txt").read_text()
    meas = hopper.measured(results / "gemm_protocol_stamped_h200.txt")
    table = hopper.parse_table(text)
    assert len(meas) == 27 and set(table) == set(meas)
    assert all(m.sms_mhz is not None and 0.8 < m.sms_mhz / m.mhz < 1.0 for m in meas.values())
    for key, m in meas.items():
        assert abs(table[key] / m.ms - 1) <= hopper.TOLERANCE, (key, table[key], m.ms)
    total = 0
    for shape in {sh for _, sh in meas}:
        here = [(meas[k].ms, table[k]) for k in meas if k[1] == shape]
        for i, (m1, p1) in enumerate(here):
            for m2, p2 in here[i + 1:]:
                if abs(m1 / m2 - 1) > 0.03:
                    total += 1
                    assert (m1 < m2) == (p1 < p2)
    assert f"measured order (pairs differing by > 3%): {total} of {total} reproduced" in text
    name = "s1_one_warpgroup"
    for shape in ((4096, 4096, 4096), (8192, 8192, 8192)):
        m = meas[(name, shape)]
        p = gemm.predict(name, *shape, machine="h200", clock_mhz=m.sms_mhz, align=hopper.ALIGN)
        assert round(p.ms, 4) == pytest.approx(table[(name, shape)], abs=1e-4)


def test_a_report_with_some_rows_stamped(tmp_path):
    """A report where only some rows carry the SMs' own clock: the others are predicted at NVML's clock, every row
    keeps both NVML columns (the same prediction twice where NVML's clock is the one), and the header says so."""
    report = tmp_path / "gemm_protocol_y.txt"
    row = ("  {}  0.2771 ms   495.9     0.753  0.752- 0.753   1.2%   0.76  SM 1665 MHz (1500-1725), 691 W, "
           "throttle: SW power cap{}\n")
    report.write_text(
        "GPU NVIDIA H200, 132 SMs, L2 60 MiB, CuPy 14.2.0; clock log: NVML (nvidia-ml-py)\n"
        "== 4096 x 4096 x 4096 (C = A B^T, bf16 in, f32 accumulation, bf16 out); 2 operand sets\n"
        + row.format("s1_one_warpgroup      ", "; SMs 1472 MHz by clock64 (1401-1500, 380 stamped launches)")
        + row.format("s2_pipeline           ", ""))
    text = hopper.table(report=report, machine="h200")
    assert "1 of 2 rows, the others at NVML's clock" in text
    rows = [x for x in text.splitlines() if x.startswith(("s1_one", "s2_pipe"))]
    assert len(rows) == 2
    s2 = rows[1].split()
    assert s2[2] == "1665" and s2[9] == "1665" and s2[7] == s2[10]   # MHz, NVML MHz; pred/meas the same twice
    assert rows[0].split()[2] == "1472" and rows[0].split()[9] == "1665"
    assert "within +-15% at NVML's clock instead:" in text


def test_step_8s_epilogue_is_the_span_its_stamps_measure():
    """Step 8 stores a tile's C in pieces under the next tile's main loop; its GEMM_STAMPS epilogue runs from the
    tile's last wgmma wait to the last piece's TMA store: `phases.overlapped_epilogue` reads that span."""
    from bwlab.timing import phases

    class Replay:
        warps = {(0, 4): [(0, "mma_wait", 0, 100), (1, "mma_wait", 100, 500), (2, "mwait", 600, 650),
                          (3, "tma_store", 700, 900), (4, "mma_wait", 710, 720), (5, "tma_store", 1000, 1100),
                          (6, "tma_store", 1300, 1400), (7, "tma_store", 1600, 1700), (8, "tma_store", 2000, 2100)]}
    assert phases.overlapped_epilogue(Replay, 384, 4) == 1600 - 500
    assert phases.overlapped_epilogue(Replay, 384, 2) == 1000 - 500
    with pytest.raises(ValueError, match="5 TMA stores after the first tile's last wait, not the 6 pieces"):
        phases.overlapped_epilogue(Replay, 384, 6)
