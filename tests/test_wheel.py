"""bwlab as a user installs it: a wheel built from this repository, installed (not editable) with its
CUDA 12 extra into a fresh virtual environment outside the checkout, must

* carry every bwlab package, every file of cuda_src/ and the results the notebooks read;
* compile a teaching kernel with NVRTC for sm_90a from the CUDA sources it carries;
* run a stage in the model tier against a recording it carries;
* execute a notebook headless (nbclient, a kernel of that environment);
* install its command lines (bwlab-validate, ...).

The wheel is built once per run from a copy of the files it is made of (so no build/ is left in the
checkout), the environment made once; pip's cache is shared with every other install on the machine.
About 25 s on 2 cores with a warm pip cache (most of it installing CuPy into the new environment):
`make wheel-test` runs it, `make test` does not.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# What setup.py builds the wheel from.
BUILD_INPUTS = ("pyproject.toml", "setup.py", "README.md", "bwlab", "cuda_src", "docs/results")
NOTEBOOK = "00_orientation.ipynb"      # compiles hello_bulk.cu for sm_90a/sm_100a, replays two recordings


def _run(cmd, cwd, env=None, timeout=900):
    r = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))} exited {r.returncode}\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    return r.stdout


def _clean_env(cache: Path | None = None) -> dict:
    """This process's environment less what would point the installed bwlab back at the checkout; with
    `cache`, an empty NVRTC build cache there (so the kernels are really compiled)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "BWLAB_CUDA_SRC", "VIRTUAL_ENV", "PYTHONHOME", "BWLAB_CACHE")}
    env["BWLAB_BACKEND"] = "model"
    if cache is not None:
        env["BWLAB_CACHE"] = str(cache)
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("src")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in BUILD_INPUTS:
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=ignore)
        else:
            shutil.copy2(ROOT / name, src / name)
    dist = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", dist, "."], cwd=src, env=_clean_env())
    wheels = list(dist.glob("bwlab-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh environment with the wheel, its cuda12 extra, and what executing a notebook needs."""
    home = tmp_path_factory.mktemp("venv")
    _run([sys.executable, "-m", "venv", home / "env"], cwd=home)
    py = home / "env" / "bin" / "python"
    _run([py, "-m", "pip", "install", "-q", f"{wheel}[cuda12]", "nbclient", "nbformat", "ipykernel"],
         cwd=home, env=_clean_env())
    return py


def test_wheel_carries_packages_sources_and_recordings(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    want = {p.relative_to(ROOT).as_posix() for p in (ROOT / "bwlab").rglob("*.py")}
    want |= {"bwlab/_data/cuda_src/" + p.relative_to(ROOT / "cuda_src").as_posix()
             for p in (ROOT / "cuda_src").rglob("*") if p.suffix in (".cu", ".cuh")}
    results = ROOT / "docs" / "results"
    want |= {f"bwlab/_data/results/{p.name}" for p in results.glob("*.txt")}
    want |= {f"bwlab/_data/results/recordings/{p.name}" for p in (results / "recordings").glob("*.npz")}
    # the Gluon / CuTe DSL twins' PTX as recorded (bwlab.bridge), in place
    want |= {p.relative_to(ROOT).as_posix() for p in (ROOT / "bwlab" / "bridge" / "recorded").glob("*")
             if p.suffix in (".ptx", ".json")}
    missing = sorted(want - names)
    assert not missing, f"the wheel lacks {len(missing)} files: {missing[:20]}"
    # Nothing beyond them but the wheel's metadata.
    extra = sorted(n for n in names - want if ".dist-info/" not in n)
    assert not extra, f"the wheel holds unexpected files: {extra[:20]}"


SMOKE = textwrap.dedent("""
    import json, sys, sysconfig
    from pathlib import Path
    import bwlab
    from bwlab import compile as bc, device
    from bwlab.results import RECORDINGS, load_recording
    from bwlab.checks.record_tma import replay
    from bwlab.tma import TensorMap, TmaLoad
    from bwlab.checks.record_tma import tma_gmem

    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    out = {"bwlab": bwlab.__file__, "cuda_src": str(bc.CUDA_SRC), "recordings": str(RECORDINGS), "site": str(site),
           "tier": device.tier("tma")}
    built = bc.compile_cuda("teach_tma", arch="sm_90a", use_cache=False)
    out["kernels"] = built.kernels()
    out["ptx_has_tma_load"] = "cp.async.bulk.tensor.2d" in built.ptx
    out["cubin_bytes"] = len(built.cubin)
    rec = load_recording("tma_teach")
    out["replay"] = str(replay(rec))
    out["replay_ok"] = bool(replay(rec).ok)
    case = TmaLoad(tma_gmem(), TensorMap(dtype="bfloat16", global_shape=(80, 48), box_shape=(32, 16)), (32, 16))
    out["model_shape"] = list(case.model().shape)
    out["check_recorded"] = bool(case.check(rec["smem_plain"], source=rec.label).ok)
    print(json.dumps(out))
""")


def test_installed_wheel_compiles_runs_a_stage_and_reads_recordings(venv, tmp_path):
    got = json.loads(_run([venv, "-c", SMOKE], cwd=tmp_path, env=_clean_env(tmp_path / "cache")).strip().splitlines()[-1])
    site = Path(got["site"])
    for key in ("bwlab", "cuda_src", "recordings"):
        assert Path(got[key]).resolve().is_relative_to(site), f"{key} came from {got[key]}, not the wheel in {site}"
        assert not Path(got[key]).resolve().is_relative_to(ROOT), f"{key} came from the checkout: {got[key]}"
    assert got["tier"] == "model"
    assert got["ptx_has_tma_load"] and got["cubin_bytes"] > 0 and got["kernels"], got
    assert got["replay_ok"], got["replay"]
    assert got["check_recorded"], got


def test_installed_scripts_run(venv, tmp_path):
    """The [project.scripts] command lines exist in the environment and run: --help, and a GPU command
    on a machine in the model tier says there is nothing to run (exit 3)."""
    tomllib = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    bindir = venv.parent
    for name in scripts:
        assert (bindir / name).is_file(), f"pip installed no {name} script into {bindir}"
    env = _clean_env(tmp_path / "cache")
    assert "usage: python -m bwlab.validate tma" in _run([bindir / "bwlab-validate", "tma", "--help"], tmp_path, env)
    r = subprocess.run([bindir / "bwlab-validate", "tma", "--cases", "1"], cwd=tmp_path, env=env,
                       capture_output=True, text=True)
    assert r.returncode == 3 and "model tier here" in r.stdout, (r.returncode, r.stdout, r.stderr)


def test_installed_wheel_executes_a_notebook(venv, tmp_path):
    """Every cell runs (nbclient raises on an error in a cell not tagged raises-exception), in a kernel
    that imports the wheel's bwlab: a cell appended to the copy prints where bwlab came from."""
    shutil.copy2(ROOT / "notebooks" / NOTEBOOK, tmp_path / NOTEBOOK)
    script = textwrap.dedent(f"""
        import nbformat
        from nbclient import NotebookClient
        nb = nbformat.read({NOTEBOOK!r}, as_version=4)
        nb.cells.append(nbformat.v4.new_code_cell("import bwlab, sys; print(bwlab.__file__, sys.executable)"))
        NotebookClient(nb, timeout=300, kernel_name="python3", resources={{"metadata": {{"path": "."}}}}).execute()
        print("cells", sum(c.cell_type == "code" for c in nb.cells))
        print("".join(o.get("text", "") for o in nb.cells[-1].outputs).strip())   # a stream may come in pieces
    """)
    out = _run([venv, "-c", script], cwd=tmp_path, env=_clean_env(tmp_path / "cache")).strip().splitlines()
    print("\n".join(out))
    bwlab_file, kernel_python = out[-1].split()
    assert Path(kernel_python).parent == venv.parent, f"the notebook ran in {kernel_python}, not {venv}"
    assert not Path(bwlab_file).resolve().is_relative_to(ROOT), f"the notebook imported the checkout's bwlab: {bwlab_file}"
    assert "site-packages" in Path(bwlab_file).parts, bwlab_file
