"""The stage 3 teaching kernels: they compile, their runners refuse what the kernels cannot run before
any GPU call, descriptor edits reach the model, the widgets offer legal values, and on a GPU the
teaching kernels agree with the model."""
import numpy as np
import pytest

from bwlab import umma
from bwlab.lab import TeachingKernel
from bwlab.umma.runner import require_teach_umma, require_teach_wgmma

WG = umma.WgmmaCase("f16", 64, 64, "K", "128B", "K", "128B")
UM = umma.UmmaCase("f16", "f32", 128, 64, 64, b_base=16384)


@pytest.mark.parametrize("file,arch,kernel", [("teach_wgmma.cu", "sm_90a", "teach_wgmma"),
                                              ("teach_umma.cu", "sm_100a", "teach_umma")])
def test_teaching_kernels_compile(file, arch, kernel):
    k = TeachingKernel(file)
    assert k.targets == (arch,)
    c = k.compile(arch)
    assert c.kernels() == [kernel]
    ptx = c.ptx_of(kernel)
    for instr in (("wgmma.fence", "wgmma.mma_async", "wgmma.commit_group", "wgmma.wait_group") if arch == "sm_90a" else
                  ("tcgen05.alloc", "tcgen05.mma", "tcgen05.commit", "mbarrier.try_wait", "tcgen05.ld",
                   "tcgen05.dealloc")):
        assert instr in ptx, instr


def test_teaching_kernels_stay_short():
    for f in ("teach_wgmma.cu", "teach_umma.cu"):
        assert len(TeachingKernel(f).text.splitlines()) < 100


def test_teach_runner_argument_checks():
    ad, bd = require_teach_wgmma(WG)
    assert np.array_equal(ad, WG.descriptors()[0])
    for bad in (umma.WgmmaCase("bf16", 64, 64, "K", "128B", "K", "128B"),
                umma.WgmmaCase("f16", 128, 64, "K", "128B", "K", "128B"),
                umma.WgmmaCase("f16", 64, 64, "MN", "128B", "K", "128B"),
                umma.WgmmaCase("f16", 64, 64, "K", "128B", "K", "128B", accumulate=True)):
        with pytest.raises(ValueError):
            umma.run_teach_wgmma(bad)               # refused before any GPU call
    with pytest.raises(ValueError, match="one A and one B descriptor per K step"):
        umma.run_teach_wgmma(WG, descriptors=(ad[:2], bd))
    with pytest.raises(ValueError, match="SMEM buffer"):
        umma.run_teach_wgmma(umma.WgmmaCase("f16", 64, 256, "K", "128B", "K", "128B", b_base=32768))
    with pytest.raises(TypeError):
        umma.run_teach_wgmma(UM)
    (ad, bd), idesc = require_teach_umma(UM)
    assert idesc == UM.idesc == 0x08100010
    with pytest.raises(ValueError):
        umma.run_teach_umma(umma.UmmaCase("tf32", "f32", 128, 64, 32, "K", "128B", "K", "128B", b_base=16384))
    with pytest.raises(ValueError, match="32 bits"):
        umma.run_teach_umma(UM, idesc=1 << 32)
    with pytest.raises(ValueError, match="SMEM buffer"):
        umma.run_teach_umma(umma.UmmaCase("f16", "f32", 128, 256, 64))


def test_descriptor_edits_reach_the_model():
    ad, bd = WG.descriptors()
    sbo = umma.edit_descs(ad, "sm90", stride_byte_offset=512)
    assert [umma.decode_smem_desc(int(d), "sm90").stride_byte_offset for d in sbo] == [512] * 4
    assert [umma.decode_smem_desc(int(d), "sm90").start_address for d in sbo] == [0, 32, 64, 96]
    r = WG.check(WG.model(descriptors=(sbo, bd)))
    assert not r.ok and r.first.where.startswith("D[m=8][n=0]") and "look at A" in r.hint
    # LBO is unused in a swizzled K-major layout: the same D
    assert WG.check(WG.model(descriptors=(ad, umma.edit_descs(bd, "sm90", leading_byte_offset=4096)))).ok
    wrong = umma.make_instr_desc("f16", "f16", "f32", 128, 64, "K", "MN")
    r = UM.check(UM.model(idesc=wrong))
    assert not r.ok and "instruction descriptor" in r.hint


def test_widgets_offer_legal_values_only():
    pytest.importorskip("ipywidgets")
    box = umma.descriptor_widget()
    c = {w.description: w for w in box.children[0].children}
    for major in umma.MAJORS:
        c["major"].value = major
        for sw in c["swizzle"].options:
            c["swizzle"].value = sw
            for dt in c["dtype"].options:
                c["dtype"].value = dt
                for mn in c["tile MN"].options:
                    for kk in c["tile K"].options:
                        c["tile MN"].value, c["tile K"].value = mn, kk
                        for kb in c["k_block"].options:
                            for base in c["base"].options:
                                umma.tile_desc(major, sw, dt, (mn, kk), kb, base)     # never raises
    box = umma.instr_desc_widget()
    c = {w.description: w for w in box.children[0].children}
    for ab in c["A, B"].options:
        c["A, B"].value = ab
        for cg in (1, 2):
            c["cta_group"].value = cg
            for d in c["D"].options:
                c["D"].value = d
                for M in c["M"].options:
                    c["M"].value = M
                    for N in c["N"].options:
                        umma.make_instr_desc(ab, ab, d, M, N, cta_group=cg)          # never raises


@pytest.mark.sm90
def test_teach_wgmma_on_gpu_matches_the_model():
    assert WG.check(umma.run_teach_wgmma(WG)).ok
    ad, bd = WG.descriptors()
    bad = (umma.edit_descs(ad, "sm90", stride_byte_offset=512), bd)
    assert WG.compare(WG.model(descriptors=bad), umma.run_teach_wgmma(WG, descriptors=bad)).ok


@pytest.mark.sm100
def test_teach_umma_on_gpu_matches_the_model():
    assert UM.check(umma.run_teach_umma(UM)).ok
