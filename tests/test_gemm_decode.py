"""The decode rung (bwlab.gemm.decode, cuda_src/gemm_sm90/sd_swap_ab.cu): its shapes are checked before any
launch, every configuration it builds compiles for sm_90a without serialised wgmma, it computes C bit for
bit in the PTX emulator with every stage and barrier phase reused (the split-K cluster's DSMEM exchange
included), its committed H200 report parses, and on an sm_90 GPU it is correct at the decode shapes."""
import numpy as np
import pytest

from bwlab.gemm import decode
from bwlab.gemm.decode import MTS, SWAP_AB, Config
from bwlab.gemm.ladder import ShapeError


def test_every_mt_has_a_configuration_with_a_ring_of_three_or_more():
    assert [mt for mt, _ in SWAP_AB.table] == list(MTS)
    for mt in MTS:
        assert SWAP_AB.stages(mt) >= 3, (mt, SWAP_AB.config(mt))
        assert SWAP_AB.smem_bytes(mt, SWAP_AB.stages(mt)) <= decode.H100_SMEM_OPTIN
        assert SWAP_AB.exchange_bytes(mt) <= SWAP_AB.stages(mt) * SWAP_AB.stage_bytes(mt)
    assert [SWAP_AB.mt(m) for m in (1, 16, 17, 33, 64, 65, 129, 256)] == [16, 16, 32, 64, 64, 128, 256, 256]
    # N = 8192: 128 CTAs whatever the configuration (one slab of 64 rows each, or two and K in two)
    assert {SWAP_AB.grid(m, 8192)[0] for m in (16, 32, 64, 128, 256)} == {128}


def test_shapes_are_checked_before_any_launch():
    with pytest.raises(ShapeError, match=r"1 <= M <= 256"):
        SWAP_AB.require_shape(300, 8192, 8192)
    with pytest.raises(ShapeError, match=r"N = 96 must be a positive multiple of 64"):
        SWAP_AB.require_shape(16, 96, 512)
    with pytest.raises(ShapeError, match=r"K = 320 must be a positive multiple of 128 .*2 K pieces"):
        SWAP_AB.require_shape(256, 256, 320)    # MT 256: one box of 64 K per stage, K in 2 pieces
    SWAP_AB.require_shape(20, 256, 256)
    with pytest.raises(ShapeError, match="ring needs 2"):
        decode._stages(SWAP_AB.with_config(1, 1, 8), 256, 8192, None, decode.H100_SMEM_OPTIN)
    with pytest.raises(ValueError, match="between 2 and"):
        decode._stages(SWAP_AB, 64, 512, 1, decode.H100_SMEM_OPTIN)


@pytest.mark.parametrize("mt", MTS)
def test_each_configuration_compiles_without_serialised_wgmma(mt):
    from bwlab.compile import compile_cuda
    c = compile_cuda(SWAP_AB.path, arch="sm_90a", defines=SWAP_AB.build_defines(mt))
    assert "gemm" in c.kernels()
    assert "serialized" not in c.log, c.log   # ptxas C7510-C7520: the wgmma chain lost its overlap


@pytest.mark.parametrize("m,n,k", [(16, 256, 1024), (20, 256, 1024), (64, 256, 1024), (100, 256, 1024),
                                   (256, 256, 512)])
def test_decode_rung_in_the_emulator(m, n, k, monkeypatch):
    """A ring of 2 stages, so every stage and both parities of its barriers come round twice at this K;
    M = 20 and 100 leave rows of the MT tile to TMA's zero fill and the stores' bounds; MT = 128 and 256
    split K across a cluster of 2 and add the halves through DSMEM. Inputs k/8: every sum exact in f32,
    so C is compared bit for bit; the emulator's strict rules leave no warning."""
    from bwlab.gemm import sm100
    monkeypatch.setenv("BWLAB_BACKEND", "emulated")
    cfg = SWAP_AB.config(m)
    iters = k // (64 * cfg.kb * cfg.split)
    assert iters >= 4, iters                 # each of the 2 stages used at least twice
    a, b = sm100.example_inputs(m, n, k, seed=m)
    c, run = decode.run_decode_emulated(SWAP_AB, a, b, stages=2)
    assert np.array_equal(c, sm100.reference_bf16(a, b))
    assert not run.warnings, run.warnings
    assert run.grid[0] == n // (64 * cfg.consumers) * cfg.split


# Even rows: G clusters share N's rows (even-aligned shares of at most 64 x consumers rows, G not dividing N),
# each loading whole 64-row boxes from its first row (its neighbour's rows or, for the last, TMA's zero fill
# past N) and storing only its own rows.
EVEN = [(Config(1, 1, 4, even=1), 16, 256, 1024, 5), (Config(1, 1, 4, even=1), 64, 128, 1024, 3),
        (Config(1, 1, 4, even=1), 20, 192, 1024, 5), (Config(2, 2, 2, even=1), 100, 256, 1024, 3),
        (Config(2, 2, 1, even=1), 256, 384, 512, 5)]


@pytest.mark.parametrize("cfg,m,n,k,g", EVEN, ids=lambda v: str(v) if isinstance(v, int) else
                         f"w{v.consumers}s{v.split}kb{v.kb}")
def test_even_rows_in_the_emulator(cfg, m, n, k, g, monkeypatch):
    from bwlab.gemm import sm100
    monkeypatch.setenv("BWLAB_BACKEND", "emulated")
    r = SWAP_AB.with_config(cfg.consumers, cfg.split, cfg.kb, even=1)
    assert k // (64 * cfg.kb * cfg.split) >= 4
    shares = {2 * ((i + 1) * (n // 2) // g) - 2 * (i * (n // 2) // g) for i in range(g)}
    assert len(shares) == 2 and max(shares) <= 64 * cfg.consumers and n % g   # uneven shares, G not dividing N
    a, b = sm100.example_inputs(m, n, k, seed=m + 2)
    c, run = decode.run_decode_emulated(r, a, b, stages=2, groups=g)
    assert np.array_equal(c, sm100.reference_bf16(a, b))
    assert not run.warnings, run.warnings
    assert run.grid[0] == g * cfg.split


def test_even_rows_take_one_cluster_per_sm_where_a_share_fits():
    """N = 8192 on 132 SMs: the tile grid is 128 CTAs, even rows 132 (62 or 64 rows each), or 66 clusters
    of 2; where a share would exceed a cluster's boxes or be half of them or less, the tile grid."""
    r = SWAP_AB.with_config(1, 1, 4, even=1)
    assert r.groups(16, 8192, 132) == 132 and r.grid(16, 8192, 132) == (132, 1, 1)
    assert SWAP_AB.with_config(2, 2, 2, even=1).groups(128, 8192, 132) == 66
    assert r.groups(16, 8192 + 512, 132) == 0      # 66 rows a share: more than a box
    assert r.groups(16, 4096, 132) == 0            # 31 rows a share: less than half a box
    assert r.groups(16, 1024, 132) == 0 and SWAP_AB.groups(16, 8192, 132) == 0   # table without even rows
    assert SWAP_AB.with_config(1, 1, 4, (), 2, 2).groups(16, 8192, 132) == 0     # 264 shares of 31 rows
    r.require_groups(16, 8192, 132)
    for g in (127, 8193, -1):
        with pytest.raises(ValueError, match="share N = 8192 rows in even-aligned shares of at most 64"):
            r.require_groups(16, 8192, g)
    with pytest.raises(ValueError, match="even = 3"):
        Config(1, 1, 4, even=3)


# Configurations beyond the table's: four consumer warpgroups sharing each A tile, K in four pieces whose
# partials meet through DSMEM, and each with the other's neighbours (m, n, k: the smallest shapes that
# give every CTA 4 stages or more through a ring of 2).
WIDE = [(Config(4, 4, 1), 128, 256, 1024), (Config(4, 4, 1), 20, 256, 1024), (Config(4, 4, 1, (0, 0)), 64, 256, 1024),
        (Config(4, 4, 2), 100, 256, 2048), (Config(4, 2, 1), 100, 256, 512), (Config(2, 4, 1), 256, 128, 1024),
        (Config(1, 4, 2), 48, 64, 2048), (Config(1, 1, 2, (), 2), 16, 64, 1024), (Config(1, 2, 1, (), 2), 100, 64, 512)]


@pytest.mark.parametrize("cfg,m,n,k", WIDE, ids=lambda v: str(v) if isinstance(v, int) else
                         f"w{v.consumers}s{v.split}kb{v.kb}{'r' + '-'.join(map(str, v.regs)) if v.regs else ''}"
                         f"{'m' + str(v.minb) if v.minb > 1 else ''}")
def test_wide_configurations_in_the_emulator(cfg, m, n, k, monkeypatch):
    """The reduction of 4 partials (each CTA stores a quarter of the columns, sums them in the pieces'
    order) and 4 consumers under one A tile, bit for bit with the strict rules, every barrier phase reused."""
    from bwlab.gemm import sm100
    monkeypatch.setenv("BWLAB_BACKEND", "emulated")
    r = SWAP_AB.with_config(cfg.consumers, cfg.split, cfg.kb, cfg.regs)
    assert k // (64 * cfg.kb * cfg.split) >= 4
    a, b = sm100.example_inputs(m, n, k, seed=m + 1)
    c, run = decode.run_decode_emulated(r, a, b, stages=2)
    assert np.array_equal(c, sm100.reference_bf16(a, b))
    assert not run.warnings, run.warnings
    assert run.grid[0] == n // (64 * cfg.consumers) * cfg.split


@pytest.mark.parametrize("cfg,mt", [(Config(4, 4, 1), 32), (Config(4, 4, 1), 64), (Config(4, 4, 1), 128),
                                    (Config(4, 4, 1, (0, 0)), 128), (Config(4, 4, 1, (40, 104)), 128),
                                    (Config(4, 4, 2), 128), (Config(2, 4, 1), 256), (Config(4, 2, 1), 128)])
def test_wide_configurations_compile_without_serialised_wgmma(cfg, mt):
    from bwlab.compile import compile_cuda
    r = SWAP_AB.with_config(cfg.consumers, cfg.split, cfg.kb, cfg.regs)
    c = compile_cuda(SWAP_AB.path, arch="sm_90a", defines=r.build_defines(mt))
    assert "serialized" not in c.log, c.log


def test_wide_configurations_are_refused_where_the_kernel_cannot_hold_them():
    from bwlab.compile import CompileError, compile_cuda
    with pytest.raises(ShapeError, match=r"fewer than the 4 CTAs that split K .* needs M > 16"):
        SWAP_AB.with_config(4, 4, 1).require_shape(16, 256, 1024)
    SWAP_AB.with_config(4, 4, 1).require_shape(17, 256, 1024)
    with pytest.raises(ShapeError, match=r"4 consumer warpgroups .* M <= 128"):
        SWAP_AB.with_config(4, 4, 1).require_shape(129, 256, 1024)
    with pytest.raises(ShapeError, match=r"K = 512 must be a positive multiple of 1024 .*4 K pieces"):
        SWAP_AB.with_config(4, 4, 4).require_shape(64, 256, 512)
    for bad, rule in (((3, 1, 1), "1, 2 or 4 consumer"), ((1, 3, 1), "1, 2 or 4 pieces"), ((1, 1, 0), "one box"),
                      ((4, 4, 1, (40, 0)), "both 0"), ((4, 4, 1, (20, 112)), "multiples of 8")):
        with pytest.raises(ValueError, match=rule):
            Config(*bad)
    # the kernel checks the setmaxnreg budget itself: 40 + 4 x 112 registers x 128 threads > 96 x 640
    with pytest.raises(CompileError, match="exceed the CTA's pool"):
        compile_cuda(SWAP_AB.path, arch="sm_90a", defines=SWAP_AB.with_config(4, 4, 1, (40, 112)).build_defines(128))


def test_two_ctas_per_sm_halve_the_ring_and_the_registers():
    """minb = 2: the ring and the registers sized so that a CTA of the next grid fits beside one of this
    grid on the SM (what programmatic dependent launch can use); refused where the accumulator cannot fit."""
    from bwlab.compile import compile_cuda
    from bwlab.gemm.occupancy import cubin_resources
    r = SWAP_AB.with_config(1, 1, 1, (), 2)
    for mt in (16, 64, 128):
        smem = r.smem_bytes(mt, r.stages(mt))
        assert r.stages(mt) >= 3 and 2 * (smem + 1536 + 1024) <= decode.H100_SMEM_PER_SM, (mt, smem)
    res = cubin_resources(compile_cuda(r.path, arch="sm_90a", defines=r.build_defines(128)).cubin)
    assert res.registers <= 128 and res.static_smem <= decode.STATIC_SMEM
    with pytest.raises(ShapeError, match="minb = 2 takes one consumer warpgroup and M <= 128"):
        r.require_shape(129, 256, 1024)
    with pytest.raises(ShapeError, match="minb = 2 takes one consumer"):
        SWAP_AB.with_config(2, 2, 1, (), 2).require_shape(64, 256, 1024)
    with pytest.raises(ValueError, match="1 or 2 CTAs per SM"):
        Config(1, 1, 1, (), 3)


# M split across a cluster of 2 (cuBLAS's shape at M = 256): both CTAs stream the same 64 x consumers rows of
# B, each loading half of every stage with TMA multicast to both, each its half of A's rows over the whole of K.
MSPLIT = [(Config(2, 1, 1, msplit=2), 256, 128, 512), (Config(2, 1, 2, msplit=2), 100, 256, 1024),
          (Config(2, 1, 1, msplit=2), 20, 128, 512), (Config(2, 1, 1, msplit=2), 128, 256, 512),
          (Config(1, 1, 2, msplit=2), 64, 128, 1024)]


@pytest.mark.parametrize("cfg,m,n,k", MSPLIT, ids=lambda v: str(v) if isinstance(v, int) else
                         f"w{v.consumers}kb{v.kb}ms{v.msplit}")
def test_m_split_clusters_in_the_emulator(cfg, m, n, k, monkeypatch):
    """Each B stage multicast by halves into both CTAs of the pair, a stage refilled only once the consumers
    of both have released it (remote arrivals), through a ring of 2 so every phase comes round twice; M = 20
    and 100 leave the second CTA's rows partly to TMA's zero fill; bit for bit with the strict rules (the
    emulator reports a multicast landing in a stage the partner's wgmma still reads, were a release missing)."""
    from bwlab.gemm import sm100
    monkeypatch.setenv("BWLAB_BACKEND", "emulated")
    r = SWAP_AB.with_config(cfg.consumers, cfg.split, cfg.kb, msplit=cfg.msplit)
    assert k // (64 * cfg.kb) >= 4
    a, b = sm100.example_inputs(m, n, k, seed=m + 3)
    c, run = decode.run_decode_emulated(r, a, b, stages=2)
    assert np.array_equal(c, sm100.reference_bf16(a, b))
    assert not run.warnings, run.warnings
    assert run.grid[0] == n // (64 * cfg.consumers) * 2


@pytest.mark.parametrize("mt,kb", [(256, 1), (256, 2), (128, 1), (128, 2), (32, 1)])
def test_m_split_clusters_compile_without_serialised_wgmma(mt, kb):
    from bwlab.compile import compile_cuda
    r = SWAP_AB.with_config(2, 1, kb, msplit=2)
    c = compile_cuda(r.path, arch="sm_90a", defines=r.build_defines(mt))
    assert "serialized" not in c.log, c.log


def test_m_split_clusters_halve_a_in_each_stage():
    """Half of A's rows per CTA: at M = 256 a stage of one box of 64 K is 16 KiB of B and 16 of A, 7 in the
    SMEM (the table's K-split stage of the same box holds all 256 rows of A: 48 KiB, 4 stages); the grid
    is twice the slabs of B; refused where a half would be under wgmma's N of 16 or the cluster splits K."""
    r = SWAP_AB.with_config(2, 1, 1, msplit=2)
    assert r.nt(256) == 128 and r.stage_bytes(256) == 32768 and r.stages(256) == 7 and r.cluster(256) == 2
    assert r.stages(128) == 9 and r.grid(256, 8192) == (128, 1, 1) and r.exchange_bytes(256) == 0
    assert r.build_defines(256)["DECODE_MSPLIT"] == 2 and "DECODE_MSPLIT" not in SWAP_AB.build_defines(256)
    with pytest.raises(ShapeError, match="msplit = 2 needs M > 16"):
        r.require_shape(16, 256, 512)
    r.require_shape(17, 256, 512)
    with pytest.raises(ValueError, match="splits M or K, not both"):
        Config(2, 2, 1, msplit=2)
    with pytest.raises(ValueError, match="an even count"):
        Config(1, 1, 1, msplit=2)
    with pytest.raises(ValueError, match="1 or 2 CTAs"):
        Config(2, 1, 1, msplit=4)


def test_the_deepest_ring_in_the_emulator(monkeypatch):
    from bwlab.gemm import sm100
    monkeypatch.setenv("BWLAB_BACKEND", "emulated")
    a, b = sm100.example_inputs(64, 256, 512, seed=5)
    c, run = decode.run_decode_emulated(SWAP_AB, a, b)
    assert run.stages == SWAP_AB.stages(64) and np.array_equal(c, sm100.reference_bf16(a, b))


def test_the_committed_report_parses():
    rows = decode.decode_report_rows()
    shapes = {r.shape for r in rows}
    assert {f"{m}x8192x8192" for m in (16, 32, 64, 128, 256)} | {"4096x4096x4096"} == shapes
    for m in (16, 32, 64, 128, 256):
        here = {r.name: r for r in rows if r.shape == f"{m}x8192x8192"}
        assert {"library (cuBLAS)", "read stream", SWAP_AB.name} <= set(here)
        st = here["read stream"]
        assert st.roofline == 1.0 and st.mib == pytest.approx(decode.bytes_moved(m, 8192, 8192) / 2**20, abs=0.01)
        sd = here[SWAP_AB.name]
        assert sd.roofline == pytest.approx(st.us / sd.us, abs=2e-3)
        assert 1000 <= sd.mhz <= 2000 and 1000 <= here["library (cuBLAS)"].mhz <= 2000   # NVML's SM clock
    table = decode.roofline_table(rows)
    assert "x roofline" in table and table.count(SWAP_AB.name + " (PDL)") == 5 and table.count(SWAP_AB.name + " ") == 10
    assert table.count("read stream (PDL)") == 6   # its five rows and the note under the table
    for m in (16, 32, 64, 128, 256):   # launched with PDL, against the stream launched with PDL
        here = {r.name: r for r in rows if r.shape == f"{m}x8192x8192"}
        st, sd = here["read stream (PDL)"], here[SWAP_AB.name + " (PDL)"]
        assert st.roofline == 1.0 and sd.roofline == pytest.approx(st.us / sd.us, abs=2e-3)


def test_the_diff_and_the_comment():
    d = decode.decode_rung_diff()
    assert d.startswith("--- sk_split_k.cu\n+++ sd_swap_ab.cu") and "+#define DECODE_MT" in d
    assert decode.decode_header_comment().startswith("GEMM ladder, Hopper, the decode rung")


def test_config_is_plain_data():
    assert SWAP_AB.with_config(2, 2, 1).config(16) == Config(2, 2, 1)
    assert SWAP_AB.with_config(4, 4, 1, (0, 0)).build_defines(64)["DECODE_CONSUMER_REGS"] == 0
    with pytest.raises(KeyError, match="no decode rung"):
        decode.rung("s9")


def _launch_and_check(launch, a, b, name):
    """One launch on a C filled with NaN bits, the kernel's status read, C checked against A B^T."""
    from bwlab.gemm import runner
    launch.c.fill(0xFFFF)
    runner.clear_status(launch)
    launch()
    runner.raise_on_status(launch)
    res = runner.check(a, b, launch.c, name)
    assert res.ok, str(res)


@pytest.mark.sm90
@pytest.mark.parametrize("m", [16, 100, 128])
def test_a_pdl_chain_is_correct_on_the_gpu(m):
    """Programmatic dependent launch: C1 = A B1^T, then C2 = C1 B2^T with C1 as the second GEMM's A (N =
    K), both launched with PDL, C1 and C2 filled with NaN bits before each round: the second grid may
    start early but reads A only after griddepcontrol.wait."""
    import cupy as cp
    from bwlab.gemm import runner
    n = k = 1024
    a1, b1 = runner.random_operands(m, n, k, seed=m)
    _, b2 = runner.random_operands(m, n, k, seed=m + 1)
    c1 = cp.empty((m, n), dtype=cp.uint16)
    l1 = decode.prepare(SWAP_AB, a1, b1, c=c1, pdl=True)
    l2 = decode.prepare(SWAP_AB, c1, b2, pdl=True)
    assert l1.pdl and l2.pdl
    for _ in range(4):
        c1.fill(0xFFFF)
        l2.c.fill(0xFFFF)
        l1()
        l2()
        runner.raise_on_status(l2)
        assert runner.check(a1, b1, c1, "C1").ok
        res = runner.check(c1, b2, l2.c, "C2")
        assert res.ok, str(res)


@pytest.mark.sm90
@pytest.mark.parametrize("m", [16, 20, 64, 100, 128])
def test_even_rows_are_correct_on_the_gpu(m):
    """The table's configuration with even rows at N = 8192 (one cluster per SM; 132 SMs: shares of 62 or
    64 rows, 124 or 126 for clusters of 2) and an explicit G of 131, plain and with PDL."""
    from bwlab.device import gpu_info
    from bwlab.gemm import runner
    c = SWAP_AB.config(m)
    r = SWAP_AB.with_config(c.consumers, c.split, c.kb, c.regs, c.minb, even=1)
    a, b = runner.random_operands(m, 8192, 1024, seed=m)
    for groups, pdl in ((None, False), (None, True), (131 // c.split, False)):
        launch = decode.prepare(r, a, b, groups=groups, pdl=pdl)
        assert launch.groups == (groups or r.groups(m, 8192, gpu_info().sm_count))
        _launch_and_check(launch, a, b, SWAP_AB.name)


@pytest.mark.sm90
@pytest.mark.parametrize("m", [16, 20, 64, 100, 128, 256])
def test_decode_rung_is_correct_on_the_gpu(m):
    from bwlab.gemm import runner
    a, b = runner.random_operands(m, 1024, 2048, seed=m)
    launch = decode.prepare(SWAP_AB, a, b)
    for _ in range(2):          # launched twice: nothing the first launch left behind matters
        _launch_and_check(launch, a, b, SWAP_AB.name)


@pytest.mark.sm90
@pytest.mark.parametrize("m", [20, 100, 128, 256])
def test_m_split_clusters_are_correct_on_the_gpu(m):
    """M split across a cluster of 2 (B multicast to the pair), KB = 1 and 2, plain and with PDL."""
    from bwlab.gemm import runner
    a, b = runner.random_operands(m, 1024, 2048, seed=m)
    for kb in (1, 2):
        r = SWAP_AB.with_config(2, 1, kb, msplit=2)
        for pdl in (False, True):
            launch = decode.prepare(r, a, b, pdl=pdl)
            _launch_and_check(launch, a, b, f"{SWAP_AB.name} kb{kb} ms2")


def test_l2_promotion_is_a_checked_config_field_that_reaches_the_tensor_maps(monkeypatch):
    """Config.l2 (probed on an H200: no effect, decode_probe_h200.txt 11) is validated and encoded into A's and
    B's tensor maps; the emulated result is the same bits."""
    from bwlab.emu.tensormap import decode as decode_map
    from bwlab.gemm import sm100
    with pytest.raises(ValueError, match="L2 promotion is one of none, 64B, 128B, 256B"):
        Config(1, 1, 4, l2="512B")
    r = SWAP_AB.with_l2("256B")
    assert {c.l2 for _, c in r.table} == {"256B"} and [c.consumers for _, c in r.table] == \
        [c.consumers for _, c in SWAP_AB.table]
    monkeypatch.setenv("BWLAB_BACKEND", "emulated")
    seen = []
    real = decode._maps

    def spy(*args):
        maps = real(*args)
        seen.extend(decode_map(t)[0].l2_promotion for t in maps[:2])
        return maps
    monkeypatch.setattr(decode, "_maps", spy)
    a, b = sm100.example_inputs(16, 64, 512, seed=3)
    c, run = decode.run_decode_emulated(r, a, b, stages=2)
    assert seen == ["256B", "256B"]
    assert np.array_equal(c, sm100.reference_bf16(a, b)) and not run.warnings


@pytest.mark.parametrize("poll", [1, 2])
def test_the_probed_mbarrier_waits_compute_the_same_bits(poll, monkeypatch):
    """BW_WAIT_POLL 1 and 2 (cuda_src/ptx/mbarrier.cuh; probed on an H200, decode_probe_h200.txt 12) change only
    how a wait polls: the emulated decode rung gives the reference's bits under each."""
    from bwlab.gemm import sm100
    monkeypatch.setenv("BWLAB_BACKEND", "emulated")
    real = decode.Rung.build_defines
    monkeypatch.setattr(decode.Rung, "build_defines", lambda self, m: {**real(self, m), "BW_WAIT_POLL": poll})
    a, b = sm100.example_inputs(20, 128, 512, seed=4)
    c, run = decode.run_decode_emulated(SWAP_AB.with_config(1, 1, 1), a, b, stages=2)
    assert np.array_equal(c, sm100.reference_bf16(a, b)) and not run.warnings


# A in a ring of its own (Config.a_stages): B's ring deeper; every phase of both rings comes round.
A_RING = [(Config(1, 1, 4, a_stages=2), 64, 128, 2048, 2), (Config(1, 1, 2, a_stages=3), 16, 64, 2048, 5),
          (Config(2, 2, 2, a_stages=2), 128, 256, 4096, 3), (Config(2, 2, 1, a_stages=3), 256, 128, 2048, 4),
          (Config(1, 1, 1, a_stages=2), 20, 64, 1024, 2), (Config(1, 1, 4, a_stages=4), 64, 64, 4096, 2),
          (Config(2, 2, 1, a_stages=5), 256, 128, 2560, 2)]
# K shorter than either ring: fewer steps than stages (the cluster's K split with one step each)
A_RING_SHORT = [(Config(2, 2, 2, a_stages=3), 128, 128, 256, 2), (Config(1, 1, 4, a_stages=4), 40, 64, 512, 3)]


@pytest.mark.parametrize("cfg,m,n,k,stages", A_RING, ids=lambda v: f"kb{v.kb}a{v.a_stages}w{v.consumers}s{v.split}"
                         if isinstance(v, Config) else str(v))
def test_a_ring_of_its_own_in_the_emulator(cfg, m, n, k, stages, monkeypatch):
    """Under the strict rules, bit for bit, with B's ring of `stages` and A's of a_stages, each phase reused."""
    from bwlab.gemm import sm100
    monkeypatch.setenv("BWLAB_BACKEND", "emulated")
    r = SWAP_AB.with_config(cfg.consumers, cfg.split, cfg.kb, a_stages=cfg.a_stages)
    assert k // (64 * cfg.kb * cfg.split) >= 2 * max(stages, cfg.a_stages)
    a, b = sm100.example_inputs(m, n, k, seed=m + 7)
    c, run = decode.run_decode_emulated(r, a, b, stages=stages)
    assert np.array_equal(c, sm100.reference_bf16(a, b))
    assert not run.warnings, run.warnings


@pytest.mark.parametrize("cfg,m,n,k,stages", A_RING_SHORT, ids=["s2-one-step", "two-steps"])
def test_a_ring_of_its_own_with_k_shorter_than_the_rings(cfg, m, n, k, stages, monkeypatch):
    from bwlab.gemm import sm100
    monkeypatch.setenv("BWLAB_BACKEND", "emulated")
    r = SWAP_AB.with_config(cfg.consumers, cfg.split, cfg.kb, a_stages=cfg.a_stages)
    assert k // (64 * cfg.kb * cfg.split) < min(stages, cfg.a_stages)
    a, b = sm100.example_inputs(m, n, k, seed=m + 9)
    c, run = decode.run_decode_emulated(r, a, b, stages=stages)
    assert np.array_equal(c, sm100.reference_bf16(a, b)) and not run.warnings, run.warnings


def test_a_ring_of_its_own_frees_smem_for_b():
    r = SWAP_AB.with_config(1, 1, 4, a_stages=2)
    assert r.stage_bytes(64) == 4 * 64 * 128 and r.a_ring_bytes(64) == 2 * 4 * 64 * 128
    assert r.stages(64) == 5 and SWAP_AB.with_config(1, 1, 4).stages(64) == 3
    assert r.smem_bytes(64, 5) == 5 * 32768 + 65536 + decode.SMEM_SLACK
    assert r.build_defines(64)["DECODE_A_STAGES"] == 2
    with pytest.raises(ValueError, match="a_stages = 1"):
        Config(1, 1, 4, a_stages=1)
    with pytest.raises(ShapeError, match="beside A's own ring of 229376 bytes"):   # 28 x 8 KiB of A at M = 64
        decode._stages(SWAP_AB.with_config(1, 1, 1, a_stages=28), 64, 8192, None, decode.H100_SMEM_OPTIN)


# A shared by the two CTAs of a cluster (Config.a_share = 2): each multicasts every other box of A's stage
A_SHARE = [(Config(1, 1, 4, a_stages=3, a_share=2), 64, 256, 2048, 2),
           (Config(1, 1, 2, a_stages=2, a_share=2), 20, 128, 1024, 3),
           (Config(2, 1, 2, a_stages=4, a_share=2), 48, 256, 1024, 2)]


@pytest.mark.parametrize("cfg,m,n,k,stages", A_SHARE, ids=["m64", "m20", "w2"])
def test_a_shared_by_a_pair_in_the_emulator(cfg, m, n, k, stages, monkeypatch):
    from bwlab.gemm import sm100
    monkeypatch.setenv("BWLAB_BACKEND", "emulated")
    r = SWAP_AB.with_config(cfg.consumers, cfg.split, cfg.kb, a_stages=cfg.a_stages, a_share=2)
    assert r.cluster(m) == 2 and r.build_defines(m)["DECODE_A_SHARE"] == 2
    a, b = sm100.example_inputs(m, n, k, seed=m + 11)
    c, run = decode.run_decode_emulated(r, a, b, stages=stages)
    assert np.array_equal(c, sm100.reference_bf16(a, b)) and not run.warnings, run.warnings
    assert run.grid[0] == n // (64 * cfg.consumers)


def test_a_shared_by_a_pair_is_checked():
    for bad in (dict(a_share=2), dict(a_share=2, a_stages=2, kb=1), dict(a_share=3, a_stages=2),
                dict(a_share=2, a_stages=2, split=2), dict(a_share=2, a_stages=2, even=1)):
        kw = {"consumers": 1, "split": 1, "kb": 2, **bad}
        with pytest.raises(ValueError, match="a_share"):
            Config(**kw)
    with pytest.raises(ShapeError, match="N = 192 must be a positive multiple of 128"):
        SWAP_AB.with_config(1, 1, 2, a_stages=2, a_share=2).require_shape(16, 192, 1024)


# Each stage handed back as soon as the consumer's own wgmma on it are done (Config.early = 1, the table's choice at
# M <= 128): with the pair's remote arrivals (M split, A shared) and with K shorter than the rings.
EARLY = [(Config(2, 1, 2, msplit=2, early=1), 256, 128, 1024, 2), (Config(2, 1, 2, msplit=2, a_stages=3, early=1),
                                                                  128, 128, 2048, 2), (Config(1, 1, 4, a_stages=3, a_share=2, early=1),
                                                                    64, 256, 2048, 2),
         (Config(1, 1, 4, a_stages=4, early=1), 40, 64, 512, 3), (Config(2, 2, 1, a_stages=5, early=1), 256, 128, 2560, 2)]


@pytest.mark.parametrize("cfg,m,n,k,stages", EARLY, ids=["msplit", "msplit-a-ring", "a-share", "short-k", "m256"])
def test_early_hand_back_in_the_emulator(cfg, m, n, k, stages, monkeypatch):
    from dataclasses import replace
    from bwlab.gemm import sm100
    monkeypatch.setenv("BWLAB_BACKEND", "emulated")
    r = replace(SWAP_AB, table=tuple((mt, cfg) for mt, _ in SWAP_AB.table))
    assert r.build_defines(m)["DECODE_EARLY_RELEASE"] == 1
    a, b = sm100.example_inputs(m, n, k, seed=m + 13)
    c, run = decode.run_decode_emulated(r, a, b, stages=stages)
    assert np.array_equal(c, sm100.reference_bf16(a, b)) and not run.warnings, run.warnings


def test_early_hand_back_is_checked_and_chosen_where_it_won():
    with pytest.raises(ValueError, match="early = 2"):
        Config(1, 1, 4, early=2)
    assert [c.early for _, c in SWAP_AB.table] == [1, 1, 1, 1, 0]   # decode_probe_h200.txt, 26: slower at M = 256
    assert "DECODE_EARLY_RELEASE" not in SWAP_AB.build_defines(256)


def test_the_committed_stage_recording_parses_and_draws():
    rows = decode.decode_stage_rows()
    assert [r.m for r in rows] == [16, 64, 128]
    for r in rows:
        assert len(r.landed) >= 15 and r.bin_us == 2.0 and 4.0 < r.stream_tbps < 5.0 and 30 < r.back_to_back_us < 45
        # B's bytes landed add up to B (128 MiB over the bins, TB/s x 2 us), within the rounding of the recording
        assert sum(r.landed) * r.bin_us * 1e-6 * 1e12 == pytest.approx(8192 * 8192 * 2, rel=0.02)
    middle = {r.m: r.plateau_tbps / r.stream_tbps for r in rows}
    assert middle[16] > 0.97 and middle[64] > 0.95 and middle[128] < 0.9   # what notebook 08 says of the picture
    import matplotlib
    matplotlib.use("Agg")
    from bwlab.gemm.pictures import plot_decode_landing
    ax = plot_decode_landing(rows)
    assert len(ax.patches) == 3 and len(ax.get_lines()) == 1 and "stream" in ax.get_legend().get_texts()[-1].get_text()


def test_the_stage_stamps_build_records_every_stage_between_its_ctas_clock_stamps(monkeypatch):
    """docs/results/decode_stage_probe.py's build: each stage's clock64 after its CTA's words (decode.CTA_WORDS
    each: %globaltimer at start, first and last stage, end; the SM; clock64 at start and end), in order and
    between the CTA's two clock stamps, and C as without the stamps."""
    from bwlab.gemm import sm100
    monkeypatch.setenv("BWLAB_BACKEND", "emulated")
    m, n, k = 64, 256, 2048
    a, b = sm100.example_inputs(m, n, k, seed=3)
    c, run = decode.run_decode_emulated(SWAP_AB, a, b, stages=2, stamps=True)
    assert np.array_equal(c, sm100.reference_bf16(a, b)) and not run.warnings
    ctas, iters = SWAP_AB.grid(m, n)[0], k // (64 * SWAP_AB.config(m).kb)
    head = decode.STAMP_WORDS + decode.CTA_WORDS * ctas
    per = run.stamps[decode.STAMP_WORDS:head].reshape(ctas, decode.CTA_WORDS).astype(np.int64)
    clk = run.stamps[head:head + ctas * iters].reshape(ctas, iters).astype(np.int64)
    assert (per[:, 0] < per[:, 1]).all() and (per[:, 1] <= per[:, 2]).all() and (per[:, 2] <= per[:, 3]).all()
    assert sorted(per[:, 4]) == sorted(set(per[:, 4]))   # each CTA on an SM of its own
    for i in range(ctas):
        assert per[i, 5] <= clk[i, 0] and (np.diff(clk[i]) >= 0).all() and clk[i, -1] <= per[i, 6]
