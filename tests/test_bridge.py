"""bwlab.bridge: the Gluon twins of bwlab's kernels, their PTX (recorded or compiled here) and the comparison.

The comparison is computed from the PTX texts on every run: bwlab's side is NVRTC's PTX of its .cu, the
Gluon side the recording (or a live compile where triton is installed)."""
import json
import re
import shutil
import tomllib
from pathlib import Path

import pytest

from bwlab import bridge
from bwlab.bridge import ptx_compare as cmp
from bwlab.bridge import kernels as bk
from bwlab.umma import make_instr_desc

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def full_flow():
    return bridge.compare("full_flow", live=False)


@pytest.fixture(scope="module")
def gemm_s1():
    return bridge.compare("gemm_s1", live=False)


# ---- the recordings --------------------------------------------------------------------------------------

TWINS = [(name, tool) for name, k in sorted(bridge.KERNELS.items()) for tool in sorted(k.twins)]


@pytest.mark.parametrize("name,tool", TWINS)
def test_recording_names_its_tool_and_is_current(name, tool):
    rec = bridge.recorded(name, tool)
    t = bridge.TOOLS[tool]
    assert rec.origin == "recorded" and rec.tool == tool and (rec.package, rec.version) == (t.package, t.version)
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", rec.date), rec.date
    assert ".target sm_100a" in rec.ptx
    assert f"python -m bwlab.bridge record {name} --tool {tool}" in rec.command
    # made from the kernel's file as it is now (edit the kernel: record it again)
    assert rec.source_sha256 == bk._sha256(bk._source_path(name, tool).read_text())
    assert "/work/" not in rec.ptx and "/home/" not in rec.ptx
    assert "/" not in "".join(re.findall(r'\.file\s+\d+\s+"([^"]*)"', rec.ptx)), "no paths of the recording machine"
    assert name in rec.describe() and rec.version in rec.describe()


def test_a_tampered_recording_is_refused(tmp_path, monkeypatch):
    shutil.copytree(bk.RECORDED, tmp_path / "rec")
    p = tmp_path / "rec" / "gluon_full_flow.ptx"
    p.write_text(p.read_text().replace("tcgen05.mma", "tcgen05.mmx", 1))
    monkeypatch.setattr(bk, "RECORDED", tmp_path / "rec")
    with pytest.raises(ValueError, match="checksum"):
        bridge.recorded("full_flow")
    (tmp_path / "rec" / "gluon_full_flow.json").unlink()
    with pytest.raises(FileNotFoundError, match="python -m bwlab.bridge record full_flow --tool gluon"):
        bridge.recorded("full_flow")


def test_unknown_kernel_or_tool_is_named(monkeypatch):
    with pytest.raises(KeyError, match="no bridge kernel 'ladder'"):
        bridge.practitioner_source("ladder")
    with pytest.raises(KeyError, match="no tool 'mojo'"):
        bridge.recorded("gemm_s1", "mojo")
    one = bk.BridgeKernel("one", "full_flow_sm100.cu", "full_flow", "a kernel with one twin",
                          {"gluon": "gluon_full_flow"})
    monkeypatch.setitem(bk.KERNELS, "one", one)
    with pytest.raises(KeyError, match="written with \\['gluon'\\] only"):
        bridge.recorded("one", "cute")


def test_practitioner_source_is_the_jit_function():
    src = bridge.practitioner_source("full_flow")
    assert src.startswith("@gluon.jit\ndef full_flow(") and "tcgen05_mma(" in src and "def signature" not in src
    assert "tma.async_load(a_desc" in bridge.practitioner_source("gemm_s1")
    assert bridge.practitioner_source("gemm_s1", whole=True).startswith('"""Step 1')
    cute_src = bridge.practitioner_source("gemm_s1", "cute")
    assert cute_src.startswith("@cute.struct") and "cute.gemm(tiled_mma" in cute_src
    assert "def compile_ptx" not in cute_src


@pytest.mark.parametrize("tool", sorted(bridge.TOOLS))
def test_without_the_tool_the_recording_serves(monkeypatch, tool):
    monkeypatch.setattr(bk, "tool_version", lambda tool="gluon": None)
    assert bridge.practitioner_ptx("gemm_s1", tool).origin == "recorded"
    with pytest.raises(ImportError, match="bwlab\\[bridge\\]"):
        bridge.compile_live("gemm_s1", tool)


# ---- the comparison, computed --------------------------------------------------------------------------

def test_full_flow_issues_the_same_tcgen05_and_tma_instructions(full_flow):
    both = set(full_flow.in_both())
    for op in ("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32",
               "tcgen05.mma.cta_group::1.kind::f16",
               "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64",
               "tcgen05.ld.sync.aligned.32x32b.x32.b32",
               "tcgen05.dealloc.cta_group::1.sync.aligned.b32",
               "mbarrier.arrive.expect_tx.shared::cta.b64",
               "mbarrier.try_wait.parity.shared::cta.b64",
               "fence.proxy.async.shared::cta",
               "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group",
               "st.shared.v4.b32"):
        assert op in both, op
    assert full_flow.counts("tcgen05.mma.cta_group::1.kind::f16") == (4, 4)     # K = 64 in steps of 16
    assert full_flow.counts("tcgen05.ld.sync.aligned.32x32b.x32.b32") == (4, 4)  # 128 columns by 32
    assert full_flow.counts("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group") == (4, 4)
    # the TMA load: one instruction, its destination spelt shared::cluster by bwlab, shared::cta by Gluon
    rows = {r.op: r for r in full_flow.rows}
    load_b = rows["cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"]
    load_g = rows["cp.async.bulk.tensor.2d.shared::cta.global.mbarrier::complete_tx::bytes"]
    assert load_b.counts == (2, 0) and load_g.counts == (0, 2)
    assert load_b.match == load_g.match == "other spelling" and load_b.family == load_g.family
    assert load_b.wrappers == "tma_load_2d" and "tma_load_2d" in load_g.wrappers
    assert rows["tcgen05.mma.cta_group::1.kind::f16"].wrappers == "tcgen05_mma_f16_ss"
    # bwlab's bounded waits and its explicit tcgen05 fences have no counterpart in the Gluon PTX
    assert "tcgen05.fence::after_thread_sync" in full_flow.only_in("bwlab")


def test_full_flow_descriptors_decode_alike(full_flow):
    rows = {what: (a, b, same) for what, a, b, same in full_flow.descriptor_rows()}
    want = make_instr_desc("f16", "f16", "f32", 128, 128)
    assert rows["idesc value"] == (f"{want:#010x}", f"{want:#010x}", True)
    for which in ("A", "B"):
        assert rows[f"{which} desc stride_byte_offset"] == (1024, 1024, True)
        assert rows[f"{which} desc swizzle"] == ("128B", "128B", True)
        assert rows[f"{which} desc version"] == (1, 1, True)
        assert rows[f"{which} desc start_address"][:2] == (None, None)  # only the running CTA knows it
        assert rows[f"{which} start: step per MMA (bytes)"] == (32, 32, True)
    # LBO: bwlab encodes 16 B (CuTe's value), Gluon 0; a swizzled K-major operand does not use it
    assert rows["A desc leading_byte_offset"] == (16, 0, False)
    assert rows["B start - A start (bytes)"][0] == 16384   # full_flow_sm100.cu: SMEM_B = 0x4000


def test_gemm_s1_matches_step_one(gemm_s1):
    assert gemm_s1.counts("tcgen05.mma.cta_group::1.kind::f16") == (4, 4)
    assert gemm_s1.counts("mbarrier.arrive.expect_tx.shared::cta.b64") == (1, 1)
    rows = {what: (a, b, same) for what, a, b, same in gemm_s1.descriptor_rows()}
    want = make_instr_desc("bf16", "bf16", "f32", 128, 256)
    assert rows["idesc value"] == (f"{want:#010x}", f"{want:#010x}", True)
    assert rows["idesc N"] == (256, 256, True)
    # bwlab's epilogue loop is not unrolled (one tcgen05.ld in the text); Gluon unrolls its 8 slices
    ld = gemm_s1.counts("tcgen05.ld.sync.aligned.32x32b.x32.b32")
    assert ld[0] >= 1 and ld[1] == 256 // 32
    table = gemm_s1.table()
    assert "tcgen05_mma_f16_ss" in table and "__syncthreads()" in table


def test_full_flow_in_cute_dsl_issues_every_hop():
    c = bridge.compare("full_flow", "cute", live=False)
    for op in ("tcgen05.ld.sync.aligned.32x32b.x32.b32", "tcgen05.wait::ld.sync.aligned", "st.shared.v4.b32",
               "fence.proxy.async.shared::cta", "cp.async.bulk.commit_group", "cp.async.bulk.wait_group.read"):
        assert c.counts(op)[0] == c.counts(op)[1] > 0, op
    rows = {r.op: r for r in c.rows}
    store = rows["cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group.L2::cache_hint"]
    assert store.counts == (0, 4) and store.match == "other spelling" and "tma_store_2d" in store.wrappers
    assert rows["tcgen05.mma.cta_group::1.kind::f16.collector::a::discard"].counts == (0, 4)
    d = {what: (a, b, same) for what, a, b, same in c.descriptor_rows()}
    assert d["A desc leading_byte_offset"] == (16, 16, True)
    assert d["B start - A start (bytes)"] == (16384, 16384, True)


def test_gemm_s1_in_cute_dsl_matches_step_one():
    c = bridge.compare("gemm_s1", "cute", live=False)
    assert c.names == ("bwlab", "cute")
    rows = {r.op: r for r in c.rows}
    # CuTe writes the MMA with its default collector usage spelt out, the loads with .tile and a cache hint
    mma_c = rows["tcgen05.mma.cta_group::1.kind::f16.collector::a::discard"]
    assert mma_c.match == "other spelling" and mma_c.family == rows["tcgen05.mma.cta_group::1.kind::f16"].family
    assert "tma_load_2d" in rows["cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes"
                                 ".L2::cache_hint"].wrappers
    for op in ("tcgen05.ld.sync.aligned.32x32b.x32.b32", "tcgen05.wait::ld.sync.aligned",
               "tcgen05.fence::before_thread_sync",
               "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64"):
        assert op in c.in_both(), op
    d = {what: (a, b, same) for what, a, b, same in c.descriptor_rows()}
    want = make_instr_desc("bf16", "bf16", "f32", 128, 256)
    assert f"{want:#010x}" in d["idesc value"][1].split(" or ")        # chosen among constants at run time
    assert d["idesc negate_a"][:2] == (False, "False or True")
    for key in ("a_type", "b_type", "d_type", "M", "N", "a_major", "b_major"):
        assert d[f"idesc {key}"][2], key
    for which in ("A", "B"):
        assert d[f"{which} desc leading_byte_offset"] == (16, 16, True)   # CuTe encodes LBO as bwlab does
        assert d[f"{which} desc swizzle"] == ("128B", "128B", True)
        assert d[f"{which} start: step per MMA (bytes)"] == (32, 32, True)
    # unrolled: between k-blocks CuTe's code steps back over the three steps of 32 bytes
    assert c.start_steps("A") == ([32], [-96, 32])
    with pytest.raises(ValueError, match="'A' or 'B'"):
        c.start_steps("C")


# ---- the parts, on small hand-written PTX --------------------------------------------------------------

SMALL = """
.version 8.7
.target sm_100a
.address_size 64
.extern .shared .align 1024 .b8 smem[];
.visible .entry k(.param .u32 k_p)
{
    .reg .b32 %r<10>;
    .reg .b64 %rd<10>;
    .reg .pred %p<2>;
    mov.u32 %r1, smem;
    bfe.u32 %r2, %r1, 4, 14;
    mov.b32 %r3, 1073758272;
    mov.b64 %rd1, {%r2, %r3};
    add.s32 %r4, %r2, 2;
    mov.b64 %rd2, {%r4, %r3};
    mov.b32 %r5, %IDESC%;
    setp.ne.b32 %p1, %r5, 0;
    tcgen05.mma.cta_group::1.kind::f16 [%r9], %rd1, %rd2, %r5, %p1;
    bar.sync 0;
    ret;
}
"""


def test_descriptors_are_followed_back_bit_by_bit():
    idesc = make_instr_desc("bf16", "bf16", "f32", 128, 64)
    (m,) = bridge.mma_operands(SMALL.replace("%IDESC%", str(idesc)))
    assert m.instr_fields()["N"] == 64 and m.instr_fields()["a_type"] == "bf16"
    f = m.smem_fields("A")
    assert f["stride_byte_offset"] == 1024 and f["swizzle"] == "128B" and f["start_address"] is None
    assert f["leading_byte_offset"] == 0          # bfe of 14 bits: bits 14-31 of the low word are zeros
    # 14 bits + 2 stay below 2^15: the LBO bits (16-29) are still known zeros after the add
    assert m.smem_fields("B")["leading_byte_offset"] == 0
    (m,) = bridge.mma_operands(SMALL.replace("%IDESC%", str(idesc)).replace("bfe.u32 %r2, %r1, 4, 14",
                                                                            "shr.u32 %r2, %r1, 4"))
    assert m.smem_fields("A")["leading_byte_offset"] is None   # a 28-bit field: its bits 16-27 unknown
    assert m.a_start == ("smem", 0) and m.b_start == ("smem", 32)


def test_compare_ptx_counts_and_labels():
    a = SMALL.replace("%IDESC%", str(make_instr_desc("f16", "f16", "f32", 128, 128)))
    b = a.replace("bar.sync 0;", "barrier.sync 0;")
    c = bridge.compare_ptx(a, b, names=("one", "two"))
    assert c.counts("tcgen05.mma.cta_group::1.kind::f16") == (1, 1)
    rows = {r.op: r for r in c.rows}
    assert rows["bar.sync"].match == rows["barrier.sync"].match == "other spelling"
    assert c.only_in("one") == ["bar.sync"] and c.only_in("two") == ["barrier.sync"]
    assert "one" in c.table().splitlines()[0]
    assert all(same for what, _, _, same in c.descriptor_rows() if what.startswith("idesc"))


def test_compare_ptx_refuses_bad_input():
    a = SMALL.replace("%IDESC%", "0")
    with pytest.raises(ValueError, match="two different labels"):
        bridge.compare_ptx(a, a, names=("x", "x"))
    with pytest.raises(KeyError, match="no kernel 'q'"):
        bridge.compare_ptx(a, a, kernel_a="q")
    with pytest.raises(ValueError, match="no .entry kernel"):
        bridge.instruction_classes(".version 8.7\n.target sm_100a\n.address_size 64\n")


def test_wrappers_are_read_from_the_headers():
    assert "tcgen05_mma_f16_ss" in bridge.bwlab_wrappers("tcgen05.mma.cta_group::1.kind::f16")
    assert "tma_store_2d" in bridge.bwlab_wrappers("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group")
    assert bridge.bwlab_wrappers("bar.sync", operands=2) == ["named_barrier_sync"]
    assert bridge.bwlab_wrappers("bar.sync", operands=1) == []      # bar.sync 0 is __syncthreads()
    assert cmp._wrapper_label("bar.sync", 1) == "__syncthreads()"


# ---- packaging -----------------------------------------------------------------------------------------

def test_the_bridge_extra_is_optional():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert sorted(meta["optional-dependencies"]["bridge"]) == sorted(f"{t.package}=={t.version}"
                                                                   for t in bridge.TOOLS.values())
    assert not any(d.startswith(("triton", "nvidia-cutlass-dsl")) for d in meta["dependencies"])
    assert '("bwlab.bridge.recorded", "bwlab/bridge/recorded", ["*.ptx", "*.json"], False)' in \
        (ROOT / "setup.py").read_text()   # the recordings ship in the wheel
    for name, tool in TWINS:
        meta_rec = json.loads((bk.RECORDED / f"{bridge.KERNELS[name].twins[tool]}.json").read_text())
        assert meta_rec["version"] == bridge.TOOLS[tool].version


# ---- live: only where triton is installed ----------------------------------------------------------------

LIVE = [pytest.param(name, tool, marks=pytest.mark.skipif(
    bridge.tool_version(tool) != bridge.TOOLS[tool].version,
    reason=f"{bridge.TOOLS[tool].package} {bridge.TOOLS[tool].version} ({bridge.TOOLS[tool].label}, the version "
           "the twins are written for) is not installed: pip install 'bwlab[bridge]' to compile live"))
    for name, tool in TWINS]


def test_another_version_of_the_tool_is_named_in_the_error(monkeypatch):
    """A Gluon from another triton release (say the one a torch wheel brings) renames its API: the error says
    which version the twin is written for and where the recorded PTX is, instead of a bare AttributeError."""
    from bwlab.bridge import kernels as bk

    def broken(module):
        raise AttributeError("module 'gluon.tma' has no attribute 'async_load'")
    monkeypatch.setattr(bk, "tool_version", lambda tool: "0.0.1")
    monkeypatch.setattr(bk, "_compile_gluon", broken)
    with pytest.raises(RuntimeError, match=r"written for triton .*0\.0\.1 is installed.*async_load"):
        bk.compile_live("full_flow", "gluon")


@pytest.mark.parametrize("name,tool", LIVE)
def test_live_compile_for_sm100a_without_a_gpu(name, tool):
    rec = bridge.compile_live(name, tool)
    assert rec.origin == "live" and ".target sm_100a" in rec.ptx
    if rec.version == bridge.TOOLS[tool].version:
        assert rec.ptx == bridge.recorded(name, tool).ptx, "the recording is what this version makes"
    c = bridge.compare_ptx(bridge.bwlab_ptx(name), rec.ptx)
    mma = [r for r in c.rows if r.op.startswith("tcgen05.mma")]
    assert {r.family for r in mma} == {"tcgen05.mma.cta_group::1.kind::f16"} and all(r.counts for r in mma)
