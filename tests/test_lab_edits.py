"""Every `%%cuda` edit is run by every runner of its file: each teaching kernel, both whole-trip kernels
and the ladder's steps are edited through the magic as a notebook does, and the next run (made the way
the notebook makes it, with or without `kernel=`) must execute the edit: its output changes, or the
announced transaction bytes never arrive and the run ends in a timeout. In the emulated tier here (no
GPU), on a GPU in a worker process."""
from __future__ import annotations

import re

import numpy as np
import pytest

from bwlab import lab

pytestmark = pytest.mark.emulated

HANGS = (RuntimeError,)       # MbarrierTimeout, the sandbox's KernelHang, a step's error word: all RuntimeError


@pytest.fixture(autouse=True)
def _no_edits(monkeypatch):
    monkeypatch.setattr(lab, "EDITS", {})
    yield


def _magic(file: str, text: str, capsys) -> str:
    lab._cuda_magic(file, text)
    out = capsys.readouterr().out
    assert lab.canonical(file) in lab.EDITS, out
    return out


def _too_many_bytes(file: str) -> str:
    """The file with every arrive.expect_tx announcing four times the bytes that will arrive."""
    text = lab.TeachingKernel(file).text
    out, n = re.subn(r"mbarrier_arrive_expect_tx\(([^,]+),\s*([^;]+)\);",
                     lambda m: f"mbarrier_arrive_expect_tx({m.group(1)}, 4u * ({m.group(2)}));", text)
    assert n, f"{file} has no mbarrier_arrive_expect_tx to edit"
    return out


def _xor(file: str, old: str, new: str) -> str:
    text = lab.TeachingKernel(file).text
    assert text.count(old) == 1, f"{file}: {old!r}"
    return text.replace(old, new)


def test_the_magic_names_the_calls_that_run_the_edit(capsys):
    out = _magic("full_flow_sm100.cu", lab.TeachingKernel("full_flow_sm100.cu").text, capsys)
    assert "Flow(" in out and "with or without kernel=" in out
    out = _magic("s3_warp_roles.cu", lab.TeachingKernel("gemm_sm100/s3_warp_roles.cu").text, capsys)
    assert "gemm_sm100/s3_warp_roles.cu" in lab.EDITS and "Blackwell step" in out
    lab._cuda_magic("tma_load.cu", lab.TeachingKernel("tma_load.cu").text)   # a harness kernel: said, not kept
    out = capsys.readouterr().out
    assert "no call of the course launches an edit" in out and "tma_load.cu" not in lab.EDITS


def test_hello_copy_runs_the_edit(capsys):
    from bwlab.hello import HelloCopy
    _magic("hello_bulk.cu", _too_many_bytes("hello_bulk.cu"), capsys)
    with pytest.raises(HANGS):
        HelloCopy(4096, blocks=2).run()
    lab.reset()
    assert np.array_equal(HelloCopy(4096, blocks=2).run(), HelloCopy(4096, blocks=2).model())


def test_tma_teaching_kernel_runs_the_edit(capsys):
    from bwlab import tma
    from bwlab.tma import TensorMap
    gmem = np.arange(80 * 48, dtype=np.uint16).reshape(48, 80)
    case = tma.TmaLoad(gmem, TensorMap("bfloat16", (80, 48), (32, 16)), (32, 16), kernel="teach_tma.cu")
    _magic("teach_tma.cu", _xor("teach_tma.cu", "out[i] = smem[i];", "out[i] = smem[i] ^ 0x5A;"), capsys)
    got = case.run()
    assert np.array_equal(got ^ 0x5A, case.model())
    _magic("teach_tma.cu", _too_many_bytes("teach_tma.cu"), capsys)
    with pytest.raises(HANGS):
        case.run()


def test_multicast_teaching_kernel_runs_the_edit(capsys):
    from bwlab import multicast as mc
    case = mc.MulticastLoad(mc.teach_config(), seed=0, kernel="teach_multicast.cu")
    _magic("teach_multicast.cu", _too_many_bytes("teach_multicast.cu"), capsys)
    with pytest.raises(HANGS):
        case.run()


def test_wgmma_teaching_kernel_runs_the_edit(capsys):
    from bwlab import umma
    case = umma.WgmmaCase("f16", N=64, K=64, a_major="K", a_swizzle="128B", b_major="K", b_swizzle="128B",
                          kernel="teach_wgmma.cu")
    _magic("teach_wgmma.cu", _xor("teach_wgmma.cu", "d_out[threadIdx.x * 32 + i] = d[i];",
                                  "d_out[threadIdx.x * 32 + i] = d[i] + 1.0f;"), capsys)
    assert np.allclose(np.asarray(case.run()) - 1.0, np.asarray(case.model()), atol=1e-3)


def test_umma_teaching_kernel_runs_the_edit(capsys):
    from bwlab import umma
    case = umma.UmmaCase("f16", "f32", M=128, N=64, K=64, b_base=16384, kernel="teach_umma.cu")
    _magic("teach_umma.cu", _xor("teach_umma.cu", "+ col + j] = r[j];", "+ col + j] = r[j] ^ 0x80000000u;"), capsys)
    got, want = np.asarray(case.run()), np.asarray(case.model())     # f32 bits: the sign bit flipped
    assert not np.array_equal(got, want) and np.array_equal(got ^ np.uint32(0x80000000), want)


def test_tmem_teaching_kernel_runs_the_edit(capsys):
    from bwlab import tmem
    from bwlab.tmem.case import run_teach
    _magic("teach_tmem.cu", _xor("teach_tmem.cu", "out[(warp * 32 + t) * kNum + j] = r[j];",
                                 "out[(warp * 32 + t) * kNum + j] = r[j] ^ 1u;"), capsys)
    got = run_teach()                                   # no kernel given: the %%cuda version
    assert np.array_equal(got ^ 1, tmem.teach_model(lab.TeachingKernel("teach_tmem.cu")))


def test_store_teaching_kernel_runs_the_edit(capsys):
    from bwlab import epilogue as E
    p = E.teach_problem(150, 70)
    acc, _, d0 = p.random_inputs(np.random.default_rng(0))
    case = E.Epilogue(p, acc, None, d0, kernel="teach_store.cu")
    _magic("teach_store.cu", _xor("teach_store.cu", "r[j] = src[j];", "r[j] = src[j] + 1.0f;"), capsys)
    assert not case.check().ok


def test_full_flow_runs_the_edit_without_kernel_argument(capsys):
    """06's case: `%%cuda full_flow_sm100.cu` with expect_tx four times too large, then `Flow(seed=0)`
    (no kernel=) must hang, not report every hop equal to the model."""
    from bwlab.flow import Flow
    _magic("full_flow_sm100.cu", _too_many_bytes("full_flow_sm100.cu"), capsys)
    with pytest.raises(HANGS, match="transaction bytes"):
        Flow(seed=0).run()


def test_full_flow_hopper_twin_runs_the_edit(capsys):
    from bwlab.flow import runner
    from bwlab.flow.problem import FlowProblem
    _magic("full_flow_sm90.cu", _too_many_bytes("full_flow_sm90.cu"), capsys)
    with pytest.raises(HANGS):
        runner.run_hopper(FlowProblem(0), repeat=1)


@pytest.mark.parametrize("name", ["s1", "s3"])
def test_hopper_ladder_step_runs_the_edit(name, capsys):
    from bwlab.gemm import GemmCase
    from bwlab.gemm.ladder import step
    s = step(name)
    _magic(s.path, _too_many_bytes(s.path), capsys)
    with pytest.raises(HANGS, match="transaction bytes"):
        GemmCase(name, 128, 256, 64).run()


def test_every_ladder_file_is_what_its_runs_load(capsys, monkeypatch):
    """Each step file of both ladders: a kept edit is what the step's runner hands the loader (the two
    steps above and the Blackwell step below run it to the end)."""
    from bwlab.compile import CUDA_SRC
    from bwlab.gemm import runner, sm100
    from bwlab.runtime import EMULATED
    seen = []

    class Stop(Exception):
        pass

    def spy(kernel, *a, **k):
        seen.append(kernel)
        raise Stop
    monkeypatch.setattr(EMULATED, "load", spy)
    files = sorted(p.relative_to(CUDA_SRC).as_posix() for p in CUDA_SRC.glob("gemm_sm*/*.cu"))
    assert len(files) >= 15
    for f in files:
        assert lab.runs_of(f), f
        _magic(f, _too_many_bytes(f), capsys)
    a = np.zeros((256, 256), np.uint16)
    from bwlab.gemm.ladder import STEPS
    for s in STEPS:
        with pytest.raises(Stop):
            runner.run_step_emulated(s.name, a[:, :192], a[:, :192])
        assert getattr(seen[-1], "file", None) == s.path and seen[-1].edited, s.name
    for st in sm100.STEPS_SM100:
        with pytest.raises(Stop):
            sm100.run_sm100_emulated(st["step"], a, a)
        assert seen[-1].edited and seen[-1].file == st["file"], st["name"]


def test_blackwell_ladder_step_runs_the_edit(capsys):
    from bwlab.gemm import sm100
    first = sm100.STEPS_SM100[0]["step"]
    f = sm100.step_info(first)["file"]
    _magic(f, _too_many_bytes(f), capsys)
    with pytest.raises(HANGS):
        sm100.run_sm100_emulated(first, np.zeros((128, 64), np.uint16), np.zeros((256, 64), np.uint16))


def test_a_timeout_report_says_bytes_announced_minus_arrived_and_the_real_limit(capsys):
    """The headline (at most 8 lines) of a timeout: the wait's own number named as such, the barrier's
    announced − arrived with its sign, the kernel's real limit; the emulator's report as details."""
    from bwlab.hello import hello_roundtrip
    from bwlab.runtime import MbarrierTimeout
    with pytest.raises(MbarrierTimeout) as e:
        hello_roundtrip(4096, 2, extra_tx=16)
    head = e.value.headline
    assert len(head.splitlines()) <= 8 and "announced − arrived = +16 bytes" in head
    assert "200 ms" in head and "virtual" in head and "the kernel expected 4112" in head
    assert "spins in mbarrier.try_wait" not in head and "spins in mbarrier.try_wait" in str(e.value)
    shown = e.value._render_traceback_()
    assert shown[0].startswith("MbarrierTimeout: ") and len(shown) <= 8


def test_a_timeout_in_a_notebook_shows_the_headline_not_a_traceback():
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    seen = []
    shell._showtraceback = lambda etype, evalue, stb: seen.append(stb)
    shell.run_cell("from bwlab.hello import hello_roundtrip\nhello_roundtrip(4096, 2, extra_tx=16)")
    (stb,) = seen
    assert stb[0].startswith("MbarrierTimeout: ") and len(stb) <= 8 and "Traceback" not in "\n".join(stb)


def test_blockscaled_teaching_kernel_runs_the_edit(capsys):
    from bwlab.umma.blockscaled_case import BlockScaledCase, run_where_possible
    case = BlockScaledCase("mxfp8", N=32)
    _magic("teach_blockscaled.cu", _xor("teach_blockscaled.cu", "+ col + j] = r[j];", "+ col + j] = r[j] ^ 1u;"), capsys)
    got, _ = run_where_possible(case)                 # no kernel given: the %%cuda version
    assert np.array_equal(np.asarray(got) ^ np.uint32(1), np.asarray(case.model()))
