"""Where bwlab finds cuda_src/ and docs/results/ in a checkout, and the BWLAB_CUDA_SRC override.
(The wheel's copies under bwlab/_data/ are checked by tests/test_wheel.py, in an installed wheel.)"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bwlab import compile as bc, results
from bwlab.package_data import data_dir

ROOT = Path(__file__).resolve().parent.parent


def test_a_checkout_reads_its_own_folders():
    assert data_dir("cuda_src") == ROOT / "cuda_src"
    assert data_dir("results") == ROOT / "docs" / "results"
    if not os.environ.get("BWLAB_CUDA_SRC"):
        assert bc.CUDA_SRC == ROOT / "cuda_src"
    assert results.RECORDINGS == ROOT / "docs" / "results" / "recordings"


def test_unknown_folder_is_named():
    with pytest.raises(KeyError, match="ships no data folder 'notes'"):
        data_dir("notes")


def test_cuda_src_override(tmp_path):
    (tmp_path / "mine.cu").write_text("extern \"C\" __global__ void k() {}\n")
    env = dict(os.environ, BWLAB_CUDA_SRC=str(tmp_path), PYTHONPATH=str(ROOT))
    code = "from bwlab import compile as bc; print(bc.CUDA_SRC); print(bc._resolve('mine'))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == [str(tmp_path), str(tmp_path / "mine.cu")]


def test_missing_source_folder_says_so(tmp_path):
    env = dict(os.environ, BWLAB_CUDA_SRC=str(tmp_path / "absent"), PYTHONPATH=str(ROOT))
    code = "from bwlab import compile as bc; bc._resolve('teach_tma')"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode != 0 and "the CUDA source folder" in r.stderr and "does not exist" in r.stderr, r.stderr
