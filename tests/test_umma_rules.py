"""Stage 3: the tcgen05.mma and SMEM-descriptor rule tables, walked whole.

Every legal combination of the tables (kind x cta_group x M x N x A/B major x A/B layout) is accepted
by the checks the model and UmmaCase use; a sample of every kind of illegal one is refused with an
MmaRuleError that names the rule (its PTX ISA section or CuTe source) and the limit. Every sm_100 test
configuration is checked against the tables before anything is compiled."""
import ast
from pathlib import Path

import pytest

from bwlab import umma
from bwlab.umma import rules

ROOT = Path(__file__).resolve().parent.parent


def test_every_legal_combination_is_accepted():
    n = 0
    seen = set()
    for kind, a, b, d, cg, M, N, am, bm, al, bl in rules.legal_mma_configs():
        assert rules.require_mma(a, b, d, M, N, cg, am, bm, al, bl) == kind
        seen.add((kind, cg, M, am, bm, al, bl))
        n += 1
    # every kind x cta_group x M x major x layout appears
    for kind in rules.KIND_TYPES:
        for row in (r for r in rules.SHAPES if kind in r.kinds):
            for M in row.Ms:
                for am in ("K", "MN"):
                    for al in rules.MAJOR_LAYOUTS[(kind, am)][0]:
                        assert (kind, row.cta_group, M, am, "K", al, "128B") in seen
    assert n > 10000


def test_every_type_pair_encodes():
    # every (a, b, d) of the instruction-descriptor table: the encoding round-trips
    configs = [c for c in rules.legal_mma_configs(all_types=True) if c[4:9] == (1, 128, 64, "K", "K")]
    pairs = {(c[1], c[2], c[3]) for c in configs}
    assert ("e2m1", "e4m3", "f32") in pairs and ("u8", "s8", "s32") in pairs and ("bf16", "bf16", "f32") in pairs
    for kind, a, b, d, cg, M, N, am, bm, al, bl in configs:
        f = umma.decode_instr_desc(umma.make_instr_desc(a, b, d, M, N, am, bm), kind)
        assert (f.a_type, f.b_type, f.d_type, f.M, f.N) == (a, b, d, M, N)


def test_f6_f4_type_codes():
    # PTX ISA tcgen05 instruction descriptor, kind::f8f6f4: E4M3 0, E5M2 1, E2M3 3, E3M2 4, E2M1 5
    assert rules.KIND_TYPES["f8f6f4"].ab == {"e4m3": 0, "e5m2": 1, "e2m3": 3, "e3m2": 4, "e2m1": 5}
    d = umma.make_instr_desc("e2m3", "e2m1", "f32", 128, 64)
    assert (d >> 7) & 7 == 3 and (d >> 10) & 7 == 5
    assert umma.make_instr_desc("e3m2", "e3m2", "f16", 128, 64) >> 7 & 7 == 4


ILLEGAL = [
    # (arguments of require_mma, words the message must contain: the rule and the limit)
    (("f16", "f16", "f32", 256, 64, 1), ["takes M in (64, 128)", "Matrix Shape"]),
    (("f16", "f16", "f32", 64, 64, 2), ["takes M in (128, 256)", "Matrix Shape"]),
    (("f16", "f16", "f32", 128, 12, 1), ["N a multiple of 8 in [8, 256]", "got N = 12"]),
    (("tf32", "tf32", "f32", 128, 264, 1), ["N a multiple of 8 in [8, 256]"]),
    (("e4m3", "e4m3", "f32", 256, 24, 2), ["N a multiple of 16 in [16, 256]"]),
    (("s8", "s8", "s32", 128, 40, 1), ["N = 8, 16, 24, 32 or a multiple of 16 in [48, 256]"]),
    (("s8", "s8", "s32", 256, 48, 2), ["N a multiple of 32", "SM100_MMA_S8_2x1SM_SS"]),
    (("f16", "bf16", "f32", 128, 64, 1), ["f16 by f16 or bf16 by bf16", "Instruction descriptor"]),
    (("bf16", "bf16", "f16", 128, 64, 1), ["f16 inputs only"]),
    (("tf32", "tf32", "f16", 128, 64, 1), ["accumulates into ['f32']"]),
    (("s8", "s8", "f32", 128, 64, 1), ["accumulates into ['s32']"]),
    (("f16", "tf32", "f32", 128, 64, 1), ["no tcgen05.mma kind"]),
    (("f16", "f16", "f32", 128, 64, 1, "T"), ["a_major must be 'K' or 'MN'"]),
    (("tf32", "tf32", "f32", 128, 64, 1, "MN", "K", "128B", "128B"),
     ["kind::tf32 A MN-major takes the SMEM layouts ['128B_base32B'], got 128B", "Transpose and Negate"]),
    (("tf32", "tf32", "f32", 128, 64, 1, "K", "MN", "128B", "none"), ["B MN-major", "32B atomicity"]),
    (("tf32", "tf32", "f32", 128, 64, 1, "K", "K", "128B_base32B", "128B"), ["A K-major takes the SMEM layouts"]),
    (("f16", "f16", "f32", 128, 64, 1, "MN", "K", "128B_base32B", "128B"), ["kind::tf32 MN-major only"]),
    (("e4m3", "e4m3", "f32", 128, 24, 1, "K", "MN"), ["transposed", "multiple of 16", "got N = 24"]),
    (("e5m2", "e5m2", "f32", 256, 48, 2, "K", "MN"), ["transposed", "cta_group::2", "multiple of 32"]),
    (("e2m1", "e2m1", "f32", 128, 64, 1, "MN", "K"), ["6-/4-bit"]),
    (("f16", "f16", "f32", 128, 64, 1, "K", "K", "256B", "none"), ["layout must be one of"]),
]


@pytest.mark.parametrize("args,words", ILLEGAL, ids=[str(i) for i in range(len(ILLEGAL))])
def test_illegal_combinations_are_refused_naming_the_rule(args, words):
    with pytest.raises(rules.MmaRuleError) as e:
        rules.require_mma(*args)
    for w in words:
        assert w in str(e.value), (w, str(e.value))
    assert e.value.rule in str(e.value)


def test_illegal_samples_of_every_row_are_refused():
    # For every shape row: the N just outside it and an N off the step are refused.
    for row in rules.SHAPES:
        kind = row.kinds[0]
        t = next(iter(rules.KIND_TYPES[kind].ab))
        d = next(iter(rules.KIND_TYPES[kind].d))
        for N in (row.Ns[0] - 8, row.Ns[-1] + 8, row.Ns[-1] + 16):
            with pytest.raises(rules.MmaRuleError, match=row.limit.replace("[", r"\[").replace("]", r"\]")):
                rules.require_mma(t, t, d, row.Ms[0], N, row.cta_group)


def test_i8_n24_isa_allows_cute_refuses():
    # ISA Matrix Shape: kind::i8 cta_group::1 N = 8, 16, 24, 32, 48, ... ; CuTe's SM100_MMA_S8_SS is stricter.
    rules.require_mma("s8", "s8", "s32", 128, 24, 1)
    assert umma.make_instr_desc("s8", "s8", "s32", 128, 24) >> 17 & 0x3F == 3
    with pytest.raises(rules.MmaRuleError) as e:
        rules.require_mma_cute("i8", 128, 24, 1)
    assert "CuTe" in str(e.value) and "the ISA allows it" in str(e.value)
    rules.require_mma_cute("i8", 128, 32, 1)


@pytest.mark.parametrize("arch", ["sm100", "sm90"])
def test_descriptor_layout_code_table(arch):
    # PTX ISA tcgen05 Shared Memory Descriptor / wgmma Matrix Descriptor Format: every code of the
    # swizzling-mode field; the legal ones decode and re-encode, the others are refused.
    codes, width, shift, section = rules.DESC_LAYOUT_CODES[arch]
    codes_in_use = umma.LAYOUT_CODES_SM100 if arch == "sm100" else umma.LAYOUT_CODES_SM90
    assert {v: k for k, v in codes_in_use.items()} == codes
    for code in range(1 << width):
        word = (code << shift) | ((1 << 46) if arch == "sm100" else 0) | (64 << 32) | 1
        if code in codes:
            desc = umma.decode_smem_desc(word, arch)
            assert desc.swizzle == codes[code] and desc.encode() == word
        else:
            with pytest.raises(ValueError, match="invalid"):
                umma.decode_smem_desc(word, arch)


def test_descriptor_field_limits():
    umma.make_smem_desc((1 << 18) - 16, (1 << 18) - 16, (1 << 18) - 16, "128B", base_offset=7)
    for kw, rule in (({"start_address": 1 << 18}, "bits 4-17"), ({"leading_byte_offset": 24}, "multiple of 16"),
                     ({"base_offset": 8}, "3-bit"), ({"lbo_mode": 2}, "one bit")):
        args = {"start_address": 0, "leading_byte_offset": 16, "stride_byte_offset": 16, "swizzle": "128B"} | kw
        with pytest.raises(ValueError, match=rule):
            umma.make_smem_desc(**args)


def _umma_cases_in(path: Path):
    """The UmmaCase(...) calls written in a test file, as (args, kwargs) literals."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "UmmaCase":
            yield ([ast.literal_eval(a) for a in node.args],
                   {k.arg: ast.literal_eval(k.value) for k in node.keywords})


def test_every_sm100_test_configuration_is_legal():
    # tests/test_umma_gpu.py runs these on sm_100: each must pass the ISA tables (and they do when
    # UmmaCase builds them; this reads them from the file so that a new one is checked too).
    cases = list(_umma_cases_in(ROOT / "tests" / "test_umma_gpu.py"))
    assert len(cases) >= 5
    for args, kw in cases:
        case = umma.UmmaCase(*args, **kw)
        rules.require_mma(case.ab, case.ab, case.d, case.M, case.N, 1, case.a_major, case.b_major,
                          case.a_swizzle, case.b_swizzle)
    # the kernel issues kind::f16 and kind::tf32 with cta_group::1 only: every case is one of those
    assert {umma.UmmaCase(*a, **k).kind for a, k in cases} <= {"f16", "tf32"}
    src = (ROOT / "cuda_src" / "umma_sm100.cu").read_text()
    assert "tcgen05_mma_f16_ss(" in src and "tcgen05_mma_tf32_ss(" in src and "cta_group2" not in src


def test_umma_kernel_failure_path_is_uniform():
    # cuda_src/umma_sm100.cu: the CTA agrees on the MMA's completion before any .sync.aligned
    # tcgen05.ld, and frees TMEM only when the MMAs are known complete.
    src = (ROOT / "cuda_src" / "umma_sm100.cu").read_text()
    assert "mma_complete = __syncthreads_or(done)" in src
    assert "if (mma_complete) {" in src and "if (done)" not in src
    # TMEM is freed on every path: after a timeout, once the commit has arrived (tcgen05_wait_drained);
    # tests/test_tcgen05_emu.py forces the timeout in the emulator and launches again
    assert "if (!mma_complete) tcgen05_wait_drained(&mma_done, 0);" in src and "tcgen05_dealloc(tmem, tmem_cols);" in src
