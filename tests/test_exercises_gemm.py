"""Notebook 07's exercise checks (bwlab.gemm.exercises): the model answers pass, recognised mistakes are
named, and the parity reference agrees with the ladder's kernels as written."""
import re

import pytest

from bwlab.gemm import exercises as ex
from bwlab.gemm import ladder, occupancy
from bwlab.hw.mbarrier import Mbarrier
from bwlab.source import source_text
from bwlab.util import ceil_div
from exercise_cells import not_yet


def test_stage_bytes(capsys):
    ex.check_stage_bytes(lambda bm, bn: (bm + bn) * 128, hidden=True)
    assert "correct: bytes of one stage" in capsys.readouterr().out
    assert "counts elements" in not_yet(ex.check_stage_bytes, lambda bm, bn: (bm + bn) * 64)
    assert "A slice alone" in ex._explain_stage((128, 256), 128 * 128, None)
    assert ex.stage_bytes(128, 256) == ladder.step("s3").stage_bytes


def by_hand(smem, regs, threads):
    warps = ceil_div(threads, 32)
    per_warp = ceil_div(regs * 32, 256) * 256
    return min(233472 // smem, 65536 // (per_warp * warps), 32, 64 // warps)


def test_ctas_per_sm(capsys):
    ex.check_ctas_per_sm(by_hand, hidden=True)
    assert "correct: CTAs per SM — 8 cases agree" in capsys.readouterr().out
    # the shown cases are the compiled steps 1 and 2, as the notebook prints them
    assert [by_hand(*c) for c in ex.occupancy_cases()] == [occupancy.ctas_per_sm(n).ctas for n in ("s1", "s2")]
    unrounded = lambda s, r, t: min(233472 // s, 65536 // (r * 32 * ceil_div(t, 32)), 32, 64 // ceil_div(t, 32))  # noqa: E731
    assert "units of 256" in not_yet(ex.check_ctas_per_sm, unrounded, hidden=True)
    smem_only = lambda s, r, t: 233472 // s  # noqa: E731
    assert "what SMEM allows" in not_yet(ex.check_ctas_per_sm, smem_only)
    no_caps = lambda s, r, t: min(233472 // s, 65536 // (ceil_div(r * 32, 256) * 256 * ceil_div(t, 32)))  # noqa: E731
    assert "at most 32 CTAs and 64 warps" in not_yet(ex.check_ctas_per_sm, no_caps, hidden=True)


@pytest.mark.parametrize("stages", [2, 3, 4, 6])
def test_producer_parity_is_the_kernels(stages):
    """The reference agrees with step 3's producer, `(kt / STAGES + 1) & 1` for kt >= STAGES (no wait
    before: the parity passes on a fresh barrier), and with step 2's `(prev / STAGES) & 1` for the load
    of slice prev + STAGES."""
    s3 = source_text("gemm_sm90/s3_warp_specialized.cu")
    s2 = source_text("gemm_sm90/s2_pipeline.cu")
    assert "if (kt >= STAGES && !mbarrier_wait(&empty[s], (kt / STAGES + 1) & 1," in s3
    assert re.search(r"mbarrier_wait\(&empty\[ps\], \(prev / STAGES\) & 1,", s2)
    for kt in range(40):
        p = ex.producer_parity(kt, stages)
        if kt >= stages:
            assert p == (kt // stages + 1) & 1
            assert p == ((kt - stages) // stages) & 1          # step 2's form, prev = kt - STAGES
        else:
            assert Mbarrier(1).try_wait_parity(p)


def test_producer_parity_check(capsys):
    ex.check_producer_parity(lambda kt, st: (kt // st + 1) % 2, hidden=True)
    assert "correct: the producer's parity" in capsys.readouterr().out
    assert "the consumers wait on" in not_yet(ex.check_producer_parity, lambda kt, st: (kt // st) & 1)


def test_flop_per_sm_cycle(capsys):
    ex.check_flop_per_sm_cycle(lambda bm, bn, c, n: n * bm * bn * 2 * 64 / c, hidden=True)
    ex.check_flop_per_sm_cycle(lambda bm, bn, c, n: (2 * 64) / c * bm * bn * n)     # another order
    assert capsys.readouterr().out.count("correct: FLOP per SM cycle") == 2
    msg = not_yet(ex.check_flop_per_sm_cycle, lambda bm, bn, c, n: 2 * bm * bn * 64 / c)
    assert "one CTA's" in msg and "flop_per_sm_cycle" not in msg.split(":")[0]
    assert "2 FLOP" in not_yet(ex.check_flop_per_sm_cycle, lambda bm, bn, c, n: n * bm * bn * 64 / c)
    assert "no answer yet" in not_yet(ex.check_flop_per_sm_cycle, None)
