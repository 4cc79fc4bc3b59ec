"""The emulator against the GPU: every kernel of the corpus (bwlab/checks/emu_corpus/, sources in
cuda_src/corpus/) runs in bwlab.emu with the inputs it had on the GPU, and must reproduce the
recording in its comparison kind — or be listed in KNOWN_DIFFERENCES, which is checked strictly both
ways (a listed kernel that now matches fails here, so the list only shrinks).

Re-record on a GPU: `python -m bwlab.validate emu-corpus`; the table: `... emu-corpus --compare`.
"""
from __future__ import annotations

import json
from functools import lru_cache

import numpy as np
import pytest

from bwlab.checks import emu_corpus as ec


@lru_cache(maxsize=None)
def _recording(chapter: str) -> dict:
    return ec.load_recording(chapter)


def _headers_or_skip(chapter: str) -> None:
    if chapter in ec.NEEDS_CUDA_HEADERS:
        try:
            ec.cuda_include_dirs()
        except FileNotFoundError as e:
            pytest.skip(str(e))


@pytest.mark.parametrize("name", [k.name for k in ec.KERNELS])
def test_kernel_matches_gpu_recording(name):
    k = ec.BY_NAME[name]
    _headers_or_skip(k.chapter)
    rec = _recording(k.chapter).get(name)
    assert rec is not None, f"{name} has no recording: re-record on a GPU (python -m bwlab.validate emu-corpus)"
    status, detail = ec.emulator_result(k, rec)
    assert status not in ("stale", "error"), f"{name}: {detail}"
    if name in ec.KNOWN_DIFFERENCES:
        assert status != "match", (f"{name} now matches its GPU recording: remove it from "
                                   f"KNOWN_DIFFERENCES ({ec.KNOWN_DIFFERENCES[name]!r})")
    else:
        assert status == "match", f"{name}: {status}: {detail}"


def test_corpus_is_complete():
    """At least 150 kernels over every chapter; every kernel of every source file is in the manifest."""
    assert len(ec.KERNELS) >= 150
    for chapter in ec.CHAPTERS:
        listed = {k.name for k in ec.KERNELS if k.chapter == chapter}
        assert listed, f"chapter {chapter} has no kernels"
        src = (ec.SOURCES / f"{chapter}.cu").read_text()
        import re
        assert set(re.findall(r'extern "C" __global__ void (?:__(?:cluster_dims|launch_bounds)__\([^)]*\) )*(\w+)\(', src)) == listed, chapter


def test_known_differences_name_kernels_with_reasons():
    for name, why in ec.KNOWN_DIFFERENCES.items():
        assert name in ec.BY_NAME, f"KNOWN_DIFFERENCES names {name!r}, which is not in the corpus"
        assert isinstance(why, str) and len(why) > 10, name


def test_recordings_say_where_they_came_from():
    h = json.loads((ec.RECORDINGS / "header.json").read_text())
    for key in ("gpu", "nvidia_smi", "cuda_runtime", "cupy", "date", "nvrtc"):
        assert h.get(key), key
    assert "emu" not in h["gpu"], "the committed recordings must come from a GPU, not a dry run"


def test_only_entry_keeps_one_kernel_and_the_functions():
    ptx = ec.compiled("control").ptx
    one = ec.only_entry(ptx, "ctl_fib_recursive")
    assert ".entry ctl_fib_recursive" in one and ".entry ctl_switch" not in one
    assert one.count(".func") == ptx.count(".func")


def _k(cmp, outs=()):
    return ec.Kernel("t", "float", tuple(outs), cmp=cmp)


def test_comparisons_can_fail():
    """Each comparison kind rejects a wrong result (no kind passes everything)."""
    a = np.array([1.0, 2.0, np.nan, -0.0], np.float32)
    rec = {"outputs": [a], "printf": "w0 x\nw1 y\nw0 z\n"}
    assert ec.compare(_k(ec.Bytes()), rec, {"outputs": [a.copy()]}) is None
    b = a.copy(); b[1] = np.nextafter(np.float32(2), np.float32(3))  # noqa: E702
    assert "[1]" in ec.compare(_k(ec.Bytes()), rec, {"outputs": [b]})
    assert ec.compare(_k(ec.Within(ulp=2)), rec, {"outputs": [b]}) is None
    c = a.copy(); c[3] = 0.0  # noqa: E702 - the sign of zero is exact even in Within
    assert ec.compare(_k(ec.Within(ulp=2)), rec, {"outputs": [c]})
    d = a.copy(); d[0] = 1.01  # noqa: E702
    assert ec.compare(_k(ec.Within(ulp=2)), rec, {"outputs": [d]})
    assert ec.compare(_k(ec.Printf()), rec, {"outputs": [], "printf": "w1 y\nw0 x\nw0 z\n"}) is None
    assert ec.compare(_k(ec.Printf()), rec, {"outputs": [], "printf": "w0 y\nw1 x\nw0 z\n"})
    assert ec.compare(_k(ec.Sorted((0,))), rec, {"outputs": [a[::-1].copy()]}) is None
    assert ec.compare(_k(ec.AnyOf((1, 2))), rec, {"outputs": [np.array([3], np.int32)]})


def test_order_checks_accept_an_order_and_reject_a_non_order():
    k = ec.BY_NAME["atom_exch_chain"]
    n = 64
    order = np.random.default_rng(0).permutation(n)
    old = np.empty(n, np.int32)
    cur = -5
    for t in order:
        old[t], cur = cur, t + 100
    assert ec._check_exch_chain([np.array([cur], np.int32), old], k) is None
    old2 = old.copy(); old2[[0, 1]] = old2[[1, 0]]  # noqa: E702
    assert ec._check_exch_chain([np.array([cur], np.int32), old2], k) is not None or old[0] == old[1]
    kf = ec.BY_NAME["atom_float_order"]
    v = kf.args[1].data
    acc = np.float32(1.0)
    oldf = np.empty(len(v), np.float32)
    for t in order:
        oldf[t], acc = acc, np.float32(acc + v[t])
    assert ec._check_float_order([np.array([acc], np.float32), oldf], kf) is None
    assert ec._check_float_order([np.array([acc * 2], np.float32), oldf], kf) is not None
    oldf[3] = oldf[3] * 3  # one thread saw a value no order produces
    assert ec._check_float_order([np.array([acc], np.float32), oldf], kf) is not None


def test_racy_kernel_gives_more_than_one_outcome_over_seeds():
    """The seeded scheduler explores interleavings: the last-writer race ends differently under different
    seeds (the H200 gave 2, 3 and 4 over its 20 runs), each outcome one the hardware allows."""
    k = ec.BY_NAME["sched_racy_last_writer"]
    seen = {int(ec.run_kernel(k, "emu", seed=s)["outputs"][0][0]) for s in k.cmp.seeds}
    assert seen <= set(k.cmp.outcomes) and len(seen) >= 2, seen
    gpu = _recording("sched")["sched_racy_last_writer"]["runs"]
    assert set(gpu) <= set(k.cmp.outcomes) and len(gpu) == k.cmp.gpu_runs


def test_dry_run_never_overwrites_the_recordings():
    with pytest.raises(SystemExit):
        ec.validate_main(["--dry-run-emulator", "--out-dir", str(ec.RECORDINGS)])
