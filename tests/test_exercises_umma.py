"""Notebook 03's exercise checks: a right answer passes and says so, the placeholder says "no answer
yet", and the common wrong answers come back as NotYet naming the rule or the mistake. On a Hopper GPU
the kernel-edit exercise also runs the edited teach_wgmma.cu."""
import pytest

from bwlab.exercises import hidden_cases
from bwlab.exercises import NotYet
from exercise_cells import not_yet as _not_yet
from bwlab.umma import exercises as ex

WIDTH = {"none": 16, "32B": 32, "64B": 64, "128B": 128}          # bytes per atom row, from the PTX ISA
SW_CODE = {"none": 0, "128B_base32B": 1, "128B": 2, "64B": 4, "32B": 6}   # tcgen05 descriptor, bits 61-63


def lbo_sbo_of(sw, rows):
    return ((rows // 8) * 128 if sw == "none" else 16), 8 * WIDTH[sw]


def sm100_desc_of(start, lbo, sbo, sw):
    return (start >> 4) | (lbo >> 4) << 16 | (sbo >> 4) << 32 | 1 << 46 | SW_CODE[sw] << 61


def idesc_of(ab, d, M, N, a_major, b_major):
    code = {"f16": 0, "bf16": 1, "tf32": 2}[ab]
    return ({"f16": 0, "f32": 1}[d] << 4 | code << 7 | code << 10 | (a_major == "MN") << 15
            | (b_major == "MN") << 16 | (N >> 3) << 17 | (M >> 4) << 24)


def legal_shape(M, N, g):
    if g == 1:
        return M in (64, 128) and N % 8 == 0 and 8 <= N <= 256
    return M in (128, 256) and N % 16 == 0 and 16 <= N <= 256


@pytest.mark.parametrize("check,fn", [(ex.check_lbo_sbo, lbo_sbo_of), (ex.check_smem_desc, sm100_desc_of),
                                      (ex.check_instr_desc, idesc_of), (ex.check_legal_shape, legal_shape)])
def test_right_answers_and_placeholders(check, fn, capsys):
    check(fn)
    check(fn, hidden=hidden_cases({ex.check_lbo_sbo: "mma_lbo_sbo", ex.check_smem_desc: "mma_smem_desc",
                                   ex.check_instr_desc: "mma_instr_desc", ex.check_legal_shape: "mma_legal_shape"}[check]))
    assert capsys.readouterr().out.replace("checked: ", "correct: ").count("correct:") == 2
    assert "no function yet" in _not_yet(check, None)
    assert "returns no answer yet" in _not_yet(check, lambda *a: None)


def test_known_values_from_the_isa_and_cute():
    assert sm100_desc_of(0, 16, 1024, "128B") == 0x4000404000010000      # the notebook's CuTe value
    assert idesc_of("f16", "f32", 128, 256, "K", "K") == 0x08400010      # make_instr_desc<half_t, ...>


def test_lbo_sbo_mistakes():
    assert "no answer yet" in _not_yet(ex.check_lbo_sbo, lambda sw, r: (None, None))
    assert "LBO and SBO swapped" in _not_yet(ex.check_lbo_sbo, lambda sw, r: lbo_sbo_of(sw, r)[::-1])
    core = lambda sw, r: (128, 128) if sw == "none" else lbo_sbo_of(sw, r)
    assert "one core matrix" in _not_yet(ex.check_lbo_sbo, core)
    assert "CuTe (and this exercise) encode" in _not_yet(ex.check_lbo_sbo, lambda sw, r: (0, lbo_sbo_of(sw, r)[1]))
    assert "one row of the atom" in _not_yet(ex.check_lbo_sbo, lambda sw, r: (lbo_sbo_of(sw, r)[0], WIDTH[sw]))
    msg = _not_yet(ex.check_lbo_sbo, lambda sw, r: (16, 1024), hidden=hidden_cases("mma_lbo_sbo"))   # the 128B answer everywhere
    assert "('none', 64)" in msg


def test_smem_desc_mistakes():
    assert "fixed version field" in _not_yet(ex.check_smem_desc, lambda *a: sm100_desc_of(*a) & ~(1 << 46))
    assert ">> 4 (16-byte units)" in _not_yet(
        ex.check_smem_desc, lambda s, l, b, sw: s | l << 16 | b << 32 | 1 << 46 | SW_CODE[sw] << 61)
    assert "SM90 (wgmma) encoding" in _not_yet(
        ex.check_smem_desc, lambda s, l, b, sw: (s >> 4) | (l >> 4) << 16 | (b >> 4) << 32 | (SW_CODE[sw] >> 1) << 62)
    assert "LBO and SBO swapped" in _not_yet(ex.check_smem_desc, lambda s, l, b, sw: sm100_desc_of(s, b, l, sw))
    msg = _not_yet(ex.check_smem_desc, lambda s, l, b, sw: sm100_desc_of(s, l, b, "128B"), hidden=hidden_cases("mma_smem_desc"))
    assert "the swizzling mode (bits 61-63) is wrong: none is SM100 code 0" in msg


def test_instr_desc_mistakes():
    assert "bits 24-28 (bit 23 is reserved)" in _not_yet(
        ex.check_instr_desc, lambda *a: idesc_of(*a) & ~(0x1F << 24) | (a[2] >> 4) << 23)
    assert "N >> 3" in _not_yet(ex.check_instr_desc, lambda *a: idesc_of(*a) & ~(0x3F << 17) | a[3] << 17)
    assert "0 means K-major" in _not_yet(ex.check_instr_desc, lambda *a: idesc_of(*a) ^ (3 << 15))
    assert "D format (bits 4-5)" in _not_yet(ex.check_instr_desc, lambda *a: idesc_of(*a) & ~0x30)
    assert "major bits swapped" in _not_yet(
        ex.check_instr_desc, lambda ab, d, M, N, am, bm: idesc_of(ab, d, M, N, bm, am), hidden=hidden_cases("mma_instr_desc"))


def test_legal_shape_names_the_rule():
    msg = _not_yet(ex.check_legal_shape, lambda M, N, g: M in (64, 128) and N % 8 == 0 and 8 <= N <= 256)
    assert "(256 (0x100), 128, 2)" in msg and "legal: cta_group::2 takes M in (128, 256)" in msg
    msg = _not_yet(ex.check_legal_shape, lambda M, N, g: legal_shape(M, N, 1) if g == 1 else
                   M in (128, 256) and N % 8 == 0 and 8 <= N <= 256)
    assert "(128, 8, 2)" in msg and "needs N a multiple of 16" in msg and "Matrix Shape" in msg


def test_sbo_kernel_edit():
    k = ex.sbo_kernel(512)
    assert k.edited and "(a_descs[kb] | ((u64)(((512u) >> 4) & 0x3FFF) << 32)" in k.text
    k.compile("sm_90a")


def test_teach_sbo(model_tier, capsys):
    ex.check_teach_sbo(8 * WIDTH[ex.TEACH_SBO_CASE["a_swizzle"]])
    out = capsys.readouterr().out.replace("checked: ", "correct: ")
    assert out.startswith("correct: the SBO of A") and "the wgmma model, executing your descriptors" in out
    assert "no answer yet" in _not_yet(ex.check_teach_sbo, None)
    assert "non-negative int" in _not_yet(ex.check_teach_sbo, "512")
    assert "multiple of 16" in _not_yet(ex.check_teach_sbo, 520)
    msg = _not_yet(ex.check_teach_sbo, 1024)
    assert "first difference at D[m=8][n=0] (thread 0" in msg and "the 128-byte swizzle's atom" in msg
    assert "only D rows" in msg
    assert "the encoded value" in _not_yet(ex.check_teach_sbo, 32)
    assert "past the kernel's 32768-byte buffer" in _not_yet(ex.check_teach_sbo, 8192)


@pytest.mark.sm90
def test_teach_sbo_on_hopper(monkeypatch, capsys):
    from bwlab import device
    monkeypatch.setenv("BWLAB_BACKEND", "auto")
    if not device.gpu_info().has_wgmma:
        pytest.skip("wgmma needs sm_90a")
    ex.check_teach_sbo(512)
    assert "your kernel on" in capsys.readouterr().out.replace("checked: ", "correct: ")
    msg = _not_yet(ex.check_teach_sbo, 1024)
    assert "your kernel on" in msg and "first difference at D[m=8]" in msg
