"""The GPU truth both bit-exact arithmetic tests read: the emulator corpus's H200 recordings, each listed kernel's
outputs recomputed from its inputs (tests/test_hw_floats.py, tests/test_hw_ints.py)."""
import numpy as np
import pytest

from bwlab.hw import ints as I


_CORPUS = {}


def _corpus():
    import importlib.util
    import os
    import sys
    from pathlib import Path
    root = Path(os.environ.get("BWLAB_CORPUS_ROOT", Path(__file__).resolve().parents[1]))
    pkg = root / "bwlab" / "checks" / "emu_corpus"
    rec = root / "tests" / "data" / "emu_corpus"
    if not (pkg / "__init__.py").exists() or not rec.exists():
        pytest.skip("no GPU corpus recordings in this checkout")
    if "C" not in _CORPUS:
        # that checkout's corpus package, loaded under a name inside bwlab.checks: its own modules come from its
        # folder, its relative imports of bwlab (bwlab.compile) from the bwlab being tested
        name = f"bwlab.checks._emu_corpus_for_{Path(__file__).stem}"
        spec = importlib.util.spec_from_file_location(name, pkg / "__init__.py", submodule_search_locations=[str(pkg)])
        C = importlib.util.module_from_spec(spec)
        sys.modules[name] = C
        spec.loader.exec_module(C)
        _CORPUS["C"] = C
    return _CORPUS["C"], rec


def _recording(C, chapter, rec):
    if chapter not in _CORPUS:
        _CORPUS[chapter] = C.load_recording(chapter, rec)
    return _CORPUS[chapter]


def _check_against_gpu(name, fn):
    C, rec = _corpus()
    k = C.BY_NAME[name]
    r = _recording(C, k.chapter, rec)[name]
    if r.get("error") or r["digest"] != k.inputs_digest():
        pytest.skip(f"{name}: recording failed or stale")
    ins = [a.data for a in k.args if isinstance(a, C.In)]
    want = fn(*ins)
    g = r["outputs"][0]
    g = g.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[g.dtype.itemsize]).reshape(-1, len(want))
    full = (1 << (8 * g.dtype.itemsize)) - 1
    for j, w in enumerate(want):
        if w is None:
            continue
        w = np.asarray(w).astype(np.uint64) & np.uint64(full)
        bad = np.nonzero(w != g[:, j].astype(np.uint64))[0]
        assert not len(bad), (f"{name} output {j}: {len(bad)} of {len(w)} differ from the GPU, first at "
                              f"{bad[0]}: gpu {hex(int(g[bad[0], j]))} ours {hex(int(w[bad[0]]))}")

def u32(x):
    return np.ascontiguousarray(x).view(np.uint32)


def u64(x):
    return np.ascontiguousarray(x).view(np.uint64)


def u16(x):
    return np.ascontiguousarray(x).view(np.uint16)


def sext(bits, w, to=64):
    v = I.to_signed(bits, w).astype(np.int64)
    return v.view(np.uint64) & np.uint64((1 << to) - 1 if to < 64 else 0xFFFFFFFFFFFFFFFF)


def low(x, w):
    return np.asarray(x).astype(np.uint64) & np.uint64((1 << w) - 1)
