"""Notebook 06's exercise checks (bwlab.flow.exercises, bwlab.flow.kernel_edit): each passes the right
answer, says "no answer yet" to the placeholder and names the rule or the mistake for common wrong
answers. The references they use are checked against independent counts (the trace's arrays, the
compiled kernels' PTX, the grid model) and the ordering model against the trip's own trace."""
import re

import pytest

from exercise_cells import not_yet as _fails
from bwlab.exercises import hidden_cases
from bwlab.flow import HOP_NAMES, ORDERINGS, Flow, FlowProblem, kernel_ptx, trace_without
from bwlab.flow import exercises as ex
from bwlab.flow import kernel_edit
from bwlab.flow.model import flow_model

SIZE = {"f16": 2, "bf16": 2, "tf32": 4, "e4m3": 1, "f32": 4}


def hop_bytes(m, n, k, ab="f16", d="f32"):
    operands = (m + n) * k * SIZE[ab]
    return {"tma_load": operands, "mma": operands, "tmem_ld": m * n * 4, "tma_store": m * n * SIZE[d]}


def mma_count(m, k, ab="f16"):
    steps = k * SIZE[ab] // 32
    return steps, (m // 64) * steps


def l2_reads(M, N, cm, cn):
    tile, gm, gn = 128 * 64 * 2, M // 128, N // 128
    return gm * gn * 2 * tile, (gm // cm) * (gn // cn) * (cm + cn) * tile


FIRST_WRONG = {"wait on full": "mma", "wait on mma_done": "tmem_ld", "tcgen05.wait::ld": "st_shared",
               "fence.proxy.async": "tma_store"}
PROXIES = {"wait on full": ("async", "async"), "fence.proxy.async": ("generic", "async")}


# ---- the references against independent counts ------------------------------------------------------

def test_hop_bytes_reference_matches_the_trace():
    t = Flow(0).model()
    p = t.problem
    want = ex.tile_hop_bytes(p.M, p.N, p.K)
    a = t.arrays
    assert want["tma_load"] == a["smem_a"].nbytes + a["smem_b"].nbytes == p.expect_tx
    assert want["mma"] == want["tma_load"]                       # each K slice read once
    assert want["tmem_ld"] == a["regs"].nbytes == a["tmem"].nbytes
    assert want["tma_store"] == a["smem_d"].nbytes
    assert ex.tile_hop_bytes(128, 256, 64, "bf16", "f16") == hop_bytes(128, 256, 64, "bf16", "f16")
    assert ex.tile_hop_bytes(128, 64, 32, "tf32")["tma_load"] == (128 + 64) * 32 * 4


def test_mma_count_reference_matches_the_compiled_kernels():
    tc = len(re.findall(r"^\s*tcgen05\.mma", kernel_ptx("sm_100a"), re.M))
    wg = len(re.findall(r"^\s*wgmma\.mma_async", kernel_ptx("sm_90a"), re.M))
    p = FlowProblem()
    assert ex.tile_mma_count(p.M, p.K, "f16") == (tc, wg) == (4, 8)
    assert ex.tile_mma_count(128, 32, "tf32") == (4, 8)
    assert ex.tile_mma_count(64, 128, "e4m3") == (4, 4)


def test_l2_reference_is_the_grid_model():
    for args in [(512, 1024, 2, 4), (512, 1024, 1, 1), (1024, 1024, 4, 2)]:
        assert ex.l2_reads_model(*args) == l2_reads(*args)


def test_each_missing_ordering_spoils_its_reader_and_nothing_before():
    p = FlowProblem(0)
    whole = flow_model(p)
    for o in ORDERINGS:
        check = whole.compare(trace_without(p, o.name))
        hop, res = check.first_difference()
        assert hop == o.reader and not res.ok
        for h, r in zip(check.hops, check.results):       # every hop before the reader agrees
            if HOP_NAMES.index(h) < HOP_NAMES.index(o.reader):
                assert r.ok, (o.name, h)
        assert check.hops and not check.ok
    assert ex.first_wrong_hops() == FIRST_WRONG
    assert [o.proxies for o in ORDERINGS if o.proxies] == list(PROXIES.values())


def test_descriptors_with_a_k_step():
    p = FlowProblem()
    assert p.descriptors(kernel_edit.canonical_k_step()) == p.descriptors()
    assert kernel_edit.canonical_k_step() == 32
    assert p.descriptors(0)[3] == p.descriptors()[0]
    for bad in (8, -16, 32.5):
        with pytest.raises(ValueError, match="multiple of 16"):
            p.descriptors(bad)


def test_edit_k_step_changes_every_site_and_compiles():
    k100, k90 = kernel_edit.edit_k_step(16)
    assert k100.text.count("16 * kb") == 2 and "32 * kb" not in k100.text
    assert k90.text.count("16 * kb") == 3 and "32 * kb" not in k90.text
    assert "tcgen05.mma" in k100.compile("sm_100a").ptx
    assert not kernel_edit.edit_k_step(32)[0].edited


# ---- the checks ------------------------------------------------------------------------------------------

def test_check_hop_bytes(capsys):
    ex.check_hop_bytes(hop_bytes)
    ex.check_hop_bytes(hop_bytes, hidden=hidden_cases("flow_hop_bytes"))
    assert capsys.readouterr().out.replace("checked: ", "correct: ").count("correct: bytes per hop") == 2

    def stub(m, n, k, ab="f16", d="f32"):
        """the student version: no answer"""
    assert "no answer yet" in _fails(ex.check_hop_bytes, stub)
    assert "no function yet" in _fails(ex.check_hop_bytes, None)

    def in_d_type(m, n, k, ab="f16", d="f32"):
        return dict(hop_bytes(m, n, k, ab, d), tmem_ld=m * n * SIZE[d])
    msg = _fails(ex.check_hop_bytes, in_d_type)
    assert "tmem_ld" in msg and "one 32-bit cell per element" in msg

    def elements(m, n, k, ab="f16", d="f32"):
        return dict(hop_bytes(m, n, k, ab, d), tma_load=(m + n) * k)
    assert "elements, not bytes" in _fails(ex.check_hop_bytes, elements)

    def a_only(m, n, k, ab="f16", d="f32"):
        return dict(hop_bytes(m, n, k, ab, d), tma_load=m * k * SIZE[ab])
    assert "only A" in _fails(ex.check_hop_bytes, a_only)
    # right on the shown tile, wrong on a hidden one (tf32 is 4 bytes, e4m3 1)
    two_bytes = lambda m, n, k, ab="f16", d="f32": hop_bytes(m, n, k, "f16", d)  # noqa: E731
    ex.check_hop_bytes(two_bytes)
    assert "tf32" in _fails(ex.check_hop_bytes, two_bytes, hidden=hidden_cases("flow_hop_bytes"))


def test_check_mma_count(capsys):
    ex.check_mma_count(mma_count)
    ex.check_mma_count(mma_count, hidden=hidden_cases("flow_mma_count"))
    assert capsys.readouterr().out.replace("checked: ", "correct: ").count("correct: MMA instructions") == 2
    assert "no answer yet" in _fails(ex.check_mma_count, lambda m, k, ab="f16": None)
    msg = _fails(ex.check_mma_count, lambda m, k, ab="f16": (k // 16, (m // 64) * (k // 16)))   # visible: tf32
    assert "32 bytes of K" in msg and "tf32" in msg
    assert "wgmma is m64" in _fails(ex.check_mma_count, lambda m, k, ab="f16": (k // 16, k // 16))
    # (2, 4) for M = 128, K = 64: M / 64 is right, K was stepped by 32 elements
    msg = _fails(ex.check_mma_count, lambda m, k, ab="f16": (k // 32, (m // 64) * (k // 32)))
    assert "wgmma is m64" not in msg and "steps K by 32 elements" in msg and "which is right" in msg
    per_thread = lambda m, k, ab="f16": (k // 16, 128 * (m // 64) * (k // 16))  # noqa: E731
    assert "not the threads" in _fails(ex.check_mma_count, per_thread)


def test_check_l2_reads(capsys):
    ex.check_l2_reads(l2_reads)
    ex.check_l2_reads(l2_reads, hidden=hidden_cases("flow_l2_reads"))
    assert capsys.readouterr().out.replace("checked: ", "correct: ").count("correct: L2 reads") == 2
    assert "no answer yet" in _fails(ex.check_l2_reads, lambda M, N, cm, cn: None)
    by_size = lambda M, N, cm, cn: (l2_reads(M, N, cm, cn)[0], l2_reads(M, N, cm, cn)[0] // (cm * cn))  # noqa: E731
    assert "dividing by the cluster size" in _fails(ex.check_l2_reads, by_size)
    same = lambda M, N, cm, cn: (l2_reads(M, N, cm, cn)[1],) * 2  # noqa: E731
    assert "without multicast the cluster changes nothing" in _fails(ex.check_l2_reads, same)


def test_check_orderings(capsys):
    ex.check_orderings(FIRST_WRONG, PROXIES)
    ex.check_orderings(FIRST_WRONG, PROXIES, hidden=hidden_cases("flow_orderings"))
    assert capsys.readouterr().out.replace("checked: ", "correct: ").count("correct: where a missing ordering point bites") == 2
    empty = {k: None for k in FIRST_WRONG}
    assert "no answer yet" in _fails(ex.check_orderings, empty, {k: (None, None) for k in PROXIES})
    assert "no answer yet for proxies" in _fails(ex.check_orderings, FIRST_WRONG, {k: (None, None) for k in PROXIES})
    msg = _fails(ex.check_orderings, dict(FIRST_WRONG, **{"wait on full": "tma_load"}), PROXIES)
    assert "the bytes tma_load leaves are right" in msg
    assert "5 of 6 answers right" in msg and "reads stale data" in msg
    # the prediction's answer ('mma') is not given: neither named nor shown in the model's trace
    assert "first differs after" not in msg and "TMEM lane 0" not in msg and "'mma'" not in msg
    both = dict(FIRST_WRONG, **{"wait on full": "tma_load"})
    msg = _fails(ex.check_orderings, both, dict(PROXIES, **{"fence.proxy.async": ("async", "generic")}))
    assert "4 of 6 answers right" in msg
    msg = _fails(ex.check_orderings, dict(FIRST_WRONG, **{"fence.proxy.async": "fence"}), PROXIES)
    assert "moves no bytes of its own" in msg
    msg = _fails(ex.check_orderings, FIRST_WRONG, dict(PROXIES, **{"fence.proxy.async": ("async", "generic")}))
    assert "swapped" in msg and "9.7.9.25.2" in msg
    msg = _fails(ex.check_orderings, FIRST_WRONG, dict(PROXIES, **{"wait on full": ["async", "generic"]}))
    assert "tcgen05.mma reads them" in msg


@pytest.fixture
def model_tier(monkeypatch):
    monkeypatch.setattr(kernel_edit, "flow_tier", lambda: "model")


def test_check_k_step(model_tier, capsys):
    kernel_edit.check_k_step(32)
    kernel_edit.check_k_step(32, hidden=hidden_cases("flow_k_step"))
    out = capsys.readouterr().out.replace("checked: ", "correct: ")
    assert out.count("correct: the K step") == 2 and "every hop agrees" in out
    assert "no answer yet" in _fails(kernel_edit.check_k_step, None)
    msg = _fails(kernel_edit.check_k_step, 16)
    assert "in elements" in msg and "the first hop that differs is mma" in msg and "as f32" in msg
    assert "the rule gives a larger step" in msg and "step 32" not in msg      # the answer is not given
    assert "SBO" in _fails(kernel_edit.check_k_step, 1024)
    msg = _fails(kernel_edit.check_k_step, 2)
    assert "multiple of 16" in msg and "encoded step" in msg
    assert "int number of bytes" in _fails(kernel_edit.check_k_step, "32")


def test_try_k_step_in_the_model_tier():
    run = kernel_edit.try_k_step(16, tier="model")
    assert not run.ok and run.gpu is None and not run.past_tiles
    assert run.model.first_difference()[0] == "mma"
    assert "model tier" in str(run)
    assert kernel_edit.try_k_step(32, tier="model").ok
    assert kernel_edit.try_k_step(64, tier="model").past_tiles      # the last MMA reads past B's tile


@pytest.mark.sm90
def test_k_step_on_a_hopper():
    """The edited full_flow_hopper runs in a worker; where it reads inside the tiles the model of the
    learner's step predicts its D bit for bit (seen on an H100 for steps 0, 16 and 32)."""
    from bwlab import device
    info = device.gpu_info()
    if not (info.has_tcgen05 or info.has_wgmma):
        pytest.skip(f"{info.name} runs neither full_flow (tcgen05) nor full_flow_hopper (wgmma)")
    tier = "hardware" if info.has_tcgen05 else "hybrid"
    for step in (0, 16):
        run = kernel_edit.try_k_step(step, tier=tier)
        assert run.gpu is not None and not run.gpu.ok and run.gpu_vs_model.ok
    assert kernel_edit.try_k_step(32, tier=tier).ok
