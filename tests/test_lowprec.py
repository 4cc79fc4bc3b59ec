"""bwlab.lowprec.pictures: quantising drawn, the scales' trip drawn, Hopper FP8's promotion to f32 computed on the
measured accumulator rule."""
from __future__ import annotations

import matplotlib
import numpy as np
import pytest

from bwlab.lowprec import pictures as lp
from bwlab.umma.scales import sf_gmem_offsets

matplotlib.use("Agg")


def test_fp8_promotion_error_grows_with_the_instructions_kept_in_the_tensor_core():
    e = lp.fp8_promotion_errors(Ns=(1, 4, 32, 128))
    med = [e[n][0] for n in (1, 4, 32, 128)]
    assert med == sorted(med) and med[-1] > 10 * med[0]
    assert med[0] > 2.0 ** -20       # even n = 1 cuts each instruction's sum to 13 fraction bits (not f32's 23)
    with pytest.raises(ValueError, match="does not divide"):
        lp.fp8_promotion_errors(Ns=(3,), K=128)


def test_an_outlier_flushes_its_nvfp4_neighbours_but_not_its_mxfp8_ones():
    x = np.full((1, 32), 0.01)
    x[0, 3] = 100.0
    nv, mx = lp.quantization_losses(x, "nvfp4"), lp.quantization_losses(x, "mxfp8")
    assert nv["flushed"] == 15 and mx["flushed"] == 0        # 16-blocks: the outlier's 15 neighbours
    assert mx["max_rel_error"] < 2 ** -3


def test_the_pictures_draw_and_state_their_lesson():
    import matplotlib.pyplot as plt
    rng = np.random.default_rng(0)
    x = rng.standard_normal(64)
    x[5] = 40
    for fmt in ("mxfp8", "nvfp4"):
        ax = lp.plot_quantization(x, fmt)
        assert "largest value of a block sets its scale" in ax.get_title()
    axes = lp.plot_scale_trip()
    assert "every lane quarter" in axes[1].get_title()
    ax = lp.plot_fp8_promotion({1: (1e-5, 1e-4), 4: (4e-5, 3e-4)})
    assert "promote to f32" in ax.get_title()
    plt.close("all")
    assert sf_gmem_offsets(128, 4)[33, 2] == 16 * 1 + 4 * 1 + 2


def test_the_fp8_measurement_quoted_is_the_committed_recording():
    from pathlib import Path
    text = (Path(__file__).resolve().parents[1] / "docs" / "results" / "wgmma_fp8_h200.txt").read_text()
    first, m = text.splitlines()[0], lp.FP8_ACCUMULATOR_MEASURED
    assert first.startswith(m["date"]) and f"GPU {m['gpu']}," in first and f"driver {m['driver']}," in first
    assert f"total: {m['equal']} of {m['accumulators']} accumulators equal" in text
    assert m["command"].split(" --out")[0] in text.splitlines()[-1]
