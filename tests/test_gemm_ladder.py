"""The Hopper GEMM ladder: the steps' table agrees with the kernels, shapes are checked before any
launch, the benchmark refuses politely without an sm_90 GPU, and on one every step is correct."""
import re

import pytest

from bwlab import compile as bc
from bwlab.gemm import ladder
from bwlab.gemm.ladder import STEPS, ShapeError, check_shape, step

H100_SMEM_OPTIN = 232448   # cudaDevAttrMaxSharedMemoryPerBlockOptin on an H100
SRC = bc.CUDA_SRC


def _const(text, name):
    m = re.search(rf"\b{name}\s*=\s*(\d+)", text)
    return int(m.group(1)) if m else None


@pytest.mark.parametrize("s", STEPS, ids=[s.name for s in STEPS])
def test_step_table_matches_its_kernel(s):
    text = (SRC / s.path).read_text()
    assert _const(text, "BM") == s.bm and _const(text, "BN") == s.bn
    if s.stages == 1:
        assert "STAGES" not in text
    else:
        m = re.search(r"#define GEMM_STAGES (\d+)", text)
        assert (int(m.group(1)) if m else _const(text, "STAGES")) == s.stages
    assert f"__launch_bounds__({s.threads}" in text
    assert ("__cluster_dims__(2, 1, 1)" in text) == (s.cluster == 2)
    assert s.smem_bytes + 64 <= H100_SMEM_OPTIN, f"{s.name} asks for more SMEM than an H100 gives a CTA"


def test_each_step_adds_to_the_one_before():
    texts = [(SRC / s.path).read_text() for s in STEPS]
    for a, b, s in zip(texts, texts[1:], STEPS[1:]):
        assert a != b and s.added, s.name


def test_stamp_layout_matches_the_header():
    from bwlab.gemm.runner import STAMP_SHAPE
    head = (SRC / "gemm_sm90" / "gemm_common.cuh").read_text()
    assert (_const(head, "TRACKS"), _const(head, "EVENTS")) == STAMP_SHAPE[:2]


def test_shapes_are_checked_before_any_launch():
    check_shape(step("s6"), 256, 256, 64)
    with pytest.raises(ShapeError, match=r"M = 128 must be a positive multiple of 256 .*cluster 2"):
        check_shape(step("s6"), 128, 256, 64)
    with pytest.raises(ShapeError, match=r"K = 100 .* multiple of 64 .*next valid: 128"):
        check_shape(step(1), 128, 128, 100)
    with pytest.raises(KeyError, match="no step"):
        step("s9")


def test_persistent_grid_is_whole_clusters():
    assert step("s5").grid(8192, 8192, 133) == (132, 1, 1)
    assert step("s4").grid(256, 256, 132) == (2, 1, 1)
    assert step("s1").grid(512, 256, 132) == (2, 4, 1)


def test_bench_without_sm90_exits_3(monkeypatch, capsys):
    monkeypatch.setenv("BWLAB_BACKEND", "model")
    from bwlab.checks.gemm import bench_main
    assert bench_main([]) == 3
    assert "the ladders need an sm_90 GPU" in capsys.readouterr().out


def test_recorded_command_drops_the_report_path():
    from bwlab.checks.gemm import _command
    assert _command(["--record", "--out", "/x/y.txt", "--repeat", "3"]) == \
        "python -m bwlab.bench gemm --record --repeat 3"


@pytest.mark.sm90
@pytest.mark.parametrize("s", STEPS, ids=[s.name for s in STEPS])
def test_step_is_correct_on_the_gpu(s):
    from bwlab.gemm import runner
    for m, n, k in ((256, 256, 64), (512, 768, 640)):
        a, b = runner.random_operands(m, n, k, seed=k)
        res = runner.check(a, b, runner.run_step(s, a, b), s.name)
        assert res.ok, str(res)


def test_bench_picks_the_ladder_of_the_gpu():
    from types import SimpleNamespace
    from bwlab.checks.gemm import _steps
    from bwlab.gemm.sm100 import STEPS_SM100
    hopper = _steps(SimpleNamespace(cc=(9, 0), sm_count=132), None)
    assert [s.name for s in hopper] == [s.name for s in STEPS] and all(s.predicted for s in hopper)
    blackwell = _steps(SimpleNamespace(cc=(10, 0), sm_count=148), ["s1", "s6"])
    assert [s.name for s in blackwell] == [STEPS_SM100[0]["name"], STEPS_SM100[5]["name"]]
