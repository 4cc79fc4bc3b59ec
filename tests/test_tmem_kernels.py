"""cuda_src/tmem_sm100.cu and cuda_src/ptx/tcgen05_ldst.cuh: every tcgen05.ld/st form assembles for
sm_100a (ptxas inside NVRTC 12.9, and nvcc 13 as a second judge), the forms bwlab refuses are the
forms ptxas refuses, the round-trip plumbing agrees with the model, and on an sm_100 GPU the
kernels agree with the model bit for bit (skipped elsewhere, with the reason)."""
import shutil
import subprocess

import numpy as np
import pytest

from bwlab import compile as bc
from bwlab import tmem
from bwlab.checks.tmem_header import ldst_header_text
from bwlab.tmem import TmemAccess, TmemError

DEFAULT_FORM = "3, 8, 0, 0"  # TMEM_SHAPE/NUM/PACK/OFF defaults: already instantiated in the file


def test_header_is_what_the_generator_writes():
    text = (bc.CUDA_SRC / "ptx" / "tcgen05_ldst.cuh").read_text()
    assert text == ldst_header_text(), "run: python -m bwlab.tmem header"


def test_every_tcgen05_ld_st_wrapper_comes_from_the_generated_header():
    text = (bc.CUDA_SRC / "ptx" / "tcgen05_ldst.cuh").read_text()
    assert "void tcgen05_ld_32x32b_x8(" in text and "void tcgen05_ld_32x32b_x8_pack_16b(" in text
    for f in sorted(bc.CUDA_SRC.rglob("*.cu*")):
        if f.name == "tcgen05_ldst.cuh":
            continue
        body = f.read_text()
        for instr in ("tcgen05.ld.", "tcgen05.st."):
            # the instruction inside a string (an asm statement), not in a comment
            asm = [l for l in body.splitlines() if instr in l.split("//")[0] and '"' in l.split("//")[0]]
            assert not asm, f"{f.name} writes its own {instr} wrapper: {asm[0].strip()}"


def test_header_command_help_changes_nothing(capsys):
    from bwlab.checks.tmem_header import header_path, main
    before = header_path().stat().st_mtime_ns
    for argv in (["--help"], ["header", "--help"]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 0
    assert main(["header", "--check"]) == 0
    assert header_path().stat().st_mtime_ns == before


@pytest.fixture(scope="module")
def all_forms_sm100():
    return tmem.compile_kernels("sm_100a")


def test_every_form_compiles_for_sm100a(all_forms_sm100):
    r = all_forms_sm100
    assert len(r.kernels()) == 2 * 74  # the default instantiation is one of the 74 forms
    for acc in tmem.all_accesses():
        for op in ("ld", "st"):
            ptx = r.ptx_of(tmem.kernel_name(op, acc))
            assert acc.ptx(op) in ptx, (op, acc)
            if acc.shape == "16x32bx2":
                off = acc.half_split_off
                assert (f"], {off};" in ptx) if op == "ld" else (f"], {off}, {{" in ptx)
            # every kernel fills TMEM with .32x32b.x32 stores first
            assert "tcgen05.st.sync.aligned.32x32b.x32.b32" in ptx
            assert "tcgen05.alloc.cta_group::1" in ptx and "tcgen05.dealloc.cta_group::1" in ptx


NVCC = shutil.which("nvcc")


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed: the NVRTC build above still ran")
def test_every_form_compiles_with_nvcc(tmp_path):
    lines = [f'#include "{bc.CUDA_SRC / "tmem_sm100.cu"}"']
    for acc in tmem.all_accesses():
        args = tmem.kernel_name("ld", acc).split("<")[1].rstrip(">")
        if args == DEFAULT_FORM:
            continue
        lines.append(f"template __global__ void tmem_ld_roundtrip<{args}>(const u32*, u32*, u32);")
        lines.append(f"template __global__ void tmem_st_roundtrip<{args}>"
                     "(const u32*, const u32*, u32*, u32);")
    src = tmp_path / "all_forms.cu"
    src.write_text("\n".join(lines) + "\n")
    r = subprocess.run([NVCC, "-arch=sm_100a", "-std=c++17", f"-I{bc.CUDA_SRC}", "-cubin", "-o",
                        str(tmp_path / "k.cubin"), str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_kernels_do_not_exist_on_hopper():
    with pytest.raises(bc.CompileError) as e:
        bc.compile_cuda("tmem_sm100", arch="sm_90a")
    assert "tcgen05" in e.value.log


# ---- ptxas and bwlab agree on which forms exist ------------------------------------------------

def asm_kernel(instr: str, nregs: int, op: str, imm: int | None) -> str:
    imm_txt = f", {imm}" if imm is not None else ""
    if op == "ld":
        regs = ", ".join(f"%{i}" for i in range(nregs))
        outs = ", ".join(f'"=r"(v[{i}])' for i in range(nregs))
        body = f'asm volatile("{instr} {{{regs}}}, [%{nregs}]{imm_txt};" : {outs} : "r"(a) : "memory");'
    else:
        regs = ", ".join(f"%{i + 1}" for i in range(nregs))
        ins = ", ".join(f'"r"(v[{i}])' for i in range(nregs))
        body = f'asm volatile("{instr} [%0]{imm_txt}, {{{regs}}};" :: "r"(a), {ins} : "memory");'
    return (f'extern "C" __global__ void k(unsigned* p, unsigned a) {{\n  unsigned v[{nregs}];\n'
            f"  for (int i = 0; i < {nregs}; ++i) v[i] = p[i];\n  {body}\n"
            f"  for (int i = 0; i < {nregs}; ++i) p[i] = v[i];\n}}\n")


def ptxas_accepts(tmp_path, instr, nregs, op, imm=None) -> bool:
    f = tmp_path / "form.cu"
    f.write_text(asm_kernel(instr, nregs, op, imm))
    try:
        bc.compile_cuda(f, arch="sm_100a", use_cache=False)
        return True
    except bc.CompileError:
        return False


GRID = [(s, n, p) for s in tmem.SHAPES for n in (64, 128, 256) for p in (False, True)]


@pytest.mark.parametrize("shape,num,pack", GRID, ids=[f"{s}.x{n}{'.pack' if p else ''}" for s, n, p in GRID])
def test_ptxas_and_bwlab_agree_on_num(tmp_path, shape, num, pack):
    # The upper end of .num is where forms stop existing (register count 128 per thread, x128 max).
    try:
        TmemAccess(shape, num, pack)
        ours = True
    except TmemError:
        ours = False
    op_pack = ".pack::16b" if pack else ""
    instr = f"tcgen05.ld.sync.aligned.{shape}.x{num}{op_pack}.b32"
    imm = num if shape == "16x32bx2" else None
    assert ptxas_accepts(tmp_path, instr, num * tmem.REGS_PER_NUM[shape], "ld", imm) == ours


@pytest.mark.parametrize("instr,nregs,op,imm", [
    ("tcgen05.ld.sync.aligned.32x1x32b.x1.b32", 1, "ld", None),          # not PTX: the shape is .32x32b
    ("tcgen05.ld.sync.aligned.16x64b.x3.b32", 3, "ld", None),            # .num is a power of two
    ("tcgen05.ld.sync.aligned.16x32bx2.x1.b32", 1, "ld", None),          # the offset is required
    ("tcgen05.ld.sync.aligned.16x64b.x1.unpack::16b.b32", 1, "ld", None),  # unpack is for st
    ("tcgen05.st.sync.aligned.16x64b.x1.pack::16b.b32", 1, "st", None),    # pack is for ld
    ("tcgen05.ld.sync.aligned.16x64b.x1.b32", 2, "ld", None),            # register count
])
def test_ptxas_rejects_invalid_forms(tmp_path, instr, nregs, op, imm):
    assert not ptxas_accepts(tmp_path, instr, nregs, op, imm)


def test_ptxas_accepts_a_valid_form_written_the_same_way(tmp_path):
    # The control for the test above: the same generator with a valid form.
    assert ptxas_accepts(tmp_path, "tcgen05.st.sync.aligned.16x32bx2.x2.unpack::16b.b32", 2, "st", 4)


# ---- round-trip plumbing (model) ---------------------------------------------------------------

@pytest.mark.parametrize("acc", tmem.all_accesses(), ids=lambda a: a.label())
def test_model_roundtrip(acc):
    image = tmem.pattern_image(7)
    col0 = tmem.COLUMNS - acc.width   # flush against the right edge
    regs = tmem.ld_roundtrip_model(acc, image, col0)
    m = acc.map()
    for w in range(4):
        for h in range(tmem.instructions_per_warp(acc)):
            lane0 = 32 * w + acc.lanes * h
            if acc.pack16:
                lo = image[lane0 + m[..., 0, 0], col0 + m[..., 0, 1]] & 0xFFFF
                hi = image[lane0 + m[..., 1, 0], col0 + m[..., 1, 1]] & 0xFFFF
                np.testing.assert_array_equal(regs[w, h], lo | (hi << 16))
            else:
                np.testing.assert_array_equal(regs[w, h], image[lane0 + m[..., 0], col0 + m[..., 1]])
    new = tmem.register_pattern(acc, 3)
    after = tmem.st_roundtrip_model(acc, image, new, col0)
    np.testing.assert_array_equal(tmem.ld_roundtrip_model(acc, after, col0), new)
    written = tmem.st_cells_mask(acc, col0)
    assert (after[~written] == image[~written]).all()
    assert written.sum() == 4 * tmem.instructions_per_warp(acc) * 32 * acc.registers * (2 if acc.pack16 else 1)


def test_pattern_image_low_halves_are_all_different():
    assert len(np.unique(tmem.pattern_image() & 0xFFFF)) == 128 * 512


def test_compare_st_images_ignores_only_the_undefined_upper_halves():
    acc = TmemAccess("16x64b", 2, pack16=True)
    image = tmem.pattern_image()
    model = tmem.st_roundtrip_model(acc, image, tmem.register_pattern(acc), 0)
    gpu = model.copy()
    written = tmem.st_cells_mask(acc, 0)
    gpu[written] |= 0xABCD0000          # hardware might leave anything up there
    assert tmem.compare_st_images(acc, model, gpu) == 0
    gpu[0, 300] ^= 1                    # but not elsewhere
    assert tmem.compare_st_images(acc, model, gpu) == 1
    plain = TmemAccess("16x64b", 2)
    assert tmem.compare_st_images(plain, model, gpu) == written.sum() + 1


def test_runner_rejects_bad_input_before_the_driver():
    acc = TmemAccess("16x256b", 32)   # 256 columns
    with pytest.raises(TmemError, match=r"\[0, 256\]"):
        tmem.run_ld_roundtrip(acc, tmem.pattern_image(), col0=300)
    with pytest.raises(TmemError, match="registers"):
        tmem.run_st_roundtrip(acc, tmem.pattern_image(), np.zeros((4, 1, 32, 128), np.uint32))
    with pytest.raises(TmemError, match="overlap"):
        tmem.run_st_roundtrip(TmemAccess("16x32bx2", 4, half_split_off=1), tmem.pattern_image(),
                              np.zeros((4, 2, 32, 4), np.uint32))


def test_runner_says_why_not_without_sm100(monkeypatch):
    from bwlab import device
    monkeypatch.setenv("BWLAB_BACKEND", "model")
    with pytest.raises(device.UnsupportedGPU, match="sm_100"):
        tmem.run_ld_roundtrip(TmemAccess("32x32b", 1), tmem.pattern_image())
    from bwlab import validate
    assert validate.main(["tmem"]) == 3          # no suitable GPU: nothing was run


# ---- the case objects: model() / check(got) ------------------------------------------------------

def test_load_case_model_shape_and_type():
    acc = TmemAccess("16x256b", 4)
    case = tmem.TmemLoad(acc, tmem.pattern_image(1), col0=32)
    got = case.model()
    assert got.dtype == np.uint32 and got.shape == (4, 2, 32, 16)
    np.testing.assert_array_equal(got, tmem.ld_roundtrip_model(acc, tmem.pattern_image(1), 32))
    assert case.check(got).ok and "all 4096 registers equal" in str(case.check(got))


def test_load_case_names_thread_register_lane_and_column():
    acc = TmemAccess("16x256b", 1)
    image = tmem.pattern_image(2)
    case = tmem.TmemLoad(acc, image, col0=8)
    got = case.model().copy()
    # warp 1, second load (lanes 48..63), thread 5, register 3: lane 48 + 9, column 8 + 3
    got[1, 1, 5, 3] = image[48 + 1, 8 + 3]          # a neighbour's cell: a wrong map
    res = case.check(got)
    assert not res.ok and res.differing == 1
    msg = str(res)
    assert "warp 1, load 1 (lanes from 48), thread 5, register 3 = TMEM lane 57, column 11" in msg
    assert f"expected 0x{image[57, 11]:08x}" in msg
    assert "lane/column map" in msg and "lane 49, column 11" in msg
    got[1, 1, 5, 3] = image[100, 11]                 # a cell of warp 3's quarter
    assert "warp quarter rule" in str(case.check(got))
    got[1, 1, 5, 3] = 0x12345678 if 0x12345678 not in image else 0
    assert "tcgen05.wait::ld" in str(case.check(got))


def test_load_case_packed_register_names_both_cells():
    acc = TmemAccess("32x32b", 2, pack16=True)
    case = tmem.TmemLoad(acc, tmem.pattern_image(3))
    got = case.model().copy()
    got[2, 0, 7, 1] ^= 1
    msg = str(case.check(got))
    assert "warp 2, thread 7, register 1 = TMEM lane 71, column 2 (bits 15-0) and lane 71, column 3" in msg


def test_store_case_compares_only_defined_bits_and_names_the_cell():
    acc = TmemAccess("16x64b", 2, pack16=True)
    image = tmem.pattern_image(4)
    regs = tmem.register_pattern(acc, 5)
    case = tmem.TmemStore(acc, image, regs)
    want = case.model()
    assert want.dtype == np.uint32 and want.shape == (128, 512)
    got = want.copy()
    written = tmem.st_cells_mask(acc, 0)
    got[written] |= 0xABCD0000                       # undefined upper halves: not compared
    assert case.check(got).ok
    m = acc.map()                                     # thread 6, register 1, bits 31-16 of warp 0's first load
    lane, col = m[6, 1, 1]
    got[lane, col] ^= 0x0001
    res = case.check(got)
    assert res.differing == 1
    assert f"TMEM lane {lane}, column {col} (written by warp 0, load 0, thread 6, register 1 bits 31-16)" in str(res)
    got = want.copy()
    got[0, 300] ^= 1                                  # a cell no store writes
    msg = str(case.check(got))
    assert "TMEM lane 0, column 300 (no store writes it" in msg and "outside the stores' cells" in msg


def test_store_case_hint_finds_a_misplaced_register():
    acc = TmemAccess("32x32b", 4)
    image = tmem.pattern_image(6)
    regs = tmem.register_pattern(acc, 7)
    case = tmem.TmemStore(acc, image, regs, col0=16)
    got = case.model().copy()
    got[3, 16], got[4, 16] = got[4, 16], got[3, 16]   # threads 3 and 4 of warp 0 swapped
    msg = str(case.check(got))
    assert "first difference at TMEM lane 3, column 16 (written by warp 0, thread 3, register 0)" in msg
    assert "warp 0, thread 4, register 0 stored" in msg


def test_cases_refuse_bad_input_on_construction():
    with pytest.raises(TmemError, match=r"\[0, 256\]"):
        tmem.TmemLoad(TmemAccess("16x256b", 32), tmem.pattern_image(), col0=300)
    with pytest.raises(TmemError, match="registers"):
        tmem.TmemStore(TmemAccess("16x256b", 32), tmem.pattern_image(), np.zeros((4, 1, 32, 128), np.uint32))


# ---- on sm_100 ---------------------------------------------------------------------------------

@pytest.mark.sm100
@pytest.mark.parametrize("acc", tmem.all_accesses(), ids=lambda a: a.label())
def test_gpu_ld_matches_model(acc):
    image = tmem.pattern_image(11)
    for col0 in sorted({0, tmem.COLUMNS - acc.width}):
        got = tmem.run_ld_roundtrip(acc, image, col0)
        np.testing.assert_array_equal(got, tmem.ld_roundtrip_model(acc, image, col0))


@pytest.mark.sm100
@pytest.mark.parametrize("acc", tmem.all_accesses(), ids=lambda a: a.label())
def test_gpu_st_matches_model(acc):
    image = tmem.pattern_image(12)
    regs = tmem.register_pattern(acc, 13)
    for col0 in sorted({0, tmem.COLUMNS - acc.width}):
        gpu = tmem.run_st_roundtrip(acc, image, regs, col0)
        model = tmem.st_roundtrip_model(acc, image, regs, col0)
        assert tmem.compare_st_images(acc, model, gpu, col0) == 0


@pytest.mark.sm100
@pytest.mark.parametrize("shape", tmem.SHAPES)
def test_gpu_cases_check(shape):
    acc = TmemAccess(shape, 4)
    image = tmem.pattern_image(14)
    tmem.TmemLoad(acc, image, 64).check().assert_ok()
    tmem.TmemStore(acc, image, tmem.register_pattern(acc, 15), 64).check().assert_ok()
