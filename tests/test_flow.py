"""bwlab.flow: the whole trip. Each hop of the model's trace equals what its stage's own model (or an
independent NumPy path) says; the kernels' hand-built descriptors equal bwlab.umma's encoders; the
recorded GPU trace equals the model's; the GPU tiers (marked) equal NumPy."""
import ast
import re
from pathlib import Path

import numpy as np
import pytest

from bwlab import epilogue, tma, umma
from bwlab.flow import HOP_NAMES, HOPS, SMEM_A, SMEM_B, Flow, FlowProblem, Trace, format_ptx_by_hop, ptx_by_hop
from bwlab.flow.model import registers_from_tmem, st_shared_model
from bwlab.flow.timeline import FLOW_EVENTS, chrome_trace, measured_segments, model_events

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def trace():
    return Flow(0).model()


def test_model_result_equals_numpy(trace):
    p = trace.problem
    a, b = p.values()
    assert np.array_equal(trace.result, (a @ b.T).astype(np.float32))
    assert np.abs(trace.result).max() > 10          # not a trivially zero product


def test_smem_after_load_is_the_tma_model_and_the_canonical_layout(trace):
    p = trace.problem
    a16, b16 = p.gmem_inputs()
    assert np.array_equal(trace.arrays["smem_a"], tma.TmaLoad(a16, p.tmap_a, (0, 0), SMEM_A).model())
    assert np.array_equal(trace.arrays["smem_b"], tma.tma_load_model(b16, p.tmap_b, (0, 0), SMEM_B))
    # The 128B-swizzled box is exactly the K-major SW128 canonical layout tcgen05.mma reads.
    img = p.umma_case.smem_image()
    assert np.array_equal(img[SMEM_A:SMEM_A + 16384], trace.arrays["smem_a"])
    assert np.array_equal(img[SMEM_B:SMEM_B + 16384], trace.arrays["smem_b"])


def test_tmem_equals_the_umma_case_model(trace):
    assert np.array_equal(trace.arrays["tmem"], trace.problem.umma_case.model())
    assert trace.arrays["mma_done"].tolist() == [1]


def test_registers_equal_the_tmem_ld_model(trace):
    from bwlab.tmem import TmemAccess, ld_roundtrip_model
    from bwlab.hw.tmem import new_image
    image = new_image()
    image[:, :128] = trace.arrays["tmem"]
    regs = trace.arrays["regs"]
    for c in range(4):
        got = ld_roundtrip_model(TmemAccess("32x32b", 32), image, 32 * c)      # (4 warps, 1, 32, 32)
        assert np.array_equal(got[:, 0].reshape(128, 32), regs[:, 32 * c:32 * c + 32])
    assert np.array_equal(regs.view(np.float32), trace.result)    # thread t, register j = D[t][j]


def test_smem_d_is_the_epilogue_tile_and_gmem_the_epilogue_model(trace):
    p = trace.problem
    assert np.array_equal(trace.arrays["smem_d"], p.d_tile.pack(trace.result.view(np.uint32)))
    want = epilogue.epilogue_model(p.epilogue, trace.result)
    assert np.array_equal(trace.arrays["gmem_d"].view(np.uint32), want.view(np.uint32))
    assert not trace.arrays["gmem_d"][p.M:].any()                  # the guard row stays untouched


def test_every_hop_has_its_arrays_and_locate_follows_one_element(trace):
    assert HOP_NAMES[0] == "gmem" and HOP_NAMES[-1] == "tma_store"
    assert trace.at("fence") is not None and set(trace.at("fence")) == {"smem_d"}
    spots = trace.locate(37, 70)
    assert [s[0] for s in spots] == list(HOP_NAMES)
    raws = {s[2] for s in spots if s[2] is not None}
    assert raws == {int(trace.result.view(np.uint32)[37, 70])}      # the same 32 bits at every hop


def test_compare_names_the_first_differing_byte(trace):
    broken = Trace("hybrid", trace.problem, {k: np.array(v, copy=True) for k, v in trace.arrays.items()})
    broken.arrays["smem_a"][0x1290] ^= 1
    broken.arrays["regs"][5, 9] ^= 1
    res = trace.compare(broken)
    assert not res.ok
    bad = [r for r in res.results if not r.ok]
    assert len(bad) == 2
    assert "SMEM byte 0x1290" in str(bad[0]) and "box row 37" in str(bad[0])
    assert "thread 5" in str(bad[1]) and "register 9" in str(bad[1])


def test_st_shared_model_is_independent_of_pack():
    p = FlowProblem(3)
    regs = np.arange(128 * 128, dtype=np.uint32).reshape(128, 128)
    img = st_shared_model(p, regs)
    for m, n in ((0, 0), (37, 70), (127, 127), (5, 33)):
        a = int(p.d_tile.address(m, n)) - 0x8000
        assert img[a:a + 4].view(np.uint32)[0] == regs[m, n]


def test_other_seed_still_exact():
    f = Flow(7)
    assert np.array_equal(f.model().result, f.reference())


# ---- the kernels --------------------------------------------------------------------------------
def _constexprs(path):
    text = path.read_text()
    out = {}
    for decl in re.findall(r"constexpr u(?:32|64) ([^;]+);", text):
        for part in re.split(r",\s*(?=\w+\s*=)", decl):
            name, expr = (x.strip() for x in part.split("=", 1))
            py = re.sub(r"(\d)(ull|u)\b", r"\1", expr)
            out[name] = eval(py, {}, dict(out))  # noqa: S307 - our own source, arithmetic only
    return out


def test_sm100_kernel_descriptors_equal_bwlab_umma():
    c = _constexprs(ROOT / "cuda_src" / "full_flow_sm100.cu")
    p = FlowProblem()
    assert c["IDESC_F16_F32_M128_N128"] == p.idesc == 0x08200010
    fixed = c["DESC_LBO"] | c["DESC_SBO"] | c["DESC_VERSION"] | c["DESC_SWIZZLE_128B"]
    for kb, (ad, bd) in enumerate(p.descriptors()):
        assert ad == fixed | ((SMEM_A + 32 * kb) >> 4)
        assert bd == fixed | ((SMEM_B + 32 * kb) >> 4)
    assert c["SMEM_D"] == 0x8000 and c["TMEM_COLS"] == p.tmem_columns


def test_sm90_descriptor_equals_bwlab_umma_sm90():
    text = (ROOT / "cuda_src" / "full_flow_sm90.cu").read_text()
    assert "(1ull << 16) | ((1024ull >> 4) << 32) | (1ull << 62)" in text
    fixed = (1 << 16) | ((1024 >> 4) << 32) | (1 << 62)
    d = umma.tile_desc("K", "128B", "f16", (64, 64), 0, 0, "sm90")
    enc = umma.SmemDesc(d.start_address, d.leading_byte_offset, d.stride_byte_offset, d.swizzle, 0, 0, 1,
                        "sm90").encode()
    assert enc == fixed, (hex(enc), hex(fixed))


def test_kernels_compile_and_every_hop_shows_in_the_ptx():
    from bwlab.compile import compile_cuda
    ptx = compile_cuda("full_flow_sm100", arch="sm_100a").ptx_of("full_flow")
    hops = {h for _, h, _ in ptx_by_hop(ptx)}
    assert set(HOP_NAMES) - {"gmem"} <= hops
    text = format_ptx_by_hop(ptx)
    assert "tcgen05.mma.cta_group::1.kind::f16" in text and "(x4," in text
    assert "tcgen05.ld.sync.aligned.32x32b.x32.b32" in text
    hop90 = {h for _, h, _ in ptx_by_hop(compile_cuda("full_flow_sm90", arch="sm_90a").ptx_of("full_flow_hopper"))}
    assert {"tma_load", "mma", "commit", "st_shared", "fence", "tma_store"} <= hop90


def test_event_enum_matches_the_kernel():
    text = (ROOT / "cuda_src" / "full_flow_sm90.cu").read_text()
    enum = re.search(r"enum \{ EV_START = 0, ([^}]*)\}", text).group(1)
    names = ["EV_START"] + [x.strip() for x in enum.split(",") if x.strip()]
    assert names[-1] == "EV_COUNT" and len(names) - 1 == len(FLOW_EVENTS)


# ---- the timeline -----------------------------------------------------------------------------------
def test_model_timeline_barrier_phases():
    ev = model_events()
    full = [e for e in ev if e.barrier == "full"]
    assert max(e.tx for e in full) == 32768
    flip = next(e for e in full if e.phase == 1)
    assert "B lands" in flip.action and flip.tx == 0
    done = [e for e in ev if e.barrier == "mma_done"]
    assert [e.phase for e in done] == [0, 0, 1, 1]
    assert ev[-1].action == "tcgen05.dealloc"


def test_measured_segments_and_chrome_json():
    s = np.full((4, len(FLOW_EVENTS), 2), np.uint64(0xFFFFFFFFFFFFFFFF), np.uint64)
    s[:, 0] = [[1000, 5]] * 4
    s[:, 2] = [[1500, 50]] * 4
    s[0, 8] = [2500, 90]
    segs = measured_segments(s)
    assert (0, "start", "load done", 0, 500) in segs and (0, "load done", "store read", 500, 1500) in segs
    doc = chrome_trace(model_events(), segs, "H100")
    assert any(e["pid"] == "H100" and e["dur"] == 1.0 for e in doc["traceEvents"])


# ---- the recording ---------------------------------------------------------------------------------
def test_model_trace_equals_the_recorded_gpu_trace():
    from bwlab.checks.record_flow import NAME, replay
    from bwlab.results import load_recording
    rec = load_recording(NAME)
    assert rec.meta["stage"] == "flow"
    res = replay(rec)
    assert res.ok, str(res)
    hops_from_gpu = [h for h, s in rec.params["sources"].items() if s == "GPU"]
    if rec.meta["date"] != "provisional":           # the H100's recording: TMA load and store were real
        assert {"tma_load", "st_shared", "tma_store"} <= set(hops_from_gpu)


# ---- package shape (the rules of tests/test_package_shape.py) ------------------------------------
def test_flow_package_shape():
    pkg = ROOT / "bwlab" / "flow"
    only = {"cupy": "runner.py", "cuda": "runner.py", "matplotlib": "pictures.py", "ipywidgets": "pictures.py"}
    for f in pkg.glob("*.py"):
        assert len(f.read_text().splitlines()) <= 420, f.name
        for node in ast.walk(ast.parse(f.read_text())):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else []
            for m in mods:
                top = m.split(".")[0]
                if top in only:
                    assert f.name == only[top], f"{f.name} imports {m}"
    import bwlab.flow as fl
    assert "PTX ISA" in fl.__doc__


# ---- GPU ---------------------------------------------------------------------------------------------
@pytest.mark.sm90
def test_hybrid_trace_equals_model_and_numpy():
    f = Flow(0)
    t = f.trace("hybrid")
    assert f.check(t).ok, str(f.check(t))
    assert np.array_equal(t.result, f.reference())


@pytest.mark.sm90
def test_hopper_native_equals_numpy():
    from bwlab import device
    if not device.gpu_info().has_wgmma:
        pytest.skip("wgmma needs sm_90a")
    from bwlab.flow.runner import run_hopper
    p = FlowProblem(0)
    d, stamps = run_hopper(p, repeat=2)
    assert np.array_equal(d[:p.M], p.reference()) and not d[p.M:].any()
    assert measured_segments(stamps)


@pytest.mark.sm100
def test_hardware_trace_equals_model():
    f = Flow(0)
    t = f.trace("hardware")
    assert f.check(t).ok, str(f.check(t))


def test_listing_names_the_early_exit_and_gives_hopper_its_own_headings():
    from bwlab.compile import compile_cuda
    text = format_ptx_by_hop(compile_cuda("full_flow_sm100", arch="sm_100a").ptx_of("full_flow"))
    heads = [line for line in text.splitlines() if line.startswith("---")]
    assert heads[2].startswith("--- early exit") and heads[-1] == "--- teardown: free TMEM", heads
    hopper = format_ptx_by_hop(compile_cuda("full_flow_sm90", arch="sm_90a").ptx_of("full_flow_hopper"))
    assert "TMEM" not in hopper.replace("no TMEM", "") and "8 x wgmma.mma_async m64n128k16" in hopper
    assert "tcgen05" not in "\n".join(line for line in hopper.splitlines() if line.startswith("---"))


def test_table_gives_expected_byte_counts():
    t = Flow(seed=0).trace("model")
    sizes = t.sizes()
    for h in HOPS:
        assert sum(np.asarray(t.arrays[k]).nbytes for k in h.keys) == sizes[h.name][0], h.name
    assert "66048 = 128x128 x 4 + 512 guard row" in t.table()
