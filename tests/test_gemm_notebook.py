"""What notebook 07 reads from bwlab.gemm: occupancy from the cubins, the recorded table, the diffs
between steps, CTA 0's timeline, the pictures. Each is checked against a second source: cuobjdump,
the text the benchmark printed, the kernels' own loops, the source files."""
import re
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from bwlab.checks.record_gemm import expected_events
from bwlab.compile import _find_tool, compile_cuda
from bwlab.gemm import occupancy, report
from bwlab.gemm.ladder import STEPS, step
from bwlab.gemm.timeline import step_timeline
from bwlab.results import load_recording, report_text
from bwlab.source import source_text


@pytest.fixture(scope="module")
def rec():
    return load_recording("gemm_ladder")


# --- occupancy -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["s1", "s3", "s6"])
def test_cubin_resources_agree_with_cuobjdump(name):
    tool = _find_tool("cuobjdump")
    if tool is None:
        pytest.skip("cuobjdump is not installed (pip: nvidia-cuda-cuobjdump)")
    cubin = compile_cuda(step(name).path, arch="sm_90a").cubin
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "k.cubin"
        f.write_bytes(cubin)
        out = subprocess.run([tool, "-res-usage", str(f)], capture_output=True, text=True, check=True).stdout
    m = re.search(r"REG:(\d+).*?SHARED:(\d+)", out)
    res = occupancy.cubin_resources(cubin)
    assert (res.registers, res.static_smem) == (int(m[1]), int(m[2]))


def test_cubin_resources_rejects_what_is_not_a_cubin():
    with pytest.raises(ValueError, match="ELF"):
        occupancy.cubin_resources(b"not an elf file at all" * 4)


def test_ctas_per_sm_matches_the_explore_table():
    # docs/results/gemm_explore_h100.txt: 2 and 3 stages fast, 4 and 6 stages at the same low speed
    assert [occupancy.ctas_per_sm("s2", stages=n).ctas for n in (2, 3, 4, 6)] == [3, 2, 1, 1]
    s1 = occupancy.ctas_per_sm("s1")
    assert (s1.ctas, s1.by_smem, s1.limit) == (3, 6, "registers")
    for name in ("s3", "s4", "s5", "s6"):
        assert occupancy.ctas_per_sm(name).ctas == 1


def test_ctas_per_sm_by_hand():
    # 3 stages: 3 x 32 KiB + the 1 KiB alignment slack + the static block; 228 KiB per SM
    res = occupancy.Resources(registers=154, static_smem=1072)
    occ = occupancy.ctas_per_sm("s2", stages=3, resources=res)
    assert occ.smem_per_cta == 3 * 32768 + 1024 + 1072
    assert occ.by_smem == 233472 // (3 * 32768 + 2096) == 2
    assert occ.by_registers == 65536 // (160 * 128) == 3     # 154 registers are allocated as 160


def test_ctas_per_sm_agrees_with_the_cuda_driver_on_an_h100():
    """docs/results/gemm_occupancy_h100.txt: cuOccupancyMaxActiveBlocksPerMultiprocessor and the
    kernels' attributes on an H100."""
    driver = occupancy.recorded_driver()
    assert len(driver) == len(STEPS) + 3
    for (name, stages), (ctas, regs, static) in driver.items():
        occ = occupancy.ctas_per_sm(name, stages if name == "s2_pipeline" else None)
        res = occupancy.kernel_resources(name, stages if name == "s2_pipeline" else None)
        assert (occ.stages, occ.ctas, occ.registers) == (stages, ctas, regs), name
        assert res.static_smem == static + 1024, name     # the cubin's block includes the reserved 1 KiB


def test_only_step_2_takes_another_depth():
    with pytest.raises(ValueError, match="only step 2"):
        occupancy.ctas_per_sm("s3", stages=3)


# --- the recorded table --------------------------------------------------------------------------

def test_rows_match_the_printed_report(rec):
    printed = {(shape, name): (ms, tf, ratio) for shape, name, ms, tf, ratio in report.report_rows("gemm_h100.txt")}
    steps = [r for r in report.rows(rec) if r.is_step]
    assert len(steps) == len(printed) == 3 * len(STEPS)
    for r in steps:
        ms, tf, ratio = printed[(r.shape, r.name)]
        assert round(r.ms, 3) == pytest.approx(ms, abs=1e-3) and round(r.tflops, 1) == pytest.approx(tf, abs=0.1)
        assert round(r.ratio, 2) == pytest.approx(ratio, abs=0.01)


def test_library_alongside_matches_the_printed_report(rec):
    alongside = [int(m[1]) for m in re.finditer(r"library (\d+) alongside", report_text("gemm_h100.txt"))]
    ours = [round(r.library_alongside) for r in report.rows(rec) if r.is_step]
    assert ours == alongside


def test_format_table_names_every_step_and_shape(rec):
    text = report.format_table(rec)
    for s in STEPS:
        assert text.count(s.name) == 3
    assert "8192^3" in text and "512 x 8192 x 8192" in text


def test_format_table_prints_predictions_only_at_their_shape(rec):
    """The predictions were made for 8192^3: the other shapes' rows leave the column blank."""
    blocks = report.format_table(rec).split("\n\n")
    for block in blocks:
        preds = {f"{s.predicted:.2f}" for s in STEPS}
        step_lines = [line for line in block.splitlines() if line.strip().startswith("s")]
        fields = [line.split()[4] for line in step_lines]     # ms, TFLOP/s, ratio, then predicted or library
        if block.startswith("8192^3"):
            assert "predicted" in block and fields == [f"{s.predicted:.2f}" for s in STEPS]
        else:
            assert "predicted" not in block and not preds & set(fields)


def test_recorded_checks_are_the_stamped_runs():
    lines = report.recorded_checks("gemm_h100.txt")
    assert [line.split()[0] for line in lines] == [s.name for s in STEPS]
    assert all(": PASS;" in line for line in lines)


def test_report_rows_refuses_a_file_without_steps():
    with pytest.raises(ValueError, match="no step rows"):
        report.report_rows("foundation_h100.txt")


def test_explore_rows():
    rows = report.explore_rows()
    assert [(n, s) for n, s, _, _ in rows if n == "s2"] == [("s2", 2), ("s2", 3), ("s2", 4), ("s2", 6)]
    assert all(ok for *_, ok in rows)


# --- the diffs -----------------------------------------------------------------------------------

def _body(s):
    lines = source_text(s.path).splitlines()
    i = next(i for i, line in enumerate(lines) if not line.startswith("//"))
    return lines[i:]


@pytest.mark.parametrize("i", range(2, len(STEPS) + 1))
def test_step_diff_with_all_context_rebuilds_both_files(i):
    old, new = _body(STEPS[i - 2]), _body(STEPS[i - 1])
    text = report.step_diff(i, context=10 ** 6).splitlines()
    assert text[:2] == [f"--- {STEPS[i - 2].file}", f"+++ {STEPS[i - 1].file}"]
    body = [line for line in text[2:] if not line.startswith("@@")]
    assert [line[1:] for line in body if line[0] in " +"] == new
    norm = lambda line: " ".join(line.split("//")[0].split())  # noqa: E731
    assert [norm(line[1:]) for line in body if line[0] in " -"] == [norm(line) for line in old]


@pytest.mark.parametrize("i", range(2, len(STEPS) + 1))
def test_step_diff_shows_only_changes_in_order(i):
    old, new = _body(STEPS[i - 2]), _body(STEPS[i - 1])
    text = report.step_diff(i).splitlines()[2:]
    plus = [line[1:] for line in text if line.startswith("+")]
    minus = [line[1:] for line in text if line.startswith("-")]
    assert plus and all(p in new for p in plus) and all(m in old for m in minus)
    runs, run = [], 0                 # unchanged lines between changes: at most 2 x context (1)
    for line in text + ["@@"]:
        if line.startswith(" "):
            run += 1
        else:
            runs.append(run)
            run = 0
    assert max(runs) <= 2 and sum(runs) < len(new) // 2


def test_step_diff_needs_a_step_before():
    with pytest.raises(ValueError, match="2..6"):
        report.step_diff(1)


# --- the timeline --------------------------------------------------------------------------------

@pytest.mark.parametrize("s", STEPS, ids=[s.name for s in STEPS])
def test_timeline_walks_the_kernels_loops(rec, s):
    m, n, k = rec.params["stamp_shape"]
    slices, tiles = expected_events(s, m, n, k, rec.params["sms"])
    tl = step_timeline(rec, s.name)
    assert tl.slices() == slices and tl.k_tiles == k // 64
    assert len(tl.epilogue_bars()) == tiles * (1 if s.threads == 128 else 2)
    assert 1.0 < tl.clock_ghz < 1.98          # the H100's SM clock tops out at 1980 MHz
    period = (tl.bars[1][tl.k_tiles - 1, 0] - tl.bars[1][0, 0]) / (tl.k_tiles - 1)
    assert tl.slice_period == pytest.approx(period, rel=0.15)
    for where in ("start", "boundary"):
        t0, t1 = tl.window(where)
        assert 0 <= t0 < t1 and 0 < tl.busy(t0, t1) <= 1


def test_timeline_windows(rec):
    tl = step_timeline(rec, "s4")
    t0, t1 = tl.window("start", slices=16)
    assert t0 == 0 and t1 == max(tl.bars[1][15, 1], tl.bars[2][15, 1])
    b0, b1 = tl.window("boundary", slices=16)
    epi = [e for tile, _, _, e in tl.epilogue_bars() if tile == 0]
    assert b0 == min(tl.bars[1][56, 0], tl.bars[2][56, 0]) and b1 >= max(epi)
    with pytest.raises(ValueError, match="window"):
        tl.window("middle")


def test_the_tma_store_epilogue_is_shorter(rec):
    """The claim notebook 07's second timeline makes, read from the stamps."""
    assert step_timeline(rec, "s6").epilogue < step_timeline(rec, "s5").epilogue / 4


def test_timeline_of_a_step_not_recorded(rec):
    with pytest.raises(KeyError):
        step_timeline(rec, "s9")


def test_timeline_table_lists_every_step(rec):
    text = report.timeline_table(rec)
    assert all(s.name in text for s in STEPS)


def test_sm_flop_per_cycle_by_hand(rec):
    tl = step_timeline(rec, "s1")
    assert report.sm_flop_per_cycle(rec, "s1") == pytest.approx(3 * 2 * 128 * 128 * 64 / tl.slice_period)
    assert report.H100_PEAK_FLOP_PER_SM_CYCLE == pytest.approx(4096, rel=1e-3)
    for s in STEPS:     # no step may exceed the tensor cores' peak
        assert report.sm_flop_per_cycle(rec, s.name) < report.H100_PEAK_FLOP_PER_SM_CYCLE


def test_hold_is_the_consumer_bar_and_fits_step_1s_period(rec):
    tl = step_timeline(rec, "s1")
    b = tl.bars[1][~np.isnan(tl.bars[1][:, 0])]
    assert tl.hold == np.median(b[:, 1] - b[:, 0])
    assert 0 < tl.hold + tl.load_to_data < tl.slice_period     # step 1 does nothing in parallel


# --- PTX and pictures ----------------------------------------------------------------------------

def test_ptx_features_show_each_mechanism_where_it_is_added():
    rows = {line[:30].strip(): line[30:].split() for line in report.ptx_features().splitlines()[1:]}
    has = lambda label: [c != "." for c in rows[label]]  # noqa: E731
    assert has(".multicast::cluster") == [False] * 4 + [True] * 2
    assert has("setmaxnreg") == [False] * 2 + [True] * 4
    assert has("TMA store") == [False] * 5 + [True]
    assert has("st.global (C from registers)") == [True] * 5 + [False]
    assert has("wgmma.wait_group 1") == [False] + [True] * 5


def test_pictures_draw(rec):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from bwlab.gemm import pictures
    fig = pictures.plot_ladder(rec)
    assert len(fig.axes) == 6 and rec.label in fig._suptitle.get_text()
    fig2 = pictures.plot_timelines(rec, ("s1", "s3"), "start", title="t")
    assert len(fig2.axes) == 2 and rec.label in fig2._suptitle.get_text()
    # legible at the ~1000 px a notebook shows: at most 10 inches wide (100 dpi), no text under 8 points
    for f in (fig, fig2, pictures.plot_timelines(rec, ("s5", "s6"), "boundary", title="t")):
        assert f.get_size_inches()[0] <= 10
        f.canvas.draw()
        small = {(t.get_text(), t.get_fontsize()) for t in f.findobj(matplotlib.text.Text)
                 if t.get_text().strip() and t.get_visible() and t.get_fontsize() < 8}
        assert not small, small
    plt.close("all")
    np.testing.assert_array_equal(rec["steps"], [s.name for s in STEPS])
