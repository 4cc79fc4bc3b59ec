"""The sm_100a kernels executed in the PTX emulator (bwlab.emu.tcgen05), compared with the models, and
the tcgen05 protocol: one deliberately broken kernel per rule, each raising the named error.

No GPU is needed (the emulated tier runs the sm_100a PTX that NVRTC emits). Blackwell's accumulation
rounding has not been measured; the cases use operands whose sums are exact, so what is compared is
which element lands where (bwlab.umma.model says the same)."""
from __future__ import annotations

import numpy as np
import pytest

from bwlab import emu, umma
from bwlab.emu import ProtocolError, ProxyFenceMissing
from bwlab.emu.tcgen05 import PeerExited, TmemAllocError, TmemAllocHang, TmemLaneQuarter, TmemLeak
from bwlab.runtime import EMULATED, MbarrierTimeout, launch
from bwlab.source import source_text
from bwlab.umma.runner import UMMA_BARRIERS

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

TEACH = umma.UmmaCase("f16", "f32", 128, 64, 64, b_base=16384)


@pytest.fixture(autouse=True)
def _emulated(monkeypatch):
    monkeypatch.setenv("BWLAB_BACKEND", "emulated")


def _teach_args(case, xp=emu):
    ad, bd = case.descriptors()
    img = case.smem_image()
    out = xp.zeros((128, case.tmem_columns), np.uint32)
    return out, (xp.asarray(img), np.uint32(img.size), xp.asarray(ad), xp.asarray(bd), np.uint32(case.k_blocks),
                 np.uint32(case.idesc), out, np.uint32(case.tmem_columns))


def _launch_teach(module, case=TEACH):
    out, args = _teach_args(case)
    launch(module, "teach_umma", (1,), (128,), args, barrier_names=UMMA_BARRIERS)
    return out.get()


# ------------------------------------------------------------------------------------------------
# the kernels against their models
# ------------------------------------------------------------------------------------------------

def test_teach_umma_equals_model():
    assert TEACH.check(umma.run_teach_umma(TEACH)).ok


UMMA_CASES = [
    umma.UmmaCase("f16", "f32", 128, 256, 64),
    umma.UmmaCase("bf16", "f32", 128, 64, 64, "MN", "128B", "MN", "64B", 1024, 32768, accumulate=True),
    umma.UmmaCase("f16", "f32", 64, 32, 32, "K", "32B", "MN", "none", 2048, 16384),
    umma.UmmaCase("f16", "f16", 128, 16, 64, "K", "none", "K", "64B", 16, 40960),
    umma.UmmaCase("tf32", "f32", 128, 128, 32, "K", "128B", "MN", "128B_base32B", 0, 65536),
]


@pytest.mark.parametrize("case", UMMA_CASES, ids=lambda c: c.label())
def test_umma_sm100_equals_model(case):
    got = umma.run_umma(case)
    assert np.array_equal(got, case.model()), case.check(got)


# ------------------------------------------------------------------------------------------------
# the timeout path
# ------------------------------------------------------------------------------------------------

def test_forced_timeout_reports_the_tmem_leak_of_teach_umma():
    """teach_umma.cu as it was (issue 20's audit): a bounded wait that gives up skips tcgen05.dealloc. A budget
    of 0 ns forces the timeout on the unchanged kernel; the emulator names the leak."""
    m = EMULATED.load("teach_umma.cu", defines={"BW_WAIT_TIMEOUT_NS": "0"}, arch="sm_100a")
    with pytest.raises(TmemLeak, match=r"exits with TMEM still allocated: 64 columns.*bounded mbarrier wait"):
        _launch_teach(m)
