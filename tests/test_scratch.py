"""bwlab.scratch: the from-scratch GEMM's kernels, models, byte counts, case and exercises."""
import dataclasses

import numpy as np
import pytest

from bwlab.compile import compile_cuda
from bwlab.exercises import NotYet
from bwlab.scratch import EMU_SHAPE, STEPS, ScratchGemm, exercises as ex, fragments, model, step
from bwlab.scratch.machine import H100, H200
from bwlab.scratch.memtraffic import compulsory_bytes, traffic, warp_sectors
from bwlab.scratch.steps import require_shape


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
@pytest.mark.parametrize("s", STEPS, ids=lambda s: s.name)
def test_each_step_compiles_on_its_own(s, arch):
    r = compile_cuda(s.file, arch=arch)
    assert r.kernels() == ["gemm"]
    ptx = r.ptx_of("gemm")
    assert ("mma.sync.aligned.m16n8k16" in ptx) == (s.unit == "tensor")
    assert ("ldmatrix.sync.aligned.m8n8.x4.trans" in ptx) == (s.unit == "tensor")
    assert ("bar.sync" in ptx) == (s.bk > 1)


def test_model_is_the_sequential_f32_sum():
    a, b = model.random_operands(8, 16, 24, seed=3)
    want = np.zeros((8, 16), np.float32)
    for i in range(8):
        for j in range(16):
            acc = np.float32(0)
            for k in range(24):
                acc = np.float32(acc + np.float32(a[i, k]) * np.float32(b[k, j]))
            want[i, j] = acc
    got = model.gemm_model(a, b)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    assert model.within_tolerance(a, b, got).max() <= 1


# the smallest problem each step's tiling covers, with two slices of K where it slices K
SMALL = {"s1_naive": (32, 8, 8), "s2_coalesced": (8, 32, 8), "s3_smem_tiling": (16, 32, 32),
         "s4_register_tiling": (64, 64, 32), "s5_mma_sync": (64, 64, 32)}


@pytest.mark.parametrize("s", STEPS[:4], ids=lambda s: s.name)
def test_steps_1_to_4_equal_the_model_bit_for_bit_in_the_emulator(s, emulated_tier):
    case = ScratchGemm(s, *SMALL[s.name], seed=1)
    r = case.check()
    assert r.ok and r.compared == SMALL[s.name][0] * SMALL[s.name][1], str(r)


def test_step_5_in_the_emulator_where_it_executes_mma_sync(emulated_tier):
    from bwlab.scratch.runner import emulator_runs
    case = ScratchGemm(5, 64, 64, 16, seed=1)
    if not emulator_runs(5):
        assert case.runs_on() is None
        assert "does not execute its ldmatrix / mma.sync" in __import__("bwlab.scratch", fromlist=["x"]).where_steps_run()
        pytest.skip("the PTX emulator does not execute ldmatrix / mma.sync here")
    r = case.check()
    assert r.ok, str(r)


def test_a_learners_edit_runs_and_its_mistake_is_found(emulated_tier):
    from bwlab.source import source_text
    text = source_text("scratch/s3_smem_tiling.cu")
    wrong = text.replace("for (int k = 0; k < TILE; ++k)", "for (int k = 0; k < TILE - 1; ++k)")
    assert wrong != text
    r = ScratchGemm(3, 16, 16, 32, kernel=wrong).check()
    assert not r.ok and r.differing == 256 and "C[" in str(r)


def test_every_recorded_case_equals_the_model(model_tier):
    from bwlab.scratch.recorded import RECORDED, measured
    for rec in RECORDED:
        results = rec.case().results()
        assert results.ok and "recorded on an NVIDIA H200" in str(results), str(results)
    m = measured()
    assert m["steps"][-1] == "cublas" and m["shape"] == (4096, 4096, 4096)
    assert all(m["ms"] > 0) and m["tflops"][-1] > m["tflops"][0]


def test_step_5_model_is_the_h200s_c_bit_for_bit():
    from bwlab.results import load_recording
    case = ScratchGemm(5, *EMU_SHAPE)
    gpu = load_recording("scratch_steps")["c_s5_mma_sync"]
    assert np.array_equal(fragments.s5_model(case.a, case.b).view(np.uint32), gpu.view(np.uint32))


def test_ldmatrix_and_fragments_rebuild_the_blocks():
    rows = np.arange(32 * 8).reshape(32, 8)          # lane l points at row l: matrix l // 8, row l % 8
    regs = fragments.ldmatrix(rows)
    for lane in range(32):
        for j in range(4):
            assert tuple(regs[lane, j]) == (rows[8 * j + lane // 4, 2 * (lane % 4)], rows[8 * j + lane // 4, 2 * (lane % 4) + 1])
    seen = {fragments.a_fragment(lane, i) for lane in range(32) for i in range(8)}
    assert seen == {(r, c) for r in range(16) for c in range(16)}
    assert {fragments.b_fragment(l, i) for l in range(32) for i in range(4)} == {(k, n) for k in range(16) for n in range(8)}
    assert {fragments.c_fragment(l, i) for l in range(32) for i in range(4)} == {(m, n) for m in range(16) for n in range(8)}


def test_traffic_agrees_with_the_tiling_arithmetic():
    M = N = K = 256
    assert warp_sectors(np.arange(32)[None] * 2) == 2                  # 64 contiguous bytes
    assert warp_sectors(np.zeros((1, 32), int)) == 1                   # a broadcast
    assert warp_sectors(np.arange(32)[None] * 2 * K) == 32             # 32 rows
    t3 = traffic(3, M, N, K)
    assert t3.load_bytes == (M // 16) * (N // 16) * (16 * K + K * 16) * 2 and t3.store_bytes == M * N * 4
    for s in (4, 5):
        assert traffic(s, M, N, K).load_bytes == (M // 64) * (N // 64) * (64 * K + K * 64) * 2
    t1, t2 = traffic(1, M, N, K), traffic(2, M, N, K)
    assert t1.load_bytes == M * N * K // 32 * (32 + 1) * 32                # per warp and k: 32 sectors of A, 1 of B
    assert t2.load_bytes == M * N * K // 32 * (1 + 2) * 32
    assert all(traffic(s, M, N, K).bytes >= compulsory_bytes(M, N, K) for s in STEPS)
    assert [traffic(s, M, N, K).intensity for s in STEPS] == sorted(traffic(s, M, N, K).intensity for s in STEPS)


def test_machines_are_the_datasheets():
    assert H100.attainable(1.0, "tensor") == 3.35e12 and H100.attainable(1e4, "tensor") == 989.5e12
    assert H200.dram_bytes_per_s == 4.8e12 and H100.attainable(1e4, "fp32") == 67e12
    assert 290 < H100.ridge("tensor") < 300
    with pytest.raises(ValueError, match="'fp32' or 'tensor'"):
        H100.peak("int8")


@pytest.mark.parametrize("which,shape,rule", [
    (4, (32, 64, 16), "multiple of 64"), (3, (16, 16, 8), "slices of 16"), (1, (30, 8, 8), "multiple of 32"),
    (2, (8, 32, 0), "positive integer"), (5, (65536, 65536, 16), "2\\^31")])
def test_bad_shapes_are_refused_with_the_rule(which, shape, rule):
    with pytest.raises(ValueError, match=rule):
        ScratchGemm(which, *shape)


def test_steps_are_found_by_number_and_name():
    assert step(3) is step("s3") is step("s3_smem_tiling") is STEPS[2]
    with pytest.raises(ValueError, match="no step 6"):
        step(6)


def test_show_takes_an_axis():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from bwlab.scratch import pictures
    fig, ax = plt.subplots()
    assert ScratchGemm(3, 64, 64, 16).show(ax=ax) is fig
    assert pictures.plot_roofline(256, 256, 256) is not None
    assert pictures.plot_warp_loads((1, 2), 64, 64, 32) is not None
    plt.close("all")


# ---- the exercises --------------------------------------------------------------------------------------
SOLUTIONS = {
    "scratch_warp_sectors": (ex.check_warp_sectors, lambda a: len({x // 32 for x in a})),
    "scratch_tile_load_bytes": (ex.check_tile_load_bytes, lambda M, N, K, T: (M // T) * (N // T) * 2 * T * K * 2),
    "scratch_attainable": (ex.check_attainable, lambda x, p, b: min(p, x * b)),
    "scratch_a_fragment": (ex.check_a_fragment, lambda l, i: (l // 4 + 8 * ((i // 2) % 2), 2 * (l % 4) + i % 2 + 8 * (i // 4))),
}


@pytest.mark.parametrize("exercise", sorted(SOLUTIONS))
def test_the_solution_passes_with_the_hidden_cases(exercise, capsys):
    check, solution = SOLUTIONS[exercise]
    check(solution)
    check(solution, hidden=True)
    assert "agree" in capsys.readouterr().out


@pytest.mark.parametrize("exercise", sorted(SOLUTIONS))
def test_the_hidden_cases_are_in_the_family_the_visible_check_tries(exercise):
    from bwlab.exercises import hidden_cases
    hidden = hidden_cases(exercise)
    assert hidden and ex.in_family(exercise, hidden)
    with pytest.raises(TypeError, match="takes no cases of its caller"):   # the visible check is no oracle
        SOLUTIONS[exercise][0](SOLUTIONS[exercise][1], hidden=[(object(),)])


CATALOGUE = [(e, label, wrong) for e, mistakes in ex.MISTAKES.items() for label, wrong in mistakes]


def test_every_exercise_has_three_plausible_mistakes():
    assert set(ex.MISTAKES) == set(SOLUTIONS)
    assert all(len(m) >= 3 for m in ex.MISTAKES.values())


@pytest.mark.parametrize("exercise,label,wrong", CATALOGUE, ids=[f"{e}-{i}" for i, (e, _, _) in enumerate(CATALOGUE)])
def test_each_mistake_gets_its_hint_and_never_correct(exercise, label, wrong, capsys):
    check = SOLUTIONS[exercise][0]
    with pytest.raises(NotYet) as e:
        check(wrong)
    assert f"your value: {label}" in str(e.value)
    assert "correct" not in capsys.readouterr().out.lower()
    with pytest.raises(NotYet):
        check(wrong, hidden=True)


def test_an_unanswered_exercise_says_so():
    for check, _ in SOLUTIONS.values():
        with pytest.raises(NotYet, match="no answer yet"):
            check(None)


def test_the_package_has_the_house_shape():
    """The checks every stage package passes (tests/test_package_shape.py), on bwlab.scratch."""
    import test_package_shape as shape
    shape.test_imports_stay_where_they_belong("scratch")
    shape.test_teaching_files_stay_short("scratch")
    shape.test_package_says_what_it_mirrors_and_has_a_case("scratch")


def test_a_percent_cuda_edit_is_what_every_case_of_the_step_runs(emulated_tier):
    from bwlab import lab
    from bwlab.source import source_text
    file = "scratch/s2_coalesced.cu"
    text = source_text(file).replace("acc += f16_to_f32", "acc -= f16_to_f32")
    lab.EDITS[file] = lab.TeachingKernel(file, text)
    try:
        case = ScratchGemm(2, 8, 32, 8)
        assert case.kernel.edited and "edited" in repr(case)
        r = case.check()
        assert not r.ok and r.differing > 200, str(r)
        assert ScratchGemm(3, 16, 16, 16).check().ok          # another step's file is untouched
    finally:
        lab.EDITS.pop(file, None)
    assert ScratchGemm(2, 8, 32, 8).check().ok


def test_hidden_cases_as_lists_are_still_found():
    assert ex.in_family("scratch_a_fragment", [[31, 7], (0, 0)])
    assert ex.in_family("scratch_warp_sectors", [[list(ex.family("scratch_warp_sectors")[3][0])]])
    assert not ex.in_family("scratch_a_fragment", [(32, 0)]) and not ex.in_family("scratch_a_fragment", [({},)])

