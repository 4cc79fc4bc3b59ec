"""The Hopper GEMM ladder: the steps' table agrees with the kernels, shapes are checked before any
launch, the benchmark refuses politely without an sm_90 GPU, and on one every step is correct."""
import re

import pytest

from bwlab import compile as bc
from bwlab.gemm import ladder
from bwlab.gemm.ladder import ALL_STEPS, BEYOND, STEPS, ShapeError, require_shape, split_count, step

H100_SMEM_OPTIN = 232448   # cudaDevAttrMaxSharedMemoryPerBlockOptin on an H100
SRC = bc.CUDA_SRC


def _const(text, name):
    m = re.search(rf"\b{name}\s*=\s*(\d+)", text)
    return int(m.group(1)) if m else None


@pytest.mark.parametrize("s", ALL_STEPS, ids=[s.name for s in ALL_STEPS])
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
    for s in BEYOND:   # each rung beyond names its base, differs from it, and wrote its prediction down
        base = step(s.base) if s.base else ALL_STEPS[ALL_STEPS.index(s) - 1]
        assert (SRC / base.path).read_text() != (SRC / s.path).read_text() and s.added and s.prediction
        assert s.predicted > 0, s.name


def test_stamp_layout_matches_the_header():
    from bwlab.gemm.runner import STAMP_SHAPE
    head = (SRC / "gemm_sm90" / "gemm_common.cuh").read_text()
    assert (_const(head, "TRACKS"), _const(head, "EVENTS")) == STAMP_SHAPE[:2]


def test_shapes_are_checked_before_any_launch():
    require_shape(step("s6"), 256, 256, 64)
    with pytest.raises(ShapeError, match=r"M = 128 must be a positive multiple of 256 .*cluster 2"):
        require_shape(step("s6"), 128, 256, 64)
    with pytest.raises(ShapeError, match=r"K = 100 .* multiple of 64 .*next valid: 128"):
        require_shape(step(1), 128, 128, 100)
    with pytest.raises(KeyError, match="no step"):
        step("s9")


def test_persistent_grid_is_whole_clusters():
    assert step("s5").grid(8192, 8192, 133) == (132, 1, 1)
    assert step("s4").grid(256, 256, 132) == (2, 1, 1)
    assert step("s1").grid(512, 256, 132) == (2, 4, 1)



def test_bench_gemm_runs_the_shapes_it_is_given():
    """Shapes given on the command line are run as given, also when they equal the interleaved defaults;
    the sustained protocol's wider default set only when neither --sizes nor --skinny is given."""
    from bwlab.checks.gemm import default_shapes
    assert default_shapes("sustained", [4096, 8192], [(512, 8192, 8192)]) == ([4096, 8192], [(512, 8192, 8192)])
    assert default_shapes("sustained", None, None) == ([4096, 6144, 8192], [(512, 8192, 8192), (128, 8192, 8192)])
    assert default_shapes("interleaved", None, None) == ([4096, 8192], [(512, 8192, 8192)])
    assert default_shapes("sustained", [], None) == ([], [(512, 8192, 8192)])
    assert default_shapes("sustained", None, [(256, 8192, 8192)]) == ([4096, 8192], [(256, 8192, 8192)])

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
@pytest.mark.parametrize("s", ALL_STEPS, ids=[s.name for s in ALL_STEPS])
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
    assert [s.name for s in hopper] == [s.name for s in ALL_STEPS] and all(s.predicted for s in hopper)
    blackwell = _steps(SimpleNamespace(cc=(10, 0), sm_count=148), ["s1", "s6"])
    assert [s.name for s in blackwell] == [STEPS_SM100[0]["name"], STEPS_SM100[5]["name"]]


def test_split_count_fills_the_sms():
    # 128 x 8192: 32 tiles of 128 x 256; 4 pieces make 128 units on 132 SMs (97 %)
    assert split_count(128, 8192, 8192, 132) == 4
    # 512 x 8192: 128 tiles already fill 97 % of the SMs: one piece
    assert split_count(512, 8192, 8192, 132) == 1
    assert split_count(4096, 4096, 4096, 132) == 1
    # never more pieces than K slices of 64
    assert split_count(128, 256, 128, 132) == 2
    assert split_count(128, 768, 256, 2) == 2
    g = step("sk_split_k").grid(128, 8192, 132, 8192)
    assert g == (128, 1, 1)
    with pytest.raises(ValueError, match="whole tiles"):
        split_count(64, 256, 128, 132)


def test_hilbert_order_visits_every_tile_once_by_neighbours():
    from bwlab.gemm.order import hilbert_order
    for rows, cols in ((4, 4), (8, 8), (32, 32)):
        h = hilbert_order(rows, cols)
        assert sorted(map(tuple, h.tolist())) == [(r, c) for r in range(rows) for c in range(cols)]
        assert (abs(h[1:] - h[:-1]).sum(axis=1) == 1).all()   # a square of side 2^k: one step each time
        assert tuple(h[0]) == (0, 0) and tuple(h[-1]) in ((rows - 1, 0), (0, cols - 1))
    h = hilbert_order(3, 5)   # not a power of two: every cell once, the outside of the 8 x 8 curve left out
    assert sorted(map(tuple, h.tolist())) == [(r, c) for r in range(3) for c in range(5)]
    with pytest.raises(ValueError):
        hilbert_order(0, 4)


def test_grouped_order_is_tile_of():
    from bwlab.gemm.order import footprint, grouped_order
    # gemm_common.cuh tile_of<2> on 3 x 2 tiles: down the band of 2 rows, then right; the last band has 1
    assert grouped_order(3, 2, 2).tolist() == [[0, 0], [1, 0], [0, 1], [1, 1], [2, 0], [2, 1]]
    f = footprint(grouped_order(3, 2, 2), 2)
    assert f == {"waves": 3, "mean_slabs": 3.0, "total_slabs": 9}


@pytest.mark.parametrize("name,shape", [("s7_hilbert_order", (512, 768, 64)), ("sk_split_k", (128, 768, 256)),
                                        ("s8_epilogue_overlap", (512, 768, 64)),
                                        ("s8_epilogue_overlap", (512, 512, 320))])
def test_beyond_rungs_in_the_emulator(name, shape, monkeypatch):
    """The new rungs' own sm_90a PTX in the emulator: C within the f32 reference's tolerance (split-K:
    2 pieces on 2 SMs, so both the 'not last' and the 'last adds the partials' paths run; its arrival
    counters are back at zero for the next launch); the Hilbert order and the overlapped epilogue give
    step 6's C bit for bit (step 8: one k-slice per tile stores its pieces after the loop; five k-slices
    store all four pieces under the next tile's wgmma)."""
    import numpy as np
    from bwlab.gemm import runner
    from bwlab.hw.dtypes import from_float
    monkeypatch.setenv("BWLAB_BACKEND", "emulated")
    m, n, k = shape
    rng = np.random.default_rng(m + n + k)
    a = from_float(rng.random((m, k), dtype=np.float32) * 2 - 1, "bf16")
    b = from_float(rng.random((n, k), dtype=np.float32) * 2 - 1, "bf16")
    c, run = runner.run_step_emulated(name, a, b)
    res = runner.check(a, b, c, name)
    assert res.ok, str(res)
    if name == "sk_split_k":
        partial, arrivals = run.extra
        assert arrivals.get().tolist() == [0] * 6
        assert np.abs(partial.get()).max() > 0     # the pieces went through the workspace
    else:
        c6, _ = runner.run_step_emulated("s6_tma_store", a, b)
        assert np.array_equal(c, c6)


@pytest.mark.sm90
def test_split_k_many_pieces_and_again_on_the_gpu():
    """16 pieces of 4 K slices each (128 x 768 x 4096 on an H100), launched twice: the arrival counters
    the first launch left must serve the second."""
    from bwlab.gemm import runner
    a, b = runner.random_operands(128, 768, 4096, seed=3)
    launch = runner.prepare("sk_split_k", a, b)
    assert int(launch.args[-1]) == 16
    for _ in range(2):
        launch.c.fill(0xFFFF)
        runner.clear_status(launch)
        launch()
        runner.raise_on_status(launch)
        res = runner.check(a, b, launch.c, "sk_split_k")
        assert res.ok, str(res)


# ---- the pipelined and persistent steps at a shape that reuses every stage and barrier phase ---------------
REUSED = [s.name for s in ALL_STEPS if s.stages > 1 or s.persistent]   # s2-s8 and split-K


def test_every_pipelined_step_is_in_the_reuse_set():
    assert REUSED == ["s2_pipeline", "s3_warp_specialized", "s4_persistent", "s5_cluster_multicast",
                      "s6_tma_store", "s7_hilbert_order", "s8_epilogue_overlap", "sk_split_k"]


@pytest.mark.parametrize("name", REUSED)
def test_pipelined_step_in_the_emulator_where_every_phase_is_reused(name, monkeypatch):
    """At `reuse_shape`, with the emulator's SM count (runner.EMULATED_SMS), each CTA uses every stage of
    its ring 2 * PHASE_REUSE times (each parity of every full/empty barrier completes twice) and a
    persistent CTA walks at least two tiles: a bug that shows only when a phase comes round again (a
    wrong parity, an early release) cannot pass by never reaching it. C is compared bit for bit: the
    inputs are k/8 values, so every sum is exact in f32."""
    import numpy as np
    from bwlab.checks.mutants import PHASE_REUSE, reuse_counts, reuse_shape
    from bwlab.gemm import runner, sm100
    shape = reuse_shape(f"sm90/{name}")
    uses = reuse_counts(f"sm90/{name}", *shape)
    assert uses["stage_uses"] >= 2 * PHASE_REUSE, uses
    assert not step(name).persistent or uses["tiles_per_cta"] >= 2, uses
    assert not step(name).split_k or uses["splits"] >= 2, uses
    monkeypatch.setenv("BWLAB_BACKEND", "emulated")
    a, b = sm100.example_inputs(*shape, seed=len(name))
    c, run = runner.run_step_emulated(name, a, b)
    assert run.grid[0] * run.grid[1] == uses["ctas"]      # the launch the counts were computed for
    assert np.array_equal(c, sm100.reference_bf16(a, b))
    assert not run.warnings, run.warnings
