"""TMA multicast on a real GPU (sm_90+): every CTA's SMEM equals the model, CTA ranks are as the
cluster layout says, and a wrong expect_tx under a cluster comes back as MbarrierTimeout."""
import numpy as np
import pytest

from bwlab import multicast as mc
from bwlab.checks import multicast as mcheck

pytestmark = [pytest.mark.sm90, pytest.mark.emulated]


@pytest.mark.parametrize("cluster,peers,operands", [
    ((2, 2), 1, "AB"), ((2, 4), 1, "A"), ((4, 2), 1, "B"), ((4, 2), 2, "AB"), ((1, 8), 1, "AB"),
])
def test_every_cta_gets_its_tiles(cluster, peers, operands):
    cfg = mc.MulticastConfig(cluster=cluster, peers=peers, operands=operands, grid_clusters=(2, 1))
    res = mcheck.check_config(cfg, seed=7)
    assert res.ok, res.line()


@pytest.mark.parametrize("kw", [
    dict(cluster=(2, 4), tile_m=24, operands="A"),                       # 768-byte slices, 128B swizzle
    dict(cluster=(1, 8), tile_m=8, operands="A"),                        # 128-byte slices
    dict(cluster=(4, 2), tile_n=40, operands="AB", grid_clusters=(2, 1)),  # 1280-byte B slices
    dict(cluster=(2, 2), tile_k=32, tile_m=12, swizzle="64B", operands="A"),
])
def test_slices_aligned_to_128_bytes_only(kw):
    """Slices that start inside the swizzle pattern's span land as the address-based model says."""
    cfg = mc.MulticastConfig(**kw)
    assert cfg.slice_of(cfg.operands[-1], 0).nbytes % 1024
    res = mcheck.check_config(cfg, seed=3)
    assert res.ok, res.line()


def test_gpu_smem_equals_whole_tiles():
    cfg = mc.MulticastConfig(cluster=(2, 4), operands="AB")
    ops = mc.make_operands(cfg, seed=1)
    run = mc.launch_multicast(cfg, ops)
    expect = mc.expected_smem(cfg, ops, smem_address=int(run.smem_address[0]))
    assert np.array_equal(run.smem, expect)
    assert [int(r) for r in run.ranks] == [p.rank for p in mc.plan(cfg)]


def test_case_check_on_the_gpu():
    case = mc.MulticastLoad(mc.MulticastConfig(cluster=(2, 4), operands="AB"), seed=2)
    got = case.run()
    assert got.shape == case.model().shape and got.dtype == np.uint8
    case.check().assert_ok()


def test_wrong_expect_tx_times_out_and_the_next_launch_works():
    from bwlab.runtime import MbarrierTimeout
    cfg = mc.MulticastConfig(cluster=(2, 2))
    with pytest.raises(MbarrierTimeout, match="tile_full"):
        mc.run_multicast(cfg, mc.make_operands(cfg), extra_tx=16)
    assert mcheck.check_config(cfg).ok


@pytest.mark.not_emulated
def test_bench_kernel_runs_every_mode():
    res, _ = mcheck.run_bench(mcheck.BenchConfig(cluster=4, ctas=16, iters=8), repeat=2, warmup=1)
    assert set(res) == {0, 1, 2}


# -- the teaching kernel (cuda_src/teach_multicast.cu) ---------------------------------------------
@pytest.mark.parametrize("cluster", [(2, 1), (2, 2), (1, 4), (2, 4)])
def test_teaching_kernel_equals_the_model(cluster):
    cfg = mc.teach_config(cluster=cluster, grid_clusters=(2, 1))
    case = mc.MulticastLoad(cfg, seed=5)
    res = case.check(mc.run_teach(cfg, case.operands), source="GPU")
    assert res.ok, str(res)


def test_teaching_kernel_with_a_mask_leaving_out_cta_0_times_out_naming_it():
    import time
    from bwlab.checks.record_multicast import bad_mask_kernel
    from bwlab.runtime import MbarrierTimeout
    cfg = mc.teach_config()
    ops = mc.make_operands(cfg, seed=0)
    t0 = time.perf_counter()
    with pytest.raises(MbarrierTimeout) as e:
        mc.run_teach(cfg, ops, kernel=bad_mask_kernel())
    assert time.perf_counter() - t0 < 1.0 + 5.0  # 200 ms wait (+ the compile of the edited text)
    assert e.value.cta_rank == 0 and e.value.barrier == "full" and e.value.expected_tx == cfg.expect_tx_bytes
    # The same mistake given as masks from Python; and the next launch works.
    with pytest.raises(MbarrierTimeout):
        from bwlab.checks.record_multicast import bad_masks
        mc.run_teach(cfg, ops, masks=bad_masks(cfg))
    assert mc.MulticastLoad(cfg, ops).check(mc.run_teach(cfg, ops)).ok
