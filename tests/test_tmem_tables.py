"""bwlab.tmem.tables: every row of the ISA's TMEM tables accepted, a sample of every kind of illegal form
refused with an error naming the rule, the limit and the section; the tcgen05.cp table agrees with
ptxas; the configurations of cuda_src/tmem_sm100.cu are checked against the tables before compiling."""
import itertools
from types import SimpleNamespace

import pytest

from bwlab import compile as bc
from bwlab import tmem
from bwlab.tmem import TmemError
from bwlab.tmem import tables as T

# ---- tcgen05.alloc / dealloc / relinquish_alloc_permit -------------------------------------------


def test_every_alloc_row_names_its_section():
    assert all(r.section == T.SEC_ALLOC for r in T.ALLOC_TABLE.values())
    assert all("PTX ISA" in r.source for r in T.ALLOC_RULES.values())
    assert T.ALLOC_RULES["dealloc_warp"].kind == "note" and "CuTe" in T.ALLOC_RULES["dealloc_warp"].source


def test_every_legal_alloc_form_is_accepted():
    for instr, group in itertools.product(("alloc", "dealloc"), (1, 2)):
        for ncols in (32, 64, 128, 256, 512):
            form = T.require_alloc(instr, group, ncols)
            assert form.ptx(group).startswith(f"tcgen05.{instr}.cta_group::{group}.sync.aligned")
    for group in (1, 2):
        assert T.require_alloc("relinquish_alloc_permit", group).ptx(group) == \
            f"tcgen05.relinquish_alloc_permit.cta_group::{group}.sync.aligned"


@pytest.mark.parametrize("instr,group,ncols,match", [
    ("alloc", 1, 0, r"power of two in \[32, 512\], got 0 \(PTX ISA 9.7.16.7.1"),
    ("alloc", 1, 16, r"power of two in \[32, 512\], got 16"),
    ("alloc", 2, 96, r"power of two in \[32, 512\], got 96"),
    ("dealloc", 1, 1024, r"power of two in \[32, 512\], got 1024"),
    ("dealloc", 1, None, r"got None"),
    ("alloc", 3, 32, r"\.cta_group must be ::1 or ::2, got ::3"),
    ("relinquish_alloc_permit", 1, 32, "takes no nCols"),
    ("free", 1, 32, "not an allocation instruction"),
])
def test_illegal_alloc_forms_are_refused(instr, group, ncols, match):
    with pytest.raises(TmemError, match=match):
        T.require_alloc(instr, group, ncols)


# ---- tcgen05.ld / tcgen05.st ------------------------------------------------------------------------

def test_table_49_as_printed():
    # the diagonal structure of the ISA's table: each column doubles with .num, NA past 128 registers
    for n, regs in T.LD_NUM_TABLE.items():
        for col, base in enumerate((1, 2, 4)):
            want = n * base if n * base <= T.MAX_REGS else None
            assert regs[col] == want, (n, col)
    assert {s: r.nums[-1] for s, r in T.LDST_SHAPES.items()} == {
        "32x32b": 128, "16x64b": 128, "16x128b": 64, "16x256b": 32, "16x32bx2": 128}


def legal_ldst():
    for op, (shape, row), num, pack in itertools.product(("ld", "st"), T.LDST_SHAPES.items(),
                                                          T.LD_NUM_TABLE, (False, True)):
        if row.registers(num) is None:
            continue
        off = num * (2 if pack else 1) if row.half_split else None
        yield op, shape, num, T.LDST_PACK[op] if pack else None, off


def test_every_legal_ld_st_form_is_accepted_and_is_a_tmemaccess():
    forms = list(legal_ldst())
    assert len(forms) == 2 * 74
    for op, shape, num, q, off in forms:
        row = T.require_ldst(op, shape, num, q, off)
        acc = tmem.TmemAccess(shape, num, q is not None)
        assert acc.registers == row.registers(num) and acc.lanes == row.lanes
        assert acc.ptx(op) == f"tcgen05.{op}.sync.aligned.{shape}.x{num}{q or ''}.b32"
    assert {(s, n, q is not None) for op, s, n, q, _ in forms} == \
        {(a.shape, a.num, a.pack16) for a in tmem.all_accesses()}


NA_CELLS = [(s, n) for s, r in T.LDST_SHAPES.items() for n in T.LD_NUM_TABLE if r.registers(n) is None]


@pytest.mark.parametrize("op", ["ld", "st"])
@pytest.mark.parametrize("shape,num", NA_CELLS, ids=[f"{s}.x{n}" for s, n in NA_CELLS])
def test_every_na_cell_of_table_49_is_refused(op, shape, num):
    with pytest.raises(TmemError, match=rf"{num * T.LD_NUM_TABLE[1][T.LDST_SHAPES[shape].table_column]} "
                                        rf"registers per thread; Table 49 marks it NA \(at most 128 registers\)"):
        T.require_ldst(op, shape, num)


@pytest.mark.parametrize("op,shape,num,q,off,match", [
    ("ld", "32x1x32b", 1, None, None, r"shape must be one of .*9.7.16.8.3.*there is no .32x1x32b"),
    ("st", "16x512b", 1, None, None, r"shape must be one of .*9.7.16.8.4"),
    ("ld", "16x64b", 3, None, None, r"\.num must be one of x1, x2, x4, .* got x3"),
    ("st", "32x32b", 256, None, None, r"got x256"),
    ("ld", "16x64b", 1, ".unpack::16b", None, r"tcgen05.ld takes .pack::16b only, not .unpack::16b"),
    ("st", "16x64b", 1, ".pack::16b", None, r"tcgen05.st takes .unpack::16b only, not .pack::16b"),
    ("ld", "16x32bx2", 1, None, None, r"needs the immediate half-split offset"),
    ("st", "16x128b", 2, None, 4, r"only .16x32bx2 takes a half-split offset"),
    ("ld", "16x64b", 1, None, None, None),     # the control: legal
])
def test_illegal_ld_st_forms_are_refused(op, shape, num, q, off, match):
    if match is None:
        T.require_ldst(op, shape, num, q, off)
        return
    with pytest.raises(TmemError, match=match):
        T.require_ldst(op, shape, num, q, off)


def test_lane_quarters_every_warp_and_shape():
    for warp in range(8):
        lo, hi = T.LANE_QUARTERS[warp % 4]
        for row in T.LDST_SHAPES.values():
            for lane0 in range(128):
                inside = lo <= lane0 and lane0 + row.lanes <= hi
                if inside:
                    T.require_lanes("ld", warp, lane0, row.lanes)
                else:
                    with pytest.raises(TmemError, match=rf"warp {warp} may access TMEM lanes {lo}\.\.{hi - 1} "
                                                        r"only .*access restrictions"):
                        T.require_lanes("st", warp, lane0, row.lanes)
    assert sum(1 for lane0 in range(128) if 0 <= lane0 and lane0 + 16 <= 32) == 17


# ---- tcgen05.cp -------------------------------------------------------------------------------------

LEGAL_CP = [(f.shape, f.multicast, fmt, g) for f in T.CP_TABLE for fmt in T.CP_FORMATS for g in (1, 2)]


def test_every_legal_cp_form_is_accepted():
    assert len(LEGAL_CP) == 6 * 3 * 2
    for shape, mc, fmt, g in LEGAL_CP:
        form = T.require_cp(shape, mc, fmt, g)
        assert form.section == T.SEC_CP
        assert form.ptx(g, fmt).startswith(f"tcgen05.cp.cta_group::{g}.{shape}")


ILLEGAL_CP = [
    ("64x128b", None, None, 1, r"tcgen05.cp.64x128b takes .warpx2::02_13 or .warpx2::01_23, got none"),
    ("32x128b", None, None, 1, r"tcgen05.cp.32x128b takes .warpx4, got none"),
    ("32x128b", "warpx2::02_13", None, 1, r"takes .warpx4, got .warpx2::02_13"),
    ("128x256b", "warpx4", None, 1, r"tcgen05.cp.128x256b takes no multicast, got .warpx4"),
    ("4x256b", "warpx2::01_23", None, 1, r"takes no multicast"),
    ("128x64b", None, None, 1, r"shape must be one of .128x256b, .4x256b, .128x128b, .64x128b, .32x128b"),
    ("128x128b", None, "b6x16_p32", 1, r"decompression is .dst_fmt.src_fmt"),
    ("128x128b", None, None, 4, r"\.cta_group must be ::1 or ::2"),
]


@pytest.mark.parametrize("shape,mc,fmt,g,match", ILLEGAL_CP, ids=[f"{r[0]}-{r[1]}-{r[2]}-{r[3]}" for r in ILLEGAL_CP])
def test_illegal_cp_forms_are_refused(shape, mc, fmt, g, match):
    with pytest.raises(TmemError, match=match + r".*9\.7\.16\.9\.2"):
        T.require_cp(shape, mc, fmt, g)


def ptxas_accepts_cp(tmp_path, instr: str) -> bool:
    f = tmp_path / "cp.cu"
    f.write_text('extern "C" __global__ void k(unsigned a, unsigned long long d) {\n'
                 f'  asm volatile("{instr} [%0], %1;" :: "r"(a), "l"(d) : "memory");\n}}\n')
    try:
        bc.compile_cuda(f, arch="sm_100a", use_cache=False)
        return True
    except bc.CompileError:
        return False


def test_ptxas_accepts_the_cp_table(tmp_path):
    for shape, mc, fmt, g in LEGAL_CP:
        if g == 1:
            instr = T.require_cp(shape, mc, fmt, g).ptx(g, fmt)
            assert ptxas_accepts_cp(tmp_path, instr), instr


@pytest.mark.parametrize("instr", [
    "tcgen05.cp.cta_group::1.64x128b",               # .64x128b needs a .warpx2 multicast
    "tcgen05.cp.cta_group::1.32x128b",               # .32x128b needs .warpx4
    "tcgen05.cp.cta_group::1.128x256b.warpx4",       # the others take none
    "tcgen05.cp.cta_group::1.32x128b.warpx2::02_13",
    "tcgen05.cp.cta_group::1.128x64b",
])
def test_ptxas_refuses_what_the_cp_table_refuses(tmp_path, instr):
    parts = instr.split(".")[3:]
    shape, mc = parts[0], ".".join(parts[1:]) or None
    with pytest.raises(TmemError):
        T.require_cp(shape, mc)
    assert not ptxas_accepts_cp(tmp_path, instr)


# ---- the .cu configurations are checked before compiling ---------------------------------------------

def test_kernel_configurations_are_checked_before_compiling(monkeypatch):
    tmem.require_configurations()
    assert tmem.runner.kernel_allocation_columns() == 512
    bad = SimpleNamespace(shape="16x256b", num=64, pack16=False, half_split_off=None)
    with pytest.raises(TmemError, match="Table 49 marks it NA"):
        tmem.require_configurations([bad])

    def no_compile(*a, **k):
        raise AssertionError("compiled before the configurations were checked")
    monkeypatch.setattr(bc, "compile_cuda", no_compile)
    with pytest.raises(TmemError, match="Table 49"):
        tmem.compile_kernels("sm_100a", [bad])
    monkeypatch.setattr(tmem.runner, "kernel_allocation_columns", lambda: 48)
    with pytest.raises(TmemError, match=r"power of two in \[32, 512\], got 48"):
        tmem.compile_kernels("sm_100a")
