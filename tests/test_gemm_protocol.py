"""The sustained measurement protocol's rules and statistics (bwlab.gemm.protocol), without a GPU."""
import pytest

from bwlab.checks import clocks as C
from bwlab.gemm import protocol as P


def test_operand_sets_exceed_l2():
    l2 = 50 * 2**20
    # 4096^3: A + B = 64 MiB, two sets hold 128 MiB >= 2 x 50 MiB
    assert P.operand_sets(64 * 2**20, l2) == 2
    # 1024^3: A + B = 4 MiB: 25 sets for 100 MiB
    assert P.operand_sets(4 * 2**20, l2) == 25
    assert P.operand_sets(4 * 2**20, l2) * 4 * 2**20 >= 2 * l2
    # never fewer than two, so consecutive launches do not share operands
    assert P.operand_sets(10 * l2, l2) == 2
    with pytest.raises(ValueError, match="positive"):
        P.operand_sets(0, l2)


def test_samples_per_launch():
    assert P.samples_per_launch(1.65, 5.0) == 3
    assert P.samples_per_launch(0.05, 5.0) == 100
    assert P.samples_per_launch(20.0, 5.0) == 1
    with pytest.raises(ValueError):
        P.samples_per_launch(0.0, 5.0)


def test_settled_needs_two_close_windows():
    assert not P.settled([1410.0], 15)
    assert not P.settled([1980.0, 1755.0], 15)
    assert P.settled([1980.0, 1755.0, 1410.0, 1395.0], 15)
    assert not P.settled([1395.0, 1410.0, 1350.0], 15)


def test_block_stats_quartiles():
    st = P.block_stats([4.0, 1.0, 3.0, 2.0, 5.0])
    assert (st.median, st.q1, st.q3, st.n) == (3.0, 2.0, 4.0, 5)
    assert st.iqr_rel == pytest.approx(2.0 / 3.0)
    with pytest.raises(ValueError, match="without samples"):
        P.block_stats([])


def test_compare_is_library_over_candidate_with_round_spread():
    # round 0: candidate 1.0 ms between library blocks at 1.1 ms; round 1: candidate 1.0 vs library 0.9
    cand = [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    before = [[1.1, 1.1], [0.9, 0.9]]
    after = [[1.1, 1.1], [0.9, 0.9]]
    s = P.compare(cand, before, after)
    assert s.per_round == pytest.approx([1.1, 0.9])
    assert s.spread == pytest.approx((0.9, 1.1))
    assert s.candidate_ms == 1.0
    # the medians of ALL samples: library samples 1.1 x4 and 0.9 x4 -> median 1.0
    assert s.ratio == pytest.approx(1.0)
    assert "rounds 0.900-1.100" in str(s)
    with pytest.raises(ValueError, match="every round"):
        P.compare(cand, before[:1], after)


def test_compare_faster_candidate_is_above_one():
    s = P.compare([[0.95] * 4], [[1.0] * 4], [[1.0] * 4])
    assert s.ratio == pytest.approx(1.0 / 0.95) and s.ratio > 1


def test_throttle_reasons_named_from_the_mask():
    assert C.reasons(0x4) == ["SW power cap"]
    assert C.reasons(0x4 | 0x20) == ["SW power cap", "SW thermal slowdown"]
    assert C.reasons(0) == []
    assert C.reasons(0x1000) == ["0x1000"]


def test_summarize_clock_samples():
    samples = [(0.0, "x", 1410.0, 690.0, 0x4), (0.1, "x", 1350.0, 700.0, 0x0), (0.2, "x", 1380.0, 695.0, 0x4)]
    s = C.summarize(samples)
    assert (s.sm_mhz, s.sm_min, s.sm_max, s.watts, s.n) == (1380.0, 1350.0, 1410.0, 695.0, 3)
    assert s.reasons == ["SW power cap"]
    assert "SW power cap" in str(s) and "1380 MHz" in str(s)
    assert C.summarize([]).n == 0 and str(C.summarize([])) == "no clock samples"


def test_protocol_rules_are_checked_and_stated():
    with pytest.raises(ValueError, match="rounds"):
        P.Protocol(rounds=0)
    with pytest.raises(ValueError, match="l2_multiple"):
        P.Protocol(l2_multiple=0.5)
    text = P.SUSTAINED.describe()
    assert "2 rounds" in text and "2 s of back-to-back" in text and "2 x L2" in text and "NVML" in text


def test_clock_log_without_nvml_or_smi_says_so(monkeypatch):
    import builtins
    import shutil
    real_import = builtins.__import__

    def no_pynvml(name, *a, **kw):
        if name == "pynvml":
            raise ImportError("no pynvml here")
        return real_import(name, *a, **kw)
    monkeypatch.setattr(builtins, "__import__", no_pynvml)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    log = C.ClockLog().start()
    log.mark("block")
    log.stop()
    assert log.source.startswith("none (ImportError: no pynvml here; no nvidia-smi)")
    assert log.samples == [] and log.summary("block").n == 0


def test_committed_reports_parse_and_agree_with_their_summary():
    """Every committed sustained-protocol report: its rows parse, each step's ratio is the one its
    summary table prints, and the ratio of the medians sits near the round-by-round range."""
    import re
    from bwlab.gemm import report
    from bwlab.results import RESULTS, report_text
    names = sorted(p.name for p in RESULTS.glob("gemm_protocol*_h100.txt"))
    assert "gemm_protocol_h100.txt" in names
    for name in names:
        rows = report.protocol_rows(name)
        text = report_text(name)
        summary = text[text.index("== summary"):]
        shapes = re.findall(r"^== (\d+) x (\d+) x (\d+) ", text, re.M)
        for r in rows:
            assert "x".join(r.shape.split("x")) in {"x".join(s) for s in shapes}
            if r.name == "library":
                assert r.tflops > 0 and "MHz" in r.clocks
                continue
            line = next(x for x in summary.splitlines() if x.strip().startswith(r.name))
            assert f"{r.ratio:.3f} ({r.low:.3f}-{r.high:.3f})" in line, (name, r)
            assert r.low - 0.02 <= r.ratio <= r.high + 0.02
        assert "# command: python -m bwlab.bench gemm --protocol sustained" in text


def test_protocol_pictures_draw_the_committed_runs():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from bwlab.gemm import pictures
    fig = pictures.plot_clock_log("gemm_protocol_h100", "8192x8192x8192", ("s6_tma_store",))
    ax = fig.axes[0]
    assert len(ax.lines) == 1 and len(ax.lines[0].get_xdata()) > 100   # 50-ms NVML samples over the blocks
    assert min(ax.lines[0].get_ydata()) > 0
    plt.close(fig)
    with pytest.raises(ValueError, match="no clock samples"):
        pictures.plot_clock_log("gemm_protocol_h100", "1x2x3")
    fig = pictures.plot_tile_orders(8, 8, 16)
    assert "slabs per wave of 16" in fig.axes[0].get_title() and "Hilbert" in fig.axes[1].get_title()
    plt.close(fig)


def test_other_benches_alternate_blocks_and_compare_as_the_gemm_does():
    """bwlab.checks.sustained (TMA copy, TMA store, multicast): warm-up until two windows agree, then
    baseline, candidate, ..., baseline; each candidate against the baseline blocks beside it."""
    from bwlab.checks import sustained as S
    proto = P.Protocol(block_s=2.0, rounds=2, window_s=0.5, warmup_min_s=1.0, warmup_max_s=20.0)
    t = [0.0]
    clock = iter([1980.0, 1700.0, 1420.0, 1410.0, 1405.0])   # settles at the 4th window (1420 vs 1410)
    order, labels = [], []
    base = S.Candidate("fill", ["fill"], 1e9)
    cands = [S.Candidate("tma", ["tma"], 1e9), S.Candidate("st", ["st"], 1e9)]
    ms = {"fill": 1.0, "tma": 1.25, "st": 0.8}

    def block(calls, seconds):
        t[0] += seconds
        order.append(calls[0])
        return [ms[calls[0]]] * 5

    base_blocks, cand_blocks, spent, mhz = S.alternate(
        base, cands, proto, block, mark=labels.append, window=lambda since: [next(clock)], now=lambda: t[0],
        tag=256)
    assert mhz == [1980.0, 1700.0, 1420.0, 1410.0] and spent == 2.0
    assert order[4:] == ["fill", "tma", "fill", "st", "fill", "tma", "fill", "st", "fill"]
    assert [i for i, _ in cand_blocks["tma"]] == [0, 2] and [i for i, _ in cand_blocks["st"]] == [1, 3]
    assert labels[-1] is None and all(lab[1] == 256 for lab in labels if lab)
    samples = [(0.0, ("baseline", 256, 0, "tma"), 1400.0, 700.0, 0x4), (0.1, ("tma", 256, 0), 1500.0, 650.0, 0x4),
               (0.2, ("tma", 512, 0), 1900.0, 300.0, 0)]   # another size's sample is not counted
    rs = S.rows(base, cands, base_blocks, cand_blocks, samples, tag=256)
    assert [r.name for r in rs] == ["fill", "tma", "st"] and rs[0].summary is None
    assert rs[1].summary.ratio == pytest.approx(0.8) and rs[2].summary.ratio == pytest.approx(1.25)
    assert rs[1].rate == pytest.approx(1e9 / 1.25e-3 / 1e9)
    assert rs[1].clock.n == 1 and rs[1].clock.sm_mhz == 1500.0 and rs[0].clock.sm_mhz == 1400.0
    lines = S.table(rs)
    assert "fill (baseline)" in lines[1] and "0.800" in lines[2] and "SW power cap" in lines[2]
    with pytest.raises(ValueError, match="own name"):
        S.alternate(base, [S.Candidate("fill", ["x"])], proto, block)
    with pytest.raises(ValueError, match="at least one candidate"):
        S.alternate(base, [], proto, block)


def test_cpu_benches_say_the_protocol_does_not_apply(capsys):
    from bwlab.checks.umma import bench_model_main
    bench_model_main(["--repeat", "2"])
    assert "does not apply here" in capsys.readouterr().out
