"""The teaching kernel of notebook 02 without a GPU: it compiles, its configuration and argument
checks, the mbarrier outcome the model predicts for a bad mask, the recordings' replay, the widget's
legal values and the summary of the committed benchmark."""
import numpy as np
import pytest

from bwlab import multicast as mc
from bwlab.checks import record_multicast as rm
from bwlab.lab import TeachingKernel
from bwlab.results import load_recording


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_teaching_kernel_compiles_with_its_cluster(arch):
    k = TeachingKernel(mc.TEACH_KERNEL)
    assert k.targets == ("sm_90a", "sm_100a")
    ptx = k.compile(arch, defines={"CLUSTER_X": 2, "CLUSTER_Y": 4}).ptx_of("teach_multicast")
    assert ".reqnctapercluster 2, 4, 1" in ptx and ptx.count(".multicast::cluster") == 2
    assert "mbarrier.try_wait.parity.acquire.cluster" in ptx


def test_bad_mask_edit_compiles():
    assert rm.bad_mask_kernel().edited
    rm.bad_mask_kernel().compile("sm_90a")


def test_teach_masks_are_cutes():
    cfg = mc.teach_config()
    assert mc.teach_masks(cfg).tolist() == [[0x5, 0x3], [0xA, 0x3], [0x5, 0xC], [0xA, 0xC]]
    cfg = mc.teach_config(cluster=(2, 4))
    for r, (a, b) in enumerate(mc.teach_masks(cfg)):
        assert a == mc.create_tma_multicast_mask(cfg.layout, mc.cta_coord(cfg.layout, r), (2,))
        assert mc.mask_ranks(b) == [r - r % 2, r - r % 2 + 1]


@pytest.mark.parametrize("kw,rule", [
    (dict(swizzle="128B"), "no swizzle"),
    (dict(peers=2, cluster=(2, 2)), "peers 1"),
    (dict(operands="A"), "A and B"),
    (dict(dtype="float32"), "16-bit"),
    (dict(tile_m=20, cluster=(2, 2)), "multiple of 1024"),
    (dict(tile_m=192, tile_n=192), "static shared memory"),
])
def test_teach_config_rules(kw, rule):
    cfg = mc.MulticastConfig(**{**dict(cluster=(2, 2), tile_m=64, tile_n=64, swizzle="none"), **kw})
    with pytest.raises(ValueError, match=rule):
        mc.require_teach_config(cfg)


def test_run_teach_checks_arguments_before_the_gpu():
    cfg = mc.teach_config()
    ops = mc.make_operands(cfg, 0)
    with pytest.raises(ValueError, match="no swizzle"):
        mc.run_teach(mc.MulticastConfig(cluster=(2, 2)), ops)
    with pytest.raises(ValueError, match="masks are"):
        mc.run_teach(cfg, ops, masks=np.zeros((2, 2), np.uint16))
    with pytest.raises(ValueError, match="masks are"):
        mc.run_teach(cfg, ops, masks=np.full((4, 2), 0x10, np.uint16))   # rank 4 is outside a 2x2 cluster
    with pytest.raises(ValueError, match="TeachingKernel"):
        mc.run_teach(cfg, ops, kernel=42)                 # a TeachingKernel, or the file's name


def test_barrier_outcome():
    cfg = mc.teach_config()
    assert all(o["completes"] and o["arrived"] == 16384 for o in mc.barrier_outcome(cfg))
    bad = mc.barrier_outcome(cfg, rm.bad_masks(cfg))
    assert [o["rank"] for o in bad if not o["completes"]] == [0]
    assert bad[0]["arrived"] == 8192 and "NEVER completes (8192 B missing)" in mc.barrier_table(bad)
    early = mc.barrier_outcome(cfg, expect_tx=12288)   # expecting the slices one CTA issues is too little
    assert all(o["completes"] and o["completed_after"] == 12288 for o in early)
    assert "EARLY" in mc.barrier_table(early)
    assert not any(o["completes"] for o in mc.barrier_outcome(cfg, expect_tx=16384 + 16))


@pytest.mark.parametrize("name", ["multicast_every_cta", "multicast_teach", "multicast_bad_mask"])
def test_recordings_replay(name):
    assert rm.replay(load_recording(name)).ok


def test_replay_catches_a_wrong_byte():
    rec = load_recording("multicast_teach")
    rec.arrays["smem"] = rec["smem"].copy()
    rec.arrays["smem"][3, 100] ^= 1
    res = rm.replay(rec)
    assert not res.ok and "CTA 3" in str(res)


@pytest.mark.parametrize("m", [1, 2, 4, 8, 16])
def test_explorer_offers_legal_values_only(m):
    for peers in (1, 2):
        ch = mc.explorer_choices(m, peers)
        assert all(m * n <= 16 for n in ch["n"]) and ch["n"]
        assert (2 in ch["peers"]) == (m % 2 == 0)
        for n in ch["n"]:
            for p in ch["peers"]:
                mc.cluster_layout_vmnk((m, n, 1), p)   # every offered combination is a legal cluster


def test_explorer_rank_slider_follows_the_cluster():
    pytest.importorskip("ipywidgets", reason="ipywidgets is not installed (e.g. the GPU image)")
    import matplotlib
    matplotlib.use("Agg")
    w = mc.mask_explorer(4, 4, 1, 9)
    m, n, p, r = w.children[0].children
    assert (r.min, r.max, r.value) == (0, 15, 9)
    m.value = 8
    assert max(n.options) == 2 and r.max == 8 * n.value - 1 and r.value <= r.max
    m.value = 1
    assert tuple(p.options) == (1,) and r.max == n.value - 1


def test_bench_summary_reads_the_committed_report():
    from bwlab.checks.multicast import bench_summary
    rows = [line.split() for line in bench_summary(ctas=120).splitlines()[2:-1]]
    assert [int(r[0]) for r in rows] == [1, 2, 4, 8]
    for r in rows:   # own / multicast is the ratio of the two times; multicast's L2 reads are one tile per cluster
        assert abs(float(r[3].rstrip("x")) - int(r[1]) / int(r[2])) < 0.02 and abs(float(r[5]) - 1) < 0.01
