"""Code that runs only on a GPU, checked here without one.

Much of bwlab runs only in the hardware tier (the GPU runs beside an exercise's grade, the runners' CuPy
side, the device scripts under docs/results), and CI has no GPU. pyflakes (tests/test_undefined_names.py)
finds a name nothing defines; this file finds what a refactor breaks in a way pyflakes cannot see:

* a function-level `from bwlab.x import y` whose module or name is gone (the import runs only when the
  function does);
* `module.name` where `module` is a bwlab module that has no `name` (a helper renamed or moved);
* a call of a bwlab function or class whose arguments no longer fit its signature (a keyword renamed, a
  parameter added), including the function that `bwlab.lab.run_edited` / `bwlab.sandbox.run_isolated`
  hand their arguments to in the worker process.

The check reads each file's syntax and resolves names through the imported package; it runs nothing of
the code it reads. What it cannot see (a dict key, an attribute of a returned object) is read by hand or
run with the GPU part faked, as the tests at the end of this file do.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# bwlab.bridge's CuTe DSL and Gluon files import cutlass / triton at module level: absent in CI
OPTIONAL = ("bwlab/bridge/cute_", "bwlab/bridge/gluon_")
_MISSING = object()
_FORWARDERS = {"run_edited": {"limit"}, "run_isolated": {"limit", "name", "start_timeout"}}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(mod: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _is_bwlab(name: str) -> bool:
    return name == "bwlab" or name.startswith("bwlab.")


class _Scan(ast.NodeVisitor):
    def __init__(self, where: str, mod: str, is_pkg: bool, names: dict, found: list):
        self.where, self.mod, self.is_pkg, self.found = where, mod, is_pkg, found
        self.scopes = [names]

    def say(self, node, text):
        line = f"{self.where}:{node.lineno}: {text}"
        if line not in self.found:      # a call's callee is resolved for the call and again as an attribute
            self.found.append(line)

    # ---- imports: bound where they are written, checked when they name bwlab -------------------------
    def bind(self, scope: dict, node, ambiguous: set) -> None:
        pairs = []
        if isinstance(node, ast.Import):
            for a in node.names:
                try:
                    m = importlib.import_module(a.name)
                except Exception as e:
                    if _is_bwlab(a.name):
                        self.say(node, f"import {a.name}: {type(e).__name__}: {e}")
                    continue
                pairs.append((a.asname, m) if a.asname else (a.name.split(".")[0], importlib.import_module(
                    a.name.split(".")[0])))
        elif isinstance(node, ast.ImportFrom):
            src = _absolute(self.mod, self.is_pkg, node)
            try:
                m = importlib.import_module(src)
            except Exception as e:
                if _is_bwlab(src):
                    self.say(node, f"from {src} import ...: {type(e).__name__}: {e}")
                return
            for a in node.names:
                if a.name == "*":
                    continue
                try:
                    value = getattr(m, a.name)
                except AttributeError:
                    try:
                        value = importlib.import_module(f"{src}.{a.name}")
                    except ImportError:
                        if _is_bwlab(src):
                            self.say(node, f"from {src} import {a.name}: {src} has no {a.name}")
                        continue
                except Exception:            # a package whose attributes load libraries (CuPy without CUDA)
                    continue
                pairs.append((a.asname or a.name, value))
        for name, value in pairs:
            if name in scope and scope[name] is not value:
                ambiguous.add(name)          # bound two ways in one function (`import cupy as xp` / `emu as xp`)
            scope[name] = value

    def visit_FunctionDef(self, node):
        scope = dict(self.scopes[-1])
        args = node.args
        for a in args.posonlyargs + args.args + args.kwonlyargs + [x for x in (args.vararg, args.kwarg) if x]:
            scope.pop(a.arg, None)
        imports = []
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                scope.pop(sub.id, None)
            elif isinstance(sub, (ast.Import, ast.ImportFrom)):
                imports.append(sub)
        ambiguous: set = set()
        for sub in imports:
            self.bind(scope, sub, ambiguous)
        for name in ambiguous:
            scope.pop(name, None)
        self.scopes.append(scope)
        self.generic_visit(node)
        self.scopes.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    # ---- names: a bwlab module's attribute, a bwlab callable -----------------------------------------
    def value(self, expr):
        if isinstance(expr, ast.Name):
            return self.scopes[-1].get(expr.id, _MISSING)
        if isinstance(expr, ast.Attribute):
            base = self.value(expr.value)
            if isinstance(base, types.ModuleType) and _is_bwlab(base.__name__):
                if hasattr(base, expr.attr):
                    return getattr(base, expr.attr)
                try:
                    return importlib.import_module(f"{base.__name__}.{expr.attr}")
                except ImportError:
                    if isinstance(expr.ctx, ast.Load):
                        self.say(expr, f"{base.__name__}.{expr.attr} does not exist")
                    return _MISSING
        return _MISSING

    def visit_Attribute(self, node):
        self.value(node)
        # the chain's inner attributes are checked by value(); only the names inside calls etc. remain
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.Attribute, ast.Name)):
                self.visit(child)

    def bindable(self, fn, node, args, keywords) -> str | None:
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            return None
        try:
            sig.bind(*[None] * len(args), **{k.arg: None for k in keywords})
        except TypeError as e:
            return f"{e} (signature {getattr(fn, '__qualname__', fn)}{sig})"
        return None

    def visit_Call(self, node):
        fn = self.value(node.func)
        plain = not any(isinstance(a, ast.Starred) for a in node.args) and all(k.arg for k in node.keywords)
        if plain and fn is not _MISSING and callable(fn) and _is_bwlab(str(getattr(fn, "__module__", ""))):
            bad = self.bindable(fn, node, node.args, node.keywords)
            if bad:
                self.say(node, f"{ast.unparse(node.func)}(...): {bad}")
            drop = _FORWARDERS.get(getattr(fn, "__name__", ""))
            if drop is not None and fn.__module__ in ("bwlab.lab", "bwlab.sandbox") and node.args:
                inner = self.value(node.args[0])
                if inner is not _MISSING and callable(inner):
                    bad = self.bindable(inner, node, node.args[1:], [k for k in node.keywords if k.arg not in drop])
                    if bad:
                        self.say(node, f"{fn.__name__} hands {ast.unparse(node.args[0])} arguments that do not "
                                       f"fit: {bad}")
        self.generic_visit(node)


def _scan(paths, package: bool) -> list:
    """What fails in `paths`: package modules are imported (their globals are the scope); scripts and
    notebook sources are not run: every import written in them binds, wherever it is."""
    found: list = []
    for p in paths:
        where = str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(p)
        tree = ast.parse(p.read_text(), str(p))
        if package:
            mod = _module_name(p)
            try:
                names = dict(vars(importlib.import_module(mod)))
            except Exception as e:
                found.append(f"{where}: import {mod}: {type(e).__name__}: {e}")
                continue
            scan = _Scan(where, mod, p.name == "__init__.py", names, found)
        else:
            scan = _Scan(where, "__main__", False, {}, found)
            for node in ast.walk(tree):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    scan.bind(scan.scopes[0], node, set())
        scan.visit(tree)
    return found


def _package_files():
    return [p for p in sorted((ROOT / "bwlab").rglob("*.py"))
            if not str(p.relative_to(ROOT)).startswith(OPTIONAL)]


def test_package_calls_fit_their_callees():
    assert _scan(_package_files(), package=True) == []


def test_device_scripts_calls_fit_their_callees():
    assert _scan(sorted((ROOT / "docs" / "results").glob("*.py")), package=False) == []


def test_notebook_sources_calls_fit_their_callees():
    assert _scan(sorted((ROOT / "notebooks" / "src").glob("*.py")), package=False) == []


def test_the_check_finds_each_kind(tmp_path):
    bad = tmp_path / "gpu_only.py"
    bad.write_text(
        "from bwlab import device, lab\n"
        "from bwlab.gemm import runner\n"
        "def shown_on_a_gpu(kern):\n"
        "    from bwlab.gemm.no_such_module import x\n"
        "    from bwlab.gemm.runner import _check_status\n"
        "    runner._check_status(None)\n"
        "    device.tier('tma', 'hardware')\n"
        "    runner.try_kernel('s3', 128, 256, 512, kernl=kern)\n"
        "    lab.run_edited(runner.try_kernel, 's3', 128, 256, kernel=kern, limit=60)\n"
        "    runner.try_kernel('s3', *(128, 256, 512), kernel=kern)\n"       # starred: not judged
        "    return device.tier('tma') == 'hardware'\n")
    found = [f.split(": ", 1)[1] for f in _scan([bad], package=False)]
    assert len(found) == 6, found
    assert found[0].startswith("from bwlab.gemm.no_such_module import ...: ModuleNotFoundError")
    assert found[1] == "from bwlab.gemm.runner import _check_status: bwlab.gemm.runner has no _check_status"
    assert found[2] == "bwlab.gemm.runner._check_status does not exist"
    assert found[3].startswith("device.tier(...): too many positional arguments")
    assert found[4].startswith("runner.try_kernel(...): got an unexpected keyword argument 'kernl'")
    assert found[5].startswith("run_edited hands runner.try_kernel arguments that do not fit: missing a required "
                               "argument: 'k'")


# ---- GPU branches run here with the GPU part faked ---------------------------------------------------

def _call_in(source: Path, name: str) -> ast.Call:
    calls = [n for n in ast.walk(ast.parse(source.read_text()))
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name]
    assert len(calls) == 1, f"{source.name}: {len(calls)} calls of {name}"
    return calls[0]


def test_notebook_05_bandwidth_cell_runs_the_quick_protocol(monkeypatch):
    """Section 9 of notebook 05 runs the store benchmark on a GPU and shows the H100's report of the same
    command elsewhere: CUDA events, warm-up, the median of --repeat calls, the quick protocol. The
    benchmark's default became the sustained protocol (seconds-long blocks, --repeat unused), so the cell
    names its protocol. Its arguments are parsed here by the benchmark itself; nothing is launched."""
    from bwlab.checks import common, store
    argv = ast.literal_eval(_call_in(ROOT / "notebooks" / "src" / "05_tma_store.py", "bench_main").args[0])
    parsed = []

    class Parsed(Exception):
        pass

    def start(self, a):
        parsed.append(self.parser.parse_args(a))
        raise Parsed

    monkeypatch.setattr(common.Command, "start", start)
    with pytest.raises(Parsed):
        store.bench_main(argv)
    assert parsed[0].protocol == "quick"
    assert parsed[0].repeat == 10
    recorded = (ROOT / "docs" / "results" / "store_bench_h100.txt").read_text().splitlines()[1]
    assert "CUDA events" in recorded and "median of" in recorded      # the report the cell shows without a GPU


def _cell_with(source: Path, text: str) -> str:
    """The code cell of a jupytext percent source that contains `text`."""
    cells = [c for c in source.read_text().split("\n# %%") if text in c]
    assert len(cells) == 1, f"{source.name}: {len(cells)} cells contain {text!r}"
    return cells[0].split("\n", 1)[1]


def _gpu(cc, name):
    from bwlab.device import GpuInfo
    return GpuInfo(name=name, cc=cc, sm_count=132, smem_per_sm=233472, smem_per_block_optin=232448,
                   l2_bytes=50 << 20, global_mem_bytes=80 << 30, regs_per_sm=65536)


@pytest.mark.parametrize("cc,name,shape,steps,tier", [
    ((9, 0), "NVIDIA H100 80GB HBM3", (1024, 1024, 1024), "all", "hardware"),
    ((10, 0), "NVIDIA B200", (256, 256, 64), "first and last", "emulated"),
    ((12, 0), "NVIDIA GeForce RTX 5090", (256, 256, 64), "first and last", "emulated"),
    (None, None, (256, 256, 64), "first and last", "emulated"),
])
def test_notebook_07_runs_the_ladder_where_it_can(monkeypatch, cc, name, shape, steps, tier):
    """Section 5 of notebook 07 runs the Hopper ladder (sm_90a code: wgmma) on an sm_90 GPU at 1024^3 and in
    the PTX emulator at 256 x 256 x 64 elsewhere. On a Blackwell GPU the TMA stages are on hardware but
    wgmma is not there: the cell used to pick 1024^3 and print 'not run' for every step. The cell runs here
    with the GPU faked and GemmCase replaced by one that records where each case would run."""
    from bwlab import device, gemm
    monkeypatch.delenv("BWLAB_BACKEND", raising=False)
    monkeypatch.setattr(device, "_probe", lambda: None if cc is None else _gpu(cc, name))
    runs = []

    class Recorded:
        def __init__(self, s, m, n, k, seed):
            runs.append((s.name, (m, n, k), device.tier("tma"), gemm.GemmCase(s, m, n, k).runs_on()))

        def results(self):
            return "results"

    cell = _cell_with(ROOT / "notebooks" / "src" / "07_gemm_ladder.py", "GemmCase(s, *shape, seed=1).results()")
    exec(compile(cell, "07_gemm_ladder.py (section 5)", "exec"), {"device": device, "gemm": gemm, "GemmCase": Recorded})
    want = gemm.STEPS if steps == "all" else gemm.STEPS[::5]
    assert [r[0] for r in runs] == [s.name for s in want]
    assert {r[1:3] for r in runs} == {(shape, tier)}
    assert all(r[3] is not None for r in runs)       # every case runs here: this GPU or the emulator
    assert device.backend() == "auto"                # the cell leaves the backend as it found it


def test_tcgen05_cases_on_a_hopper_gpu_say_so_and_the_model_answers(monkeypatch):
    """On an H100 the UMMA and TMEM stages are in the hybrid tier: no GPU here runs a tcgen05 kernel. Their
    cases used to report 'this GPU' as where they run, so `results()` (notebooks 03b and 04) called the
    runner, which raised UnsupportedGPU out of the cell. Now such a case does not run here: `results()`
    says so (beside a recording where one exists), and the flow, whose hybrid tier does run on the GPU,
    still runs there."""
    from bwlab import device, tmem, umma
    from bwlab.flow.case import Flow
    monkeypatch.delenv("BWLAB_BACKEND", raising=False)
    monkeypatch.setattr(device, "_probe", lambda: _gpu((9, 0), "NVIDIA H100 80GB HBM3"))
    assert (device.tier("umma"), device.tier("tmem")) == ("hybrid", "hybrid")
    ucase = umma.UmmaCase("f16", "f32", M=128, N=64, K=64, b_base=16384, kernel="teach_umma.cu")
    tcase = tmem.TmemLoad(tmem.TmemAccess("32x32b", 8), tmem.address_image(), 0)
    for case, stage in ((ucase, "umma"), (tcase, "tmem")):
        assert case.runs_on() is None
        res = case.results()                                   # no exception: the cell goes on
        assert [r.ok for r in res] == [False] and "hybrid tier" in str(res), str(res)
    assert Flow().runs_on() == "this GPU (NVIDIA H100 80GB HBM3)"
    monkeypatch.setattr(device, "_probe", lambda: _gpu((10, 0), "NVIDIA B200"))
    assert ucase.runs_on() == tcase.runs_on() == "this GPU (NVIDIA B200)"


@pytest.mark.parametrize("cc,name", [((10, 0), "NVIDIA B200"), ((12, 0), "NVIDIA GeForce RTX 5090")])
def test_validate_wgmma_accumulation_off_hopper_exits_3(monkeypatch, capsys, cc, name):
    """`python -m bwlab.validate wgmma_accumulation` on a GPU without wgmma: exit code 3 and one line, as every
    command says when this machine has no suitable GPU (it raised UnsupportedGPU from the first launch)."""
    from bwlab import device, umma, validate
    monkeypatch.delenv("BWLAB_BACKEND", raising=False)
    monkeypatch.setattr(device, "_probe", lambda: _gpu(cc, name))

    def launched(*a, **k):
        raise AssertionError("nothing is launched without wgmma")
    monkeypatch.setattr(umma, "launch_wgmma", launched)
    assert validate.main(["wgmma_accumulation", "--cases", "1"]) == 3
    assert f"this machine has {name} (sm_{cc[0]}{cc[1]}): nothing to validate here" in capsys.readouterr().out
