"""Stage 3 on real hardware: wgmma on Hopper (sm_90a) and tcgen05.mma on Blackwell (sm_100a), each
compared bit for bit with bwlab's model fed the same bytes and descriptors."""
import numpy as np
import pytest

from bwlab import umma


def _require_wgmma():
    from bwlab import device
    info = device.gpu_info()
    if info is None or not info.has_wgmma:
        pytest.skip("wgmma.mma_async exists on sm_90a (Hopper) only")


@pytest.mark.sm90
def test_wgmma_every_layout_matches_the_model():
    _require_wgmma()
    from bwlab.compile import load_module
    module = load_module("wgmma_sm90")
    regular, _ = umma.wgmma_cases(seed=3)
    bad = []
    for case in regular:
        hw, base = umma.launch_wgmma(case, module)
        result = case.check(hw)
        if not result.ok:
            bad.append(f"{case.label()}: {result}")
        assert base % 1024 == 0
    assert not bad, bad


@pytest.mark.sm100
@pytest.mark.emulated
@pytest.mark.parametrize("case", [
    umma.UmmaCase("f16", "f32", 128, 256, 64),
    umma.UmmaCase("bf16", "f32", 128, 64, 64, "MN", "128B", "MN", "64B", 1024, 32768, accumulate=True),
    umma.UmmaCase("f16", "f32", 64, 32, 32, "K", "32B", "MN", "none", 2048, 16384),
    umma.UmmaCase("f16", "f16", 128, 16, 64, "K", "none", "K", "64B", 16, 40960),
    umma.UmmaCase("tf32", "f32", 128, 128, 32, "K", "128B", "MN", "128B_base32B", 0, 65536),
    umma.UmmaCase("tf32", "f32", 64, 64, 16, "MN", "128B_base32B", "K", "32B", 512, 16384, accumulate=True),
], ids=["f16-128x256-K128B", "bf16-MN-acc", "m64-layoutF", "f16acc", "tf32-B-MN-base32B", "tf32-A-MN-base32B"])
def test_tcgen05_mma_matches_the_model(case):
    # Every case above passed the tcgen05.mma rule tables when it was built (UmmaCase.__post_init__
    # runs bwlab.umma.rules.require_mma), so no illegal configuration reaches the GPU.
    hw = case.run()
    case.check(hw).assert_ok()     # D's cells only; an f16 D only in the low 16 bits of each word
    assert np.array_equal(case.d_from_tmem(hw), case.reference())


@pytest.mark.sm90
def test_wgmma_case_run_is_the_model():
    _require_wgmma()
    case = umma.wgmma_cases()[0][3]
    case.check().assert_ok()          # run() on the GPU, model() here, bit for bit
