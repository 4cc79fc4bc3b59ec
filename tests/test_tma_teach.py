"""The teaching kernel of notebook 01 (cuda_src/teach_tma.cu, bwlab.tma.run_teach), its recordings
(bwlab/checks/record_tma.py) and the swizzle explorer's legal widths."""
import time

import numpy as np
import pytest

from bwlab import tma
from bwlab.checks import record_tma as rt
from bwlab.hw.swizzle import MODES as SWIZZLE_MODES
from bwlab.lab import TeachingKernel
from bwlab.results import load_recording
from bwlab.tma import TensorMap, TensorMapError, TmaLoad
from bwlab.tma.tensor_map import TMAP_DTYPES, legal_inner_elems

STEPS = ("mbarrier.init.shared::cta.b64", "fence.mbarrier_init.release.cluster",
         "mbarrier.arrive.expect_tx.shared::cta.b64",
         "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes",
         "mbarrier.try_wait.parity.shared::cta.b64")


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_teaching_kernel_compiles_with_the_handshake_in_order(arch):
    k = TeachingKernel("teach_tma.cu")
    assert k.targets == ("sm_90a", "sm_100a")
    ptx = k.compile(arch).ptx
    where = [ptx.index(s) for s in STEPS]
    assert where == sorted(where), "the PTX must follow init -> fence -> expect_tx -> load -> wait"
    assert "TmaDescriptor" not in ptx and ".param .align 64 .b8 teach_tma_load_param_0[128]" in ptx


def test_teaching_kernel_is_short():
    assert len(TeachingKernel("teach_tma.cu").text.splitlines()) <= 45


def test_bad_expect_tx_edit_is_one_line_and_compiles():
    mine = rt.bad_expect_tx_kernel()
    changed = [l for l in mine.diff().splitlines() if l.startswith(("+ ", "- ", "+\t", "-\t")) or
               (l[:1] in "+-" and not l.startswith(("+++", "---")))]
    assert changed == ["-    const u32 tx_bytes = box_bytes;",
                       f"+    const u32 tx_bytes = box_bytes + {rt.BAD_EXPECT_TX};"]
    mine.compile("sm_90a")


def test_mbarrier_model_never_completes_the_phase_of_the_bad_edit():
    bar = rt.mbarrier_after(1024, 16)
    assert (bar.tx, bar.phase, bar.try_wait_parity(0)) == (16, 0, False)
    good = rt.mbarrier_after(1024, 0)
    assert (good.tx, good.phase, good.try_wait_parity(0)) == (0, 1, True)


@pytest.mark.parametrize("kwargs,coords,rule", [
    (dict(dtype="float16", global_shape=(64, 8, 4), box_shape=(64, 8, 1)), (0, 0, 0), "teach-rank"),
    (dict(dtype="float16", global_shape=(64, 64), box_shape=(16, 8), swizzle="128B"), (0, 0), "teach-narrow"),
    (dict(dtype="float32", global_shape=(256, 256), box_shape=(256, 32)), (0, 0), "teach-smem"),
    (dict(dtype="float16", global_shape=(64, 64), box_shape=(64, 8)), (4, 0), "coords-inner-alignment"),
    (dict(dtype="float16", global_shape=(64, 64), box_shape=(64, 8)), (0,), "coords"),
])
def test_run_teach_refuses_what_the_teaching_kernel_cannot_load(kwargs, coords, rule):
    t = TensorMap(**kwargs)
    with pytest.raises(TensorMapError) as e:
        tma.run_teach(np.zeros(8192, np.uint8), t, coords)  # refused before any GPU is touched
    assert e.value.rule == rule


def test_run_teach_accepts_the_notebooks_boxes():
    g = rt.tma_gmem()
    for _, args, coords in rt.TEACH_CASES:
        assert tma.require_teach_args(g, TensorMap(**args), coords) == coords


def test_a_corrupted_recording_fails_its_replay():
    rec = load_recording("tma_load_modes")
    assert rt.replay(rec).ok
    rec.arrays["smem_7"] = rec["smem_7"].copy()
    rec.arrays["smem_7"][100] ^= 1
    r = rt.replay(rec)
    assert not r.ok and "SMEM byte" in str(r)
    bad = load_recording("tma_teach_bad_expect_tx")
    bad.arrays["timed_out"] = np.bool_(False)
    assert not rt.replay(bad).ok


@pytest.mark.parametrize("dtype", TMAP_DTYPES)
@pytest.mark.parametrize("swizzle", SWIZZLE_MODES)
def test_explorer_offers_exactly_the_legal_box_widths(dtype, swizzle):
    legal = set(legal_inner_elems(dtype, swizzle))
    assert legal
    for n in range(1, 257):
        try:
            TensorMap(dtype, (n, 256), (n, 8), swizzle=swizzle)
            ok = True
        except TensorMapError:
            ok = False
        assert ok == (n in legal), (dtype, swizzle, n)


def test_explorer_snaps_to_the_nearest_legal_width():
    pytest.importorskip("ipywidgets")
    import matplotlib
    matplotlib.use("Agg")
    w = tma.swizzle_explorer()
    dt, sw, inner, _, _ = w.children[0].children
    assert list(inner.options) == legal_inner_elems("float16", "128B") and inner.value == 64
    sw.value = "32B"
    assert inner.value == 16 and list(inner.options) == [8, 16]
    dt.value = "uint8"
    assert inner.value == 16 and list(inner.options) == [16, 32]
    sw.value = "none"
    assert inner.value == 16 and max(inner.options) == 256


# ---- on a GPU with TMA ---------------------------------------------------------------------------
@pytest.mark.sm90
def test_teaching_kernel_equals_the_model_on_the_gpu():
    g = rt.tma_gmem()
    for _, args, coords in rt.TEACH_CASES:
        t = TensorMap(**args)
        TmaLoad(g, t, coords).check(tma.run_teach(g, t, coords), source="GPU").assert_ok()


@pytest.mark.sm90
def test_bad_expect_tx_times_out_naming_the_barrier():
    from bwlab.runtime import MbarrierTimeout
    g = rt.tma_gmem()
    _, args, coords = rt.TEACH_CASES[0]
    t = TensorMap(**args)
    t0 = time.perf_counter()
    with pytest.raises(MbarrierTimeout) as e:
        tma.run_teach(g, t, coords, kernel=rt.bad_expect_tx_kernel())
    assert time.perf_counter() - t0 < 5
    assert e.value.barrier == "smem_full" and e.value.expected_tx == t.box_bytes + rt.BAD_EXPECT_TX
    TmaLoad(g, t, coords).check(tma.run_teach(g, t, coords)).assert_ok()  # the context survived
