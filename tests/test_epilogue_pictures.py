"""Notebook 05's pictures of the epilogue's path, the bulk async-groups and one edge store: what they
draw comes from the models, and bad input is refused with the rule."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from bwlab.epilogue import EpilogueOrdering, SmemTile, TmaStore, edge_store_case  # noqa: E402
from bwlab.epilogue.ordering import replay_states  # noqa: E402
from bwlab.epilogue.pictures import plot_bulk_groups, plot_edge_store, plot_epilogue_path  # noqa: E402
from bwlab.epilogue.store import store_fates  # noqa: E402
from bwlab.epilogue.tile import chunk_path  # noqa: E402
from bwlab.tma import TensorMap  # noqa: E402


def _ring(final_wait_group=True):
    e = EpilogueOrdering(buffers=("D0", "D1"))
    for it in range(4):
        if it >= 2:
            e.wait_group_read(1); e.bar_sync()
        e.st_shared(f"D{it % 2}"); e.fence_proxy_async(); e.bar_sync()
        e.tma_store(f"D{it % 2}"); e.commit_group()
    if final_wait_group:
        e.wait_group(0); e.read_gmem("D1")
    else:
        e.wait_group_read(0)
    e.exit()
    return e


def teardown_function():
    plt.close("all")


def test_epilogue_path_draws_the_swizzled_slots():
    fig = plot_epilogue_path(SmemTile(128, 32, "float32", "128B"), rows=8)
    smem_ax = fig.axes[1]
    # row 1's chunk 0 sits in slot 1 (0 ^ 1): the label drawn at (x=1, y=1) is c0
    labels = {(round(t.get_position()[0]), round(t.get_position()[1])): t.get_text() for t in smem_ax.texts}
    assert labels[(1, 1)] == "c0" and labels[(0, 1)] == "c1" and labels[(7, 7)] == "c0"
    assert "fence" in fig._suptitle.get_text()


def test_epilogue_path_refuses():
    with pytest.raises(ValueError, match="one TMA box with 128-byte rows"):
        plot_epilogue_path(SmemTile(8, 64, "float32", "128B"))
    with pytest.raises(ValueError, match="one TMA box with 128-byte rows"):
        plot_epilogue_path(SmemTile(8, 16, "float32", "64B"))
    with pytest.raises(ValueError, match="rows must be in"):
        plot_epilogue_path(SmemTile(8, 32, "float32", "128B"), rows=9)


def test_replay_states_follow_the_waits():
    snaps, hazards = replay_states(_ring())
    assert hazards == []
    states = dict(snaps[10][1])                 # right after the first wait_group.read 1
    assert snaps[10][0] == "cp.async.bulk.wait_group.read 1"
    assert states == {"store#1(D0)": "read done", "store#2(D1)": "in flight"}
    assert set(snaps[-1][1].values()) == {"complete"}
    _, states = replay_states(_ring(final_wait_group=False))[0][-1]
    assert set(states.values()) == {"read done"}  # wait_group.read never makes a store complete


def test_bulk_groups_marks_a_rejected_step():
    e = EpilogueOrdering(buffers=("D",), strict=False)
    e.st_shared("D"); e.fence_proxy_async(); e.bar_sync(); e.tma_store("D"); e.commit_group()
    e.st_shared("D")                             # overwritten while the store may read it
    e.exit()
    ax = plot_bulk_groups(e)
    assert "rejected" in ax.get_title()
    with pytest.raises(ValueError, match="no TMA store"):
        plot_bulk_groups(EpilogueOrdering(buffers=("D",)))


def test_edge_store_categories_come_from_the_model():
    fig = plot_edge_store(edge_store_case())
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any("padding" in t for t in labels) and any("last row" in t for t in labels)
    swz = TmaStore(np.zeros((20, 32), np.float32), TensorMap("float32", (32, 20), (32, 8), swizzle="128B"),
                   (0, 16), np.zeros(1024, np.float32))
    with pytest.raises(ValueError, match="without a swizzle"):
        plot_edge_store(swz)


def test_chunk_path_follows_the_swizzle_and_back():
    regs, smem, gmem = chunk_path(SmemTile(64, 64, "bfloat16", "128B"), rows=8)
    assert np.array_equal(regs, gmem)            # the store undoes the swizzle
    for r in range(8):
        assert list(smem[r]) == [8 * r + (j ^ r) for j in range(8)]


def test_store_fates_of_the_edge_case():
    case = edge_store_case()
    fate, off = store_fates(case.tmap, case.coords)
    assert fate.shape == (8, 16)
    assert (fate[:4, :11] == 0).all() and (fate[:4, 11] == 1).all() and (fate[:4, 12:] == 2).all()
    assert (fate[4:] == 3).all()
    model = case.model().reshape(-1)
    written = off[fate < 2]
    assert sorted(written.tolist()) == np.flatnonzero(model != case.gmem.reshape(-1)).tolist()
