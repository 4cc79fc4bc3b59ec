"""bwlab.flow.grid: the flow tiled over a grid in the model tier — 1-SM tiles, multicast clusters, 2-SM
pairs — against NumPy, and the multicast plan against bwlab.multicast and the TMA model."""
import numpy as np
import pytest

from bwlab.flow.grid import VARIANTS, FlowGrid
from bwlab.multicast import mask_ranks
from bwlab.tma import TensorMap, tma_load_model
from bwlab.hw.dtypes import from_float


@pytest.mark.parametrize("variant", VARIANTS)
def test_grid_model_equals_numpy(variant):
    g = FlowGrid(256, 256, 128, variant=variant)
    d, tmem = g.model()
    assert np.array_equal(d, g.reference())
    assert len(tmem) == g.grid[0] * g.grid[1]


def test_full_size_plan_tutorial_shape():
    g = FlowGrid(variant="multicast", cluster=(2, 2))
    assert g.grid == (4, 8) and len(g.all_loads()) == 32
    one = FlowGrid(variant="1sm")
    # every A and B tile is read once per cluster instead of once per CTA: half the L2 reads with 2x2
    assert g.l2_reads_per_k_tile() * 2 == one.l2_reads_per_k_tile() == 32 * 2 * 128 * 64 * 2
    ld = g.loads(1, 1)
    assert ld.rank == 3 and mask_ranks(ld.a_mask) == [1, 3] and mask_ranks(ld.b_mask) == [2, 3]


def test_multicast_slices_assemble_the_whole_tile():
    g = FlowGrid(256, 512, 128, variant="multicast", cluster=(2, 4))
    a, b = g.values()
    for bx, by in ((0, 0), (1, 3)):
        sa, sb = g.smem_of(bx, by, 1)
        ld = g.loads(bx, by)
        ta = TensorMap("float16", (g.K, g.M), (64, 128), swizzle="128B")
        want = tma_load_model(np.ascontiguousarray(from_float(a, "f16")), ta, (64, ld.a_rows[0]), 0)
        assert np.array_equal(sa, want)
        slices = {g.loads(px, py).a_issue for px, py in
                  [(bx, c) for c in range(4 * (by // 4), 4 * (by // 4) + 4)]}
        assert len(slices) == 4                      # four CTAs each issue a quarter of the A tile


def test_two_sm_pair_halves():
    g = FlowGrid(variant="2sm")
    lo, hi = g.loads(0, 2), g.loads(1, 2)
    assert lo.a_rows == (0, 128) and hi.a_rows == (128, 256)
    assert lo.b_rows == (256, 320) and hi.b_rows == (320, 384)        # each CTA stages half of B
    assert lo.d_rows == (0, 128) and hi.d_rows == (128, 256) and lo.d_cols == hi.d_cols == (256, 384)


def test_bad_grid_refused():
    with pytest.raises(ValueError):
        FlowGrid(variant="multicast", cluster=(3, 2))
    with pytest.raises(ValueError):
        FlowGrid(variant="3sm")
