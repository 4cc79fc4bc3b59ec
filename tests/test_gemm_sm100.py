"""The Blackwell GEMM ladder (cuda_src/gemm_sm100/, bwlab/gemm/sm100.py): every step compiles for
sm_100a (NVRTC, and nvcc 13 where installed), the steps' table says what the files say, the
descriptor bits each kernel issues are bwlab.umma's, step 1 runs end to end in the model tier and
equals A·Bᵀ (fp32, rounded to bf16) on two sizes, and a wrong descriptor is caught with a named first
difference. On an sm_100 GPU every step is checked against the reference (skipped elsewhere)."""
import re
import shutil
import subprocess

import numpy as np
import pytest

from bwlab import compile as bc
from bwlab import device
from bwlab.gemm import runner, sm100
from bwlab.umma import edit_descs, make_instr_desc, smem_desc_for_tile

LADDER = bc.CUDA_SRC / "gemm_sm100"
FILES = sorted(LADDER.glob("*.cu"))


def text_of(step):
    return (bc.CUDA_SRC / sm100.step_info(step)["file"]).read_text()


# ---- compiling ---------------------------------------------------------------------------------------
def test_the_ladder_has_its_steps():
    assert len(FILES) == len(sm100.STEPS_SM100) >= 5


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_step_compiles_for_sm100a(path):
    r = bc.compile_cuda(path, arch="sm_100a")
    assert r.cubin[:4] == b"\x7fELF"
    assert r.kernels() == ["gemm"]
    assert ".target sm_100a" in r.ptx and "tcgen05.mma" in r.ptx


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed: the NVRTC build above still ran")
@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_step_compiles_with_nvcc(path, tmp_path):
    r = subprocess.run(["nvcc", "-arch=sm_100a", "-std=c++17", f"-I{bc.CUDA_SRC}", "-cubin", "-o",
                        str(tmp_path / "k.cubin"), str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_compile_suite_builds_the_ladder_for_sm100a_only():
    # tests/test_compile.py builds every file bwlab.compile.list_sources() returns, for the targets
    # its first line names.
    listed = set(bc.list_sources())
    for p in FILES:
        assert p in listed, p
        assert p.read_text().splitlines()[0] == "// bwlab-targets: sm_100a", p.name


# ---- the table and the files ------------------------------------------------------------------------
def test_steps_table_matches_the_files():
    assert [s["step"] for s in sm100.STEPS_SM100] == list(range(1, len(FILES) + 1))
    assert sorted(s["file"] for s in sm100.STEPS_SM100) == sorted(f"gemm_sm100/{p.name}" for p in FILES)
    for s in sm100.STEPS_SM100:
        k, text = sm100.kernel_constants(s["step"]), text_of(s["step"])
        assert s["file"] == f"gemm_sm100/{s['name']}.cu" and s["name"].startswith(f"s{s['step']}_")
        assert s["cta_tile"] == (k["BM"], k["BN"]), s["name"]
        assert s["tile"] == (k["CLUSTER"] * k["BM"], k["BN"]), s["name"]
        assert (s["threads"], s["cluster"], s["smem_bytes"], s["stages"], s["tmem_cols"]) == (
            k["THREADS"], k["CLUSTER"], k["SMEM_BYTES"], k["STAGES"], k["TMEM_COLS"]), s["name"]
        assert "__launch_bounds__(THREADS, 1)" in text
        assert ("__cluster_dims__(CLUSTER, 1, 1)" in text) == (k["CLUSTER"] > 1), s["name"]
        assert s["persistent"] == ("gridDim.x" in text), s["name"]      # walks tiles with a grid stride
        assert s["epilogue"] == ("tma store" if "tma_store_2d(&tma_c" in text else "registers"), s["name"]
        assert k["SMEM_BYTES"] <= 232448 and k["TMEM_COLS"] <= 512
        if s["step"] > 1:
            assert f"What changed since step {s['step'] - 1}" in text and "Why it should help" in text


def test_each_step_adds_one_mechanism_to_the_last():
    # The mechanisms the brief of each step names, seen as the instructions they need.
    marks = {2: "empty[s]", 3: "WARP_TMA", 4: "tmem_empty", 5: "tcgen05_mma_f16_ss_cta_group2",
             6: "tma_store_2d(&tma_c"}
    for step, mark in marks.items():
        assert mark not in text_of(step - 1) and mark in text_of(step), (step, mark)


def test_ladder_header_agrees_with_python():
    header = (bc.CUDA_SRC / sm100.LADDER_HEADER).read_text()
    k = sm100.kernel_constants(1)
    assert (k["STAMP_TRACKS"], k["STAMP_SPANS"]) == (len(sm100.STAMP_TRACKS), sm100.STAMP_SPANS)
    enum = dict((int(v), n) for n, v in re.findall(r"BAR_(\w+) = (\d+)", header))
    assert {i: n.lower() for i, n in enum.items()} == {i: d.split()[0] for i, d in sm100.GEMM_BARRIERS.items()}


def test_bad_shapes_name_the_rule():
    with pytest.raises(ValueError, match=r"M = 100 must be a positive multiple of 128"):
        sm100.require_problem(1, 100, 256, 64)
    with pytest.raises(ValueError, match=r"M = 128 must be a positive multiple of 256"):
        sm100.require_problem(5, 128, 256, 64)            # a CTA pair covers 256 rows
    with pytest.raises(ValueError, match=r"K = 0"):
        sm100.require_problem(3, 128, 256, 0)
    with pytest.raises(ValueError, match="K differs"):
        sm100.model_step1(np.zeros((128, 64), np.uint16), np.zeros((256, 128), np.uint16))
    with pytest.raises(ValueError, match="no Blackwell ladder step"):
        sm100.step_info(9)
    assert sm100.step_info("s4") is sm100.step_info(4) is sm100.step_info("s4_persistent")


def test_grids():
    assert sm100.launch_grid(1, 512, 1024, 148) == (4, 4, 1)
    assert sm100.launch_grid(4, 512, 1024, 148) == (16, 1, 1)           # one CTA per tile when fewer
    assert sm100.launch_grid(4, 8192, 8192, 148) == (148, 1, 1)
    assert sm100.launch_grid(5, 8192, 8192, 148) == (148, 1, 1)         # 74 pairs
    assert sm100.launch_grid(6, 512, 512, 148) == (8, 1, 1)             # 4 tiles of 256 x 256


def test_tensor_maps_box_what_one_cta_loads():
    a, b, c = sm100.tensor_maps(1, 256, 512, 192)
    assert (a.box_shape, b.box_shape, c.box_shape) == ((64, 128), (64, 256), (64, 32))
    assert a.tx_bytes + b.tx_bytes == sm100.kernel_constants(1)["A_BYTES"] + sm100.kernel_constants(1)["B_BYTES"]
    a, b, _ = sm100.tensor_maps(5, 256, 512, 192)
    k = sm100.kernel_constants(5)
    assert (a.tx_bytes, b.tx_bytes) == (k["A_BYTES"], k["B_BYTES"])     # half of B per CTA of the pair


# ---- the descriptor bits ----------------------------------------------------------------------------
@pytest.mark.parametrize("step", [s["step"] for s in sm100.STEPS_SM100])
def test_descriptor_bits_are_bwlab_umma_s(step):
    k = sm100.kernel_constants(step)
    cta_group = k["CLUSTER"]
    assert k["IDESC"] == make_instr_desc("bf16", "bf16", "f32", cta_group * k["BM"], k["BN"], cta_group=cta_group)
    stage = k.get("STAGE_BYTES", k["A_BYTES"] + k["B_BYTES"])
    for s in range(k["STAGES"]):
        for off, rows in ((k["SMEM_A"], k["BM"]), (k["SMEM_B"], k["BN"] // cta_group)):
            base = s * stage + off
            for kb in range(k["BK"] // k["UMMA_K"]):   # the kernel: smem_desc(DESC_HI, base + 32 * k)
                assert sm100.smem_desc(k["DESC_HI"], base + 32 * kb) == \
                    smem_desc_for_tile("K", "128B", "bf16", (rows, k["BK"]), kb, base), (step, s, kb)


@pytest.mark.parametrize("step", [s["step"] for s in sm100.STEPS_SM100])
def test_kernel_issues_the_bits_of_its_text(step):
    # The constants the model reads are the ones the compiled kernel puts into tcgen05.mma.
    k = sm100.kernel_constants(step)
    ptx = bc.compile_cuda(bc.CUDA_SRC / sm100.step_info(step)["file"], arch="sm_100a").ptx
    assert re.search(rf"mov\.b32\s+%r\d+, {k['IDESC']};", ptx), "IDESC is not the tcgen05.mma idesc operand"
    assert re.search(rf"or\.b64\s+%rd\d+, %rd\d+, {k['DESC_HI']};", ptx), "DESC_HI is not in the descriptors"


# ---- step 1 in the model tier -----------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(128, 256, 128), (256, 512, 192)], ids=["128x256x128", "256x512x192"])
def test_model_step1_equals_the_reference(shape):
    M, N, K = shape
    A, B = sm100.example_inputs(M, N, K, seed=M + K)
    r = sm100.model_step1(A, B)
    assert r.check().ok, str(r.check())
    tiles = (M // 128) * (N // 256)
    assert (r.mmas, r.loads) == (tiles * (K // 64) * 4, tiles * (K // 64) * 2)
    assert np.abs(sm100.reference_bf16(A, B).astype(np.int64)).sum() > 0       # not all zeros


def test_float_inputs_are_rounded_to_bf16():
    A, B = sm100.example_inputs(128, 256, 64, seed=3)
    from bwlab.hw.dtypes import to_float
    r = sm100.model_step1(to_float(A, "bf16"), to_float(B, "bf16"))
    assert r.check().ok


def test_reference_rounds_fp32_to_nearest_even_bf16():
    one = np.ones((1, 2))
    assert sm100.reference_bf16(np.array([[1.0, 2.0 ** -8]]), one)[0, 0] == 0x3F80        # tie -> even (1.0)
    assert sm100.reference_bf16(np.array([[1.0, 3 * 2.0 ** -8]]), one)[0, 0] == 0x3F82    # tie -> even (1 + 2^-6)
    assert sm100.reference_bf16(np.array([[1.0, 2.0 ** -7]]), one)[0, 0] == 0x3F81        # exact


def test_wrong_smem_descriptor_names_the_first_difference():
    A, B = sm100.example_inputs(128, 256, 64, seed=5)
    hi = sm100.kernel_constants(1)["DESC_HI"]
    bad = int(edit_descs([hi], "sm100", stride_byte_offset=512)[0])      # 8-row groups 512 B apart
    r = sm100.model_step1(A, B, desc_hi=bad).check()
    assert not r.ok
    assert r.first is not None and r.first.where.startswith("C[") and "TMEM lane" in r.first.where
    assert "first difference at C[" in str(r) and f"{bad:#018x}" in str(r)


def test_wrong_instruction_descriptor_is_caught():
    A, B = sm100.example_inputs(128, 256, 64, seed=6)
    as_f16 = make_instr_desc("f16", "f16", "f32", 128, 256)            # A and B read as f16
    assert not sm100.model_step1(A, B, idesc=as_f16).check().ok


def test_model_mirrors_what_the_kernel_computes_at_run_time():
    # What the model cannot read as a constant it mirrors: the K advance of 32 bytes per instruction
    # inside the swizzled row, and the .32x32b shape of the epilogue's loads (the .num is LD_COLS).
    text, header = text_of(1), (bc.CUDA_SRC / sm100.LADDER_HEADER).read_text()
    assert "smem_desc(DESC_HI, base + SMEM_A + 32 * k)" in text and "smem_desc(DESC_HI, base + SMEM_B + 32 * k)" in text
    assert "tmem_rows_to_gmem<BN, LD_COLS>(tmem + ((32 * warp) << 16)" in text
    assert "tcgen05_ld_32x32b<int(LD_COLS)>(r, taddr + c)" in header


def test_model_follows_the_kernel_text(tmp_path):
    # The model runs the bits written in the kernel's file: change them there and it fails.
    text = text_of(1)
    good, bad = tmp_path / "good.cu", tmp_path / "bad.cu"
    good.write_text(text)
    assert "constexpr u32 IDESC = 0x08400490u;" in text
    bad.write_text(text.replace("constexpr u32 IDESC = 0x08400490u;",
                                f"constexpr u32 IDESC = {make_instr_desc('bf16', 'bf16', 'f32', 128, 128):#010x}u;"))
    A, B = sm100.example_inputs(128, 256, 64, seed=7)
    assert sm100.model_step1(A, B, source=good).check().ok
    r = sm100.model_step1(A, B, source=bad).check()
    assert not r.ok and r.first.index[1] >= 128     # N = 128: the right half of the tile is never written


# ---- the GPU ----------------------------------------------------------------------------------------
def test_run_refuses_without_tcgen05(monkeypatch):
    monkeypatch.setenv("BWLAB_BACKEND", "model")
    A, B = sm100.example_inputs(128, 256, 64)
    with pytest.raises(device.UnsupportedGPU, match="sm_100"):
        runner.run_sm100(1, A, B)


@pytest.mark.sm100
@pytest.mark.parametrize("step", [s["step"] for s in sm100.STEPS_SM100])
def test_step_on_the_gpu_equals_the_reference(step):
    A, B = sm100.example_inputs(512, 1024, 512, seed=step)
    C, stamps = runner.run_sm100(step, A, B, stamps=True)
    assert np.array_equal(C, sm100.reference_bf16(A, B))
    assert stamps.shape == (len(sm100.STAMP_TRACKS), sm100.STAMP_SPANS, 2)
    assert (stamps[0, 0] > 0).all() and (stamps[2, 0] > 0).all()


# ---- steps 2-6 at a shape that reuses every stage, accumulator and barrier phase ---------------------------
REUSED = [s["step"] for s in sm100.STEPS_SM100 if s["stages"] > 1 or s["persistent"]]


@pytest.mark.parametrize("step", REUSED)
def test_pipelined_step_in_the_emulator_where_every_phase_is_reused(step, monkeypatch):
    """At `reuse_shape`, with sm100.EMULATED_SMS, each CTA (pair) uses every stage of its ring and each of
    its TMEM accumulators 2 * PHASE_REUSE times (each parity of full/empty and tmem_full/tmem_empty
    completes twice); a persistent pair walks several tiles. C equals A·Bᵀ bit for bit."""
    from bwlab.checks import blackwell
    from bwlab.checks.mutants import PHASE_REUSE, reuse_counts
    assert REUSED == [2, 3, 4, 5, 6]
    name = f"sm100/{sm100.step_info(step)['name']}"
    shape = blackwell.reuse_shape(step)
    uses = reuse_counts(name, *shape)
    assert uses["stage_uses"] >= 2 * PHASE_REUSE, uses
    assert uses["buffers"] == sm100.kernel_constants(step).get("ACC_BUFS", 1)
    assert uses["buffer_uses"] >= 2 * PHASE_REUSE or uses["buffers"] == 1, uses
    assert not sm100.step_info(step)["persistent"] or uses["tiles_per_cta"] >= 2, uses
    assert ("gemm_reuse", step) in [c[:2] for c in blackwell.cases()]        # validate blackwell runs it too
    monkeypatch.setenv("BWLAB_BACKEND", "emulated")
    A, B = sm100.example_inputs(*shape, seed=step)
    c, run = sm100.run_sm100_emulated(step, A, B)
    assert run.grid[0] * run.grid[1] == uses["ctas"]      # the launch the counts were computed for
    assert np.array_equal(c, sm100.reference_bf16(A, B))
    assert not run.warnings, run.warnings
