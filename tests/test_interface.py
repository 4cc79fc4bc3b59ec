"""One interface for every stage (bwlab.case): a case takes the learner's kernel (`kernel=`) and its
run() / check() / results() run that kernel; every check returns a CheckResult; result() says where a
result came from (this GPU, the PTX emulator, or which recording); the notebook sources hold no
hand-written live-or-recorded branch."""
import re
from pathlib import Path

import numpy as np
import pytest

from bwlab.case import Case, CheckResult, NoResult, Result, Results

ROOT = Path(__file__).resolve().parent.parent
NB_SRC = ROOT / "notebooks" / "src"


# ---- the kernel a case runs -----------------------------------------------------------------------
def _tma(kernel):
    from bwlab.tma.recorded import teach_case
    return teach_case(0, kernel)


def _multicast(kernel):
    from bwlab.multicast.recorded import teach_case
    return teach_case(kernel)


def _tmem(kernel):
    from bwlab.tmem import TmemAccess, TmemLoad, address_image
    return TmemLoad(TmemAccess("32x32b", 8), address_image(), 0, kernel=kernel)   # teach_tmem.cu: kNum = 8


def _store(kernel):
    from bwlab.epilogue import teach_case
    return teach_case(kernel=kernel)


def _wgmma(kernel):
    from bwlab.umma.recorded import teach_case
    return teach_case(kernel)


def _umma(kernel):
    from bwlab.umma import UmmaCase
    return UmmaCase("f16", "f32", M=128, N=64, K=64, b_base=16384, kernel=kernel)


def _flow(kernel):
    from bwlab.flow import Flow
    return Flow(0, kernel=kernel)


# (stage, teaching file, build(kernel) -> case, an edit whose result differs from the model)
EDITED = [
    ("tma", "teach_tma.cu", _tma, ("out[i] = smem[i];", "out[i] = smem[i] ^ 1;")),
    ("multicast", "teach_multicast.cu", _multicast,
     ("*reinterpret_cast<const uint4*>(tiles + i);", "*reinterpret_cast<const uint4*>(tiles + (i ^ 16));")),
    ("tmem", "teach_tmem.cu", _tmem, ("= r[j];", "= r[j] + 1;")),
    ("store", "teach_store.cu", _store, ("SWIZZLE_BITS = 3", "SWIZZLE_BITS = 0")),
    ("wgmma", "teach_wgmma.cu", _wgmma, ("= d[i];", "= d[i] + 1.0f;")),
    ("umma", "teach_umma.cu", _umma, ("col + j] = r[j];", "col + j] = r[j] ^ 1u;")),
]


@pytest.mark.parametrize("stage,file,build,edit", EDITED, ids=[e[0] for e in EDITED])
def test_a_case_takes_the_learners_kernel(stage, file, build, edit):
    """kernel= accepts a TeachingKernel or the file's name; a kernel of another file is refused."""
    from bwlab.lab import TeachingKernel
    mine = TeachingKernel(file).replace(*edit)
    assert build(mine)._teaching() is mine
    assert build(file)._teaching().file == file
    with pytest.raises(ValueError, match="teaching kernel"):
        build(TeachingKernel("hello_bulk.cu" if file != "hello_bulk.cu" else "teach_tma.cu"))
    # the learner's kernel is part of what a recording must match
    assert build(mine).identity() != build(file).identity()


@pytest.mark.parametrize("stage,file,build,edit", EDITED, ids=[e[0] for e in EDITED])
def test_run_runs_the_learners_kernel(stage, file, build, edit, emulated_tier):
    """In the emulated tier run() executes the kernel given: the original equals the model, the edit
    does not, and check() / results() say so."""
    from bwlab.lab import TeachingKernel
    mine = TeachingKernel(file).replace(*edit)
    assert build(file).check().ok
    bad = build(mine)
    res = bad.check()
    assert isinstance(res, CheckResult) and not res.ok and res.differing > 0, str(res)
    assert "emulated" in res.source
    live = bad.results()
    assert isinstance(live, Results) and not live[0].ok and live.results[0].live


def test_the_flow_runs_the_learners_kernel(emulated_tier):
    from bwlab.flow import Flow
    from bwlab.flow.kernel_edit import edit_k_step
    mine = edit_k_step(64)[0]          # full_flow_sm100.cu advancing its descriptors 64 bytes per K step
    res = Flow(0, kernel=mine).check()
    assert isinstance(res, CheckResult) and not res.ok
    hop, first = res.first_difference()
    assert hop == "mma", (hop, str(first))


def test_a_percent_cuda_edit_is_what_a_named_kernel_runs():
    """kernel="teach_tma.cu" means the learner's %%cuda version when there is one."""
    from bwlab import lab
    from bwlab.lab import TeachingKernel
    case = _tma("teach_tma.cu")
    before = case.identity()
    lab.EDITS["teach_tma.cu"] = TeachingKernel("teach_tma.cu").replace("out[i] = smem[i];", "out[i] = 0;")
    try:
        assert case.kernel.edited and case.identity() != before
    finally:
        lab.reset("teach_tma.cu")
    assert case.identity() == before


def test_cases_without_a_teaching_kernel_say_which_case_has_one():
    from bwlab import epilogue as E
    from bwlab import tmem
    from bwlab.lab import TeachingKernel
    k = TeachingKernel("teach_store.cu")
    with pytest.raises(ValueError, match="Epilogue"):
        E.TmaStore(np.zeros(4, np.float32), None, (0,), np.zeros(4, np.float32), kernel=k)
    acc = tmem.TmemAccess("32x32b", 8)
    with pytest.raises(ValueError, match="TmemLoad"):
        tmem.TmemStore(acc, tmem.address_image(), np.zeros((4, 1, 32, 8), np.uint32), kernel="teach_tmem.cu")


# ---- where a result comes from --------------------------------------------------------------------
def test_result_names_this_machine_or_the_recording(model_tier):
    """In the model tier nothing runs: result() is the recording of this very case, labelled."""
    case = _tma("teach_tma.cu")
    got, source = case.result()
    assert source.startswith("recorded on an NVIDIA") and isinstance(got, np.ndarray)
    assert case.check().ok and case.check().source == source
    # another box: no recording holds it
    from bwlab.tma import TensorMap, TmaLoad
    other = TmaLoad(case.gmem, TensorMap("bfloat16", (80, 48), (32, 16)), (0, 0))
    assert other.recorded() is None
    with pytest.raises(NoResult):
        other.result()
    (line,) = other.results()
    assert not line.ok and "not run" in str(line)


def test_recorded_errors_come_back_as_errors(model_tier):
    from bwlab.tma.recorded import bad_expect_tx_kernel
    (res,) = _tma(bad_expect_tx_kernel()).results()
    assert not res.ok and res.error.startswith("MbarrierTimeout: ") and res.seconds > 0
    assert str(res).startswith("recorded on an NVIDIA")


def test_every_recorded_case_finds_its_recording(model_tier):
    """Each case a stage lists as recorded is found by its own result(), and equals the model."""
    from bwlab.results import recorded_cases
    listed = recorded_cases()
    assert {r.recording for r in listed} >= {"tma_teach", "multicast_teach", "teach_store_result", "flow_gpu",
                                              "umma_teach_wgmma"}
    for r in listed:
        case = r.case()
        found = case.recorded()
        assert found is not None and not found.live, r
        kernel = case._teaching()
        edited = (kernel is not None and kernel.edited) or getattr(case, "descs", None) is not None
        if found.error is None and not edited:   # an edit (of the kernel, of its descriptors) differs on purpose
            assert case.check(found).ok, (r, str(case.check(found)))


def test_live_results_come_first(emulated_tier):
    res = _tma("teach_tma.cu").results()
    assert [r.live for r in res.results] == [True, False]
    assert res.ok and "emulated" in res[0].source and res[1].source.startswith("recorded")


# ---- one result type --------------------------------------------------------------------------------
def test_every_check_returns_a_check_result(model_tier):
    from bwlab.flow import Flow
    from bwlab.gemm import GemmCase
    from bwlab.epilogue import edge_store_case
    from bwlab.hello import HelloCopy
    from bwlab.multicast import ClusterRanks
    from bwlab.multicast.recorded import every_cta_config
    cases = [build(file) for _, file, build, _ in EDITED] + [Flow(0), GemmCase(1, 128, 128, 64), edge_store_case(),
                                                             HelloCopy(), ClusterRanks(every_cta_config())]
    for case in cases:
        assert isinstance(case, Case)
        res = case.check(case.model())
        assert isinstance(res, CheckResult) and res.ok, (case, str(res))


def test_show_takes_an_axis(model_tier):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from bwlab.flow import Flow
    from bwlab.multicast import ClusterRanks
    from bwlab.multicast.recorded import every_cta_config
    from bwlab.epilogue import edge_store_case
    from bwlab.gemm import GemmCase
    from bwlab.hello import HelloCopy
    cases = [build(file) for _, file, build, _ in EDITED] + [Flow(0), ClusterRanks(every_cta_config()),
                                                             edge_store_case(), GemmCase(1, 128, 128, 64), HelloCopy()]
    for case in cases:
        fig, ax = plt.subplots()
        out = case.show(ax=ax)
        assert out is not None, case
        plt.close("all")


# ---- the notebooks ----------------------------------------------------------------------------------
WHERE_IT_RUNS = re.compile(r"\bruns_on\(|\bLIVE\b|\btier\(|gpu_info\(|\bTIER\b|\bHARDWARE\b")
LOADS = re.compile(r"\bload_recording\(")


@pytest.mark.parametrize("src", sorted(NB_SRC.glob("*.py")), ids=lambda p: p.name)
def test_no_notebook_writes_its_own_live_or_recorded_branch(src):
    """case.result() / case.results() decide between this GPU, the emulator and a recording: no notebook
    asks `runs_on`, and no cell both asks where the stage runs and loads a recording by name (a cell may
    load a recording that is only ever recorded, such as the H100's benchmark timings)."""
    text = src.read_text()
    hits = [f"{src.name}: {line.strip()}" for line in text.splitlines() if re.search(r"(?<!\.)\bruns_on\(|\bLIVE\b", line)]
    for cell in re.split(r"^# %%", text, flags=re.M):
        if LOADS.search(cell) and WHERE_IT_RUNS.search(cell):
            hits.append(f"{src.name}: a cell loads a recording and asks where it runs:\n{cell.strip()[:400]}")
    assert not hits, "\n".join(hits)


TIER_BY_HAND = re.compile(r"\btier\([^)]*\)\s*(==|!=|not in\b|in\b)|^\s*(TIER|HARDWARE|LIVE)\s*=|"
                          r"\.tier\s*(==|!=|not in\b|in\b)", re.M)


@pytest.mark.parametrize("src", sorted(NB_SRC.glob("*.py")), ids=lambda p: p.name)
def test_no_notebook_branches_on_a_tier_by_hand(src):
    """A notebook asks the case (`results()` says where each result came from) or the device
    (`device.on_gpu(stage)`, `device.where(stage)`); it never compares tier names itself or keeps its own
    TIER / HARDWARE flag."""
    hits = [f"{src.name}:{text[:m.start()].count(chr(10)) + 1}: {m.group(0).strip()}"
            for text in [src.read_text()] for m in TIER_BY_HAND.finditer(text)]
    assert not hits, "\n".join(hits)


def test_the_tier_by_hand_reader_sees_every_form():
    for bad in ('if bwlab.tier("tmem") == "emulated":', 'x = device.tier("tma") != "model"',
                'if tier("umma") not in ("hardware",):', "HARDWARE = True", "if gpu.tier in ('model',):"):
        assert TIER_BY_HAND.search(bad), bad
    assert not TIER_BY_HAND.search('print(bwlab.device.where("tmem"))\nif device.on_gpu("store"):')


# ---- one name for each thing ------------------------------------------------------------------------
# The stages, and the packages of the notebooks beside them (00a scratch, 09 lowprec, 10 capstone): the same
# rules for their `__all__`.
STAGE_PACKAGES = ("tma", "multicast", "umma", "tmem", "epilogue", "flow", "gemm", "scratch", "lowprec", "capstone")


def _stage_submodules(stage):
    d = ROOT / "bwlab" / stage
    return {f.stem for f in d.glob("*.py")} | {x.name for x in d.iterdir() if x.is_dir()}


def _names_used_in_code(path: Path, stage: str) -> set:
    """The names of bwlab.<stage>'s top that a Python file uses: `from bwlab.<stage> import X`, and `S.X`
    where S is the package (`from bwlab import <stage> [as S]`, `import bwlab.<stage> as S`, `bwlab.<stage>`)."""
    import ast
    tree = ast.parse(path.read_text())
    aliases, used = set(), set()
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.level == 0:
            if n.module == "bwlab":
                aliases |= {a.asname or a.name for a in n.names if a.name == stage}
            elif n.module == f"bwlab.{stage}":
                used |= {a.name for a in n.names}
        elif isinstance(n, ast.Import):
            aliases |= {a.asname for a in n.names if a.name == f"bwlab.{stage}" and a.asname}
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute):
            v = n.value
            if isinstance(v, ast.Name) and v.id in aliases:
                used.add(n.attr)
            elif isinstance(v, ast.Attribute) and v.attr == stage and getattr(v.value, "id", "") == "bwlab":
                used.add(n.attr)
    return used - _stage_submodules(stage) - {"__doc__", "__file__", "__name__"}


def _names_used_in_docs(path: Path, stage: str, mod) -> set:
    """`<stage>.X` / `bwlab.<stage>.X` / `from bwlab.<stage> import X` in a Markdown file, X a name of the package."""
    text = path.read_text()
    used = set(re.findall(rf"(?<![\w/.])(?:bwlab\.)?{stage}\.([A-Za-z_]\w*)", text))
    for m in re.finditer(rf"from bwlab\.{stage} import ([\w, ]+)", text):
        used |= {x.strip() for x in m.group(1).split(",") if x.strip()}
    return {n for n in used - _stage_submodules(stage) if not n.startswith("_") and hasattr(mod, n)}


def names_used(stage: str) -> set:
    """What the notebooks' sources, the docs and the command lines (bwlab/checks, validate, bench) use from
    the top of bwlab.<stage>."""
    import importlib
    mod = importlib.import_module(f"bwlab.{stage}")
    code = [*sorted(NB_SRC.glob("*.py")), *sorted((ROOT / "bwlab" / "checks").rglob("*.py")),
            ROOT / "bwlab" / "validate.py", ROOT / "bwlab" / "bench.py"]
    docs = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
    return set().union(*(_names_used_in_code(p, stage) for p in code),
                       *(_names_used_in_docs(p, stage, mod) for p in docs if p.is_file()))


@pytest.mark.parametrize("pkg", STAGE_PACKAGES)
def test_a_stage_package_lists_exactly_what_is_used(pkg):
    """`__all__` is what the notebooks, the docs and the command lines use from the package's top: every
    such name is in it, and every name in it is used. The rest resolves lazily, from its module."""
    import importlib
    mod = importlib.import_module(f"bwlab.{pkg}")
    used = names_used(pkg)
    assert not used - set(mod.__all__), f"used but not in bwlab.{pkg}.__all__: {sorted(used - set(mod.__all__))}"
    assert not set(mod.__all__) - used, f"in bwlab.{pkg}.__all__ but used nowhere: {sorted(set(mod.__all__) - used)}"
    for name in mod.__all__:
        assert getattr(mod, name) is not None
    for where, names in getattr(mod, "_ELSEWHERE", {}).items():
        for name in names.split():
            assert getattr(mod, name) is getattr(importlib.import_module(where), name), name
    public = [n for n in dir(mod) if not n.startswith("_") and not isinstance(getattr(mod, n), type(mod))
              and n != "annotations"]
    assert set(public) <= set(mod.__all__), sorted(set(public) - set(mod.__all__))
    with pytest.raises(AttributeError):
        getattr(mod, "no_such_name")


def test_the_used_names_reader_sees_every_form(tmp_path):
    src = tmp_path / "nb.py"
    src.write_text("from bwlab import tma as T\nimport bwlab.tma as U\nfrom bwlab.tma import TensorMap, model\n"
                   "import bwlab\nT.cta_tiles(1)\nU.TmaLoad\nbwlab.tma.run_teach\nT.model.smem_chunks\n")
    assert _names_used_in_code(src, "tma") == {"cta_tiles", "TmaLoad", "run_teach", "TensorMap"}


def _module_reaches(path: Path) -> list:
    """Where a Python file takes something from a module of a stage package rather than from its top:
    `from bwlab.<stage>.<module> import X`, `import bwlab.<stage>.<module>`, `from bwlab.<stage> import
    <module>` and `S.<module>.X` (S the package) — the graded exercises (`exercises`) aside."""
    import ast
    tree = ast.parse(path.read_text())
    subs = {stage: _stage_submodules(stage) - {"exercises"} for stage in STAGE_PACKAGES}
    aliases, hits = {}, []
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.level == 0 and n.module:
            parts = n.module.split(".")
            if n.module == "bwlab":
                aliases.update({a.asname or a.name: a.name for a in n.names if a.name in subs})
            elif parts[0] != "bwlab":
                continue
            elif parts[1] in subs and len(parts) > 2 and parts[2] != "exercises":
                hits.append((n.lineno, f"from {n.module} import ..."))
            elif parts[1] in subs and len(parts) == 2:
                hits += [(n.lineno, f"from {n.module} import {a.name}") for a in n.names if a.name in subs[parts[1]]]
        elif isinstance(n, ast.Import):
            for a in n.names:
                parts = a.name.split(".")
                if len(parts) > 2 and parts[0] == "bwlab" and parts[1] in subs and parts[2] != "exercises":
                    hits.append((n.lineno, f"import {a.name}"))
                elif len(parts) == 2 and parts[0] == "bwlab" and parts[1] in subs and a.asname:
                    aliases[a.asname] = parts[1]
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Attribute):
            v = n.value
            stage = aliases.get(getattr(v.value, "id", None))
            if stage is None and isinstance(v.value, ast.Attribute) and getattr(v.value.value, "id", "") == "bwlab":
                stage = v.value.attr if v.value.attr in subs else None
            if stage is not None and v.attr in subs[stage]:
                hits.append((n.lineno, f"{stage}.{v.attr}.{n.attr}"))
    return sorted(set(hits))


@pytest.mark.parametrize("src", sorted(NB_SRC.glob("*.py")), ids=lambda p: p.name)
def test_a_notebook_takes_a_stages_names_from_its_top(src):
    """What a notebook uses of a stage it takes from the package's top (`from bwlab import gemm`,
    `gemm.step_card`, `from bwlab.umma import quantize`), never from one of the package's modules, so that
    the package's `__all__` (read above) is everything the notebooks use; the one module of a stage a
    notebook imports is its graded exercises (`from bwlab.gemm import exercises as gemm_ex`)."""
    hits = [f"{src.name}:{line}: {what}" for line, what in _module_reaches(src)]
    assert not hits, "a stage's name reached through one of its modules (use the package's top):\n" + "\n".join(hits)


def test_the_module_reader_sees_every_form(tmp_path):
    src = tmp_path / "nb.py"
    src.write_text("from bwlab import tma as T, umma\nimport bwlab.flow as F\nimport bwlab\n"
                   "from bwlab.tma.rules import RULES\nfrom bwlab.gemm import ladder, GemmCase\n"
                   "import bwlab.umma.scales\nT.model.smem_chunks\numma.rules.SHAPES\nF.grid.FlowGrid\n"
                   "bwlab.epilogue.recorded.bank_cycles\nfrom bwlab.gemm import exercises as ex\n"
                   "from bwlab.tma.exercises import check_box\nT.TensorMap\nT.exercises.check_box\n")
    assert [w for _, w in _module_reaches(src)] == [
        "from bwlab.tma.rules import ...", "from bwlab.gemm import ladder", "import bwlab.umma.scales",
        "tma.model.smem_chunks", "umma.rules.SHAPES", "flow.grid.FlowGrid", "epilogue.recorded.bank_cycles"]


def test_pictures_are_plot_and_the_old_names_are_gone():
    from bwlab import datapath, multicast, plotting, tmem
    for mod, old in ((multicast, "draw_landing"), (tmem, "draw_ld_map"), (datapath, "draw_data_path"),
                     (plotting, "draw_grid")):
        assert not hasattr(mod, old), f"{mod.__name__}.{old}: the draw_* aliases were deleted on 2026-11-28"
    for path in (ROOT / "bwlab").rglob("*.py"):
        defs = re.findall(r"^(?:def )?(draw_\w+)\b", path.read_text(), flags=re.M)
        assert not defs, f"{path}: pictures are plot_*: {defs}"


def test_one_stage_name_for_the_store():
    from bwlab import device
    from bwlab.epilogue import Epilogue, TmaStore
    assert "store" in device.STAGES and "epilogue" not in device.STAGES
    assert device.tier("epilogue") == device.tier("store")
    assert Epilogue.stage == TmaStore.stage == "store"
    with pytest.raises(ValueError, match="unknown stage"):
        device.tier("stroe")


def test_one_hop():
    from bwlab import datapath
    from bwlab.flow import trace
    assert trace.Hop is datapath.Hop
    assert all(isinstance(h, datapath.Hop) for h in datapath.HOPS + trace.HOPS)
    # the flow's hops walk the data path's memories in its order
    moves = [(h.src, h.dst) for h in trace.HOPS if h.src != h.dst.split(" ")[0] and h.src != "host"]
    assert moves == [(h.src, h.dst) for h in datapath.HOPS]


# ---- the GEMM ladder as a case -----------------------------------------------------------------------
def test_gemm_case_runs_a_step_in_the_emulator(emulated_tier):
    from bwlab.gemm import GemmCase
    case = GemmCase("s1", 128, 128, 64)
    got, source = case.result()
    assert "emulated" in source and got.dtype == np.uint16 and got.shape == (128, 128)
    assert case.check(got).ok
    bad = got.copy()
    bad[70, 3] ^= 0x0100                      # one element off by far more than a bf16 ulp
    res = case.check(bad)
    assert not res.ok and res.differing == 1 and res.first.index == (70, 3) and "tile (0, 0)" in res.first.where


def test_gemm_case_model_is_the_f32_gemm_rounded_to_bf16():
    from bwlab.gemm import GemmCase
    from bwlab.hw.dtypes import to_float
    case = GemmCase(1, 128, 128, 64, seed=3)
    a = to_float(case.a, "bf16").astype(np.float64)
    b = to_float(case.b, "bf16").astype(np.float64)
    want = (a @ b.T).astype(np.float32)
    got = to_float(case.model(), "bf16")
    assert np.all(np.abs(got - want) <= np.abs(want) * 2.0 ** -8)     # within half a bf16 ulp
    from bwlab.gemm.ladder import ShapeError
    with pytest.raises(ShapeError, match="multiple of 128"):
        GemmCase(1, 100, 128, 64)


def test_gemm_case_runs_the_learners_ladder_kernel(emulated_tier, tmp_path):
    """GemmCase(kernel=) runs an edit of the step's file in the emulator and compares it with the f32
    reference: the file as written passes, a K loop that drops its last slice fails."""
    from bwlab.gemm import GemmCase
    from bwlab.lab import TeachingKernel
    file = "gemm_sm90/s1_one_warpgroup.cu"
    assert GemmCase(1, 128, 128, 128, kernel="s1_one_warpgroup.cu").kernel.file == file
    assert GemmCase(1, 128, 128, 128, kernel=file).check().ok
    broken = TeachingKernel(file).replace("kt < k_tiles;", "kt < k_tiles - 1;")
    res = GemmCase(1, 128, 128, 128, kernel=broken).check()
    assert isinstance(res, CheckResult) and not res.ok and res.differing > 128 * 128 // 2, str(res)
    assert "emulated" in res.source and "K loop" in res.hint
    # the edited source as text or as a file is the same kernel
    (tmp_path / "mine.cu").write_text(broken.text)
    ident = GemmCase(1, 128, 128, 128, kernel=broken).identity()
    assert GemmCase(1, 128, 128, 128, kernel=broken.text).identity() == ident
    assert GemmCase(1, 128, 128, 128, kernel=tmp_path / "mine.cu").identity() == ident
    assert ident != GemmCase(1, 128, 128, 128, kernel=file).identity()
    with pytest.raises(ValueError, match="teaching kernel is gemm_sm90/s1_one_warpgroup.cu"):
        GemmCase(1, 128, 128, 128, kernel=TeachingKernel("gemm_sm90/s2_pipeline.cu"))


def test_umma_case_gives_the_kernel_your_idesc(emulated_tier):
    """UmmaCase.with_idesc(): teach_umma.cu issues tcgen05.mma with the learner's instruction descriptor;
    model() stays the case's, model(idesc=) predicts the kernel's D bit for bit."""
    from bwlab import umma
    case = _umma("teach_umma.cu")
    wrong = umma.make_instr_desc("f16", "f16", "f32", 128, 64, "K", "MN")     # B said MN-major, stored K-major
    mine = case.with_idesc(wrong)
    assert mine.kernel_idesc == wrong and mine.identity() != case.identity()
    assert np.array_equal(mine.model(), case.model())
    got = mine.run()
    assert np.array_equal(got, case.model(idesc=wrong))
    res = mine.check(got)
    assert not res.ok and "instruction descriptor" in res.hint, str(res)
    assert case.with_idesc(case.idesc).check().ok
    with pytest.raises(ValueError, match="kernel="):
        umma.UmmaCase("f16", "f32", M=128, N=64, K=64, b_base=16384, kernel_idesc=wrong)
    with pytest.raises(ValueError, match="32 bits"):
        case.with_idesc(1 << 32)


# ---- one verb per meaning -------------------------------------------------------------------------
# `check` compares something with the model and reports (a CheckResult, or a *Check of the same kind);
# `require_*` refuses illegal input with an error naming the rule; the exercise graders keep the
# check_* names the notebooks call. (module, old name, new name) of every rename (the old names were
# deleted on 2026-11-28):
RENAMED = [
    ("bwlab.tma.rules", "check_tensor_map", "require_tensor_map"),
    ("bwlab.tma.rules", "check_global_address", "require_global_address"),
    ("bwlab.tma.model", "check_modelled", "require_modelled"),
    ("bwlab.tma.model", "check_coords", "require_coords"),
    ("bwlab.tma.runner", "check_teach_args", "require_teach_args"),
    ("bwlab.tma", "check_teach_args", "require_teach_args"),
    ("bwlab.epilogue.runner", "check_teach_args", "require_teach_args"),
    ("bwlab.epilogue.rules", "check_reduce_add_dtype", "require_reduce_add_dtype"),
    ("bwlab.multicast.model", "check_smem_address", "require_smem_address"),
    ("bwlab.multicast.model", "check_teach_config", "require_teach_config"),
    ("bwlab.umma.rules", "check_mma_types", "require_mma_types"),
    ("bwlab.umma.rules", "check_mma_shape", "require_mma_shape"),
    ("bwlab.umma.rules", "check_mma_majors", "require_mma_majors"),
    ("bwlab.umma.rules", "check_mma", "require_mma"),
    ("bwlab.umma", "check_mma", "require_mma"),
    ("bwlab.umma.rules", "check_mma_cute", "require_mma_cute"),
    ("bwlab.umma.runner", "check_teach_wgmma", "require_teach_wgmma"),
    ("bwlab.umma.runner", "check_teach_umma", "require_teach_umma"),
    ("bwlab.umma.canonical", "check_choice", "require_choice"),
    ("bwlab.tmem.tables", "check_alloc", "require_alloc"),
    ("bwlab.tmem.tables", "check_ldst", "require_ldst"),
    ("bwlab.tmem.tables", "check_lanes", "require_lanes"),
    ("bwlab.tmem.tables", "check_cp", "require_cp"),
    ("bwlab.tmem.runner", "check_configurations", "require_configurations"),
    ("bwlab.tmem.model", "check_roundtrip", "require_roundtrip"),
    ("bwlab.hw.tmem", "check_image", "require_image"),
    ("bwlab.hw.swizzle", "check_mode", "require_mode"),
    ("bwlab.gemm.ladder", "check_shape", "require_shape"),
    ("bwlab.gemm.sm100", "check_problem", "require_problem"),
    ("bwlab.runtime", "check_status", "raise_on_status"),
    ("bwlab.gemm.runner", "check_status", "raise_on_status"),
    ("bwlab.gemm.runner", "check_numpy", "check"),
    ("bwlab.tools.notebooks", "check_cells", "validate_cells"),
]
CHECK_RESULT = re.compile(r"\b\w*Check(Result)?\b")


def _public_check_functions(root: Path):
    """(file, name, return annotation) of every public module- or class-level `def check_*` under root."""
    import ast
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text())
        bodies = [tree.body] + [n.body for n in tree.body if isinstance(n, ast.ClassDef) and not n.name.startswith("_")]
        for body in bodies:
            for node in body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("check_"):
                    yield path, node.name, ast.unparse(node.returns) if node.returns else ""


def _grader_names():
    """The names the exercise modules define or list in `__all__` (what a notebook's exercise calls)."""
    import ast
    names = set()
    for path in [ROOT / "bwlab" / "exercises.py", *sorted((ROOT / "bwlab").glob("*/exercises.py"))]:
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                names.add(node.name)
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
                names |= {e.value for e in node.value.elts if isinstance(e, ast.Constant)}
    return names


def _misnamed(root: Path):
    graders = _grader_names()
    return [f"{path.relative_to(root.parent)}: {name}" + (f" -> {ret}" if ret else " (no return annotation)")
            for path, name, ret in _public_check_functions(root)
            if name not in graders and not CHECK_RESULT.search(ret)]


def test_check_means_compare_with_the_model():
    """No public function is named check_* unless it grades an exercise or compares a result with the
    model and returns what it found (a CheckResult or another *Check): a rule validator is require_*,
    plumbing has its own verb."""
    wrong = _misnamed(ROOT / "bwlab")
    assert not wrong, "check_* that neither grades nor compares (a validator is require_*):\n" + "\n".join(wrong)


def test_the_verb_test_finds_a_validator_named_check(tmp_path):
    pkg = tmp_path / "bwlab"
    pkg.mkdir()
    (pkg / "rules.py").write_text("def check_thing(x) -> None:\n    if x < 0:\n        raise ValueError('x >= 0')\n\n\n"
                                  "def check_run(x) -> CheckResult:\n    return compare(x, x)\n\n\n"
                                  "class A:\n    def check_it(self):\n        pass\n")
    assert _misnamed(pkg) == ["bwlab/rules.py: check_thing -> None", "bwlab/rules.py: check_it (no return annotation)"]


@pytest.mark.parametrize("module,old,new", RENAMED, ids=[f"{m}.{o}" for m, o, _ in RENAMED])
def test_old_names_are_gone(module, old, new):
    """The renamed validators' old names were deleted on 2026-11-28, their one release over
    (docs/CONTRIBUTING.md, "Renames and deprecation")."""
    import importlib
    mod = importlib.import_module(module)
    assert callable(getattr(mod, new))
    assert not hasattr(mod, old), f"{module}.{old} is back: call {new}"


def test_nothing_of_bwlab_calls_an_old_name():
    """The package, the notebooks' sources and the scripts call the new names (an old call in code that
    runs only on a GPU would fail only there)."""
    import re
    old = sorted({o for _, o, _ in RENAMED} | {"check_status", "check_numpy", "check_cells"})
    call = re.compile(r"(?<![\w\"'])(?:\w+\.)*(" + "|".join(map(re.escape, old)) + r")\s*\(")
    found = []
    for path in [*(ROOT / "bwlab").rglob("*.py"), *(ROOT / "notebooks" / "src").glob("*.py"),
                 *(ROOT / "docs" / "results").glob("*.py")]:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            for m in call.finditer(line.split("#")[0]):
                if not line.lstrip().startswith(("def ", "class ")) and m.group(1) not in _grader_names():
                    found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, "calls of old names:\n" + "\n".join(found)


# Renamed on 2026-11-28 when notebooks 07 and 08 came to take the GEMM ladder's names from the package's
# top, where two modules' names met: (module, old name, new name, how the old name was reached). Each old
# name has another meaning still (the Hopper runner's run_step_emulated and reference, the module
# `timeline`, other modules' describe), so they are checked here rather than in RENAMED.
GEMM_RENAMED = [
    ("bwlab.gemm.sm100", "run_step_emulated", "run_sm100_emulated", r"\bsm100\.run_step_emulated\b"),
    ("bwlab.gemm.sm100", "reference", "reference_bf16", r"\bsm100\.reference\("),
    ("bwlab.gemm.timeline", "timeline", "step_timeline", r"\btimeline import timeline\b"),
    ("bwlab.gemm.occupancy", "describe", "describe_occupancy", r"\boccupancy\.describe\("),
]


def test_the_gemm_ladders_renamed_names_are_gone():
    import importlib
    found = []
    for module, old, new, reached in GEMM_RENAMED:
        mod = importlib.import_module(module)
        assert callable(getattr(mod, new)) and not hasattr(mod, old), f"{module}.{old} is back: call {new}"
        for path in [*(ROOT / "bwlab").rglob("*.py"), *(ROOT / "notebooks" / "src").glob("*.py"),
                     *(ROOT / "tests").rglob("*.py"), *(ROOT / "docs").rglob("*.py"), *(ROOT / "docs").glob("*.md")]:
            if path.name not in ("test_interface.py", "CONTRIBUTING.md"):    # where the renames are recorded
                found += [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
                          for n, line in enumerate(path.read_text().splitlines(), 1) if re.search(reached, line)]
    assert not found, "uses of the GEMM ladder's old names:\n" + "\n".join(found)


def test_a_report_is_read_by_one_name():
    """`recorded` means a recorded case (`bwlab/<stage>/recorded.py`, `Recorded`, `case.recorded()`); a
    committed report's text is `report_text` (renamed on 2026-11-28 from `results.recorded`, which had
    both meanings; every caller changed with it)."""
    from bwlab import results
    assert callable(results.report_text) and callable(results.show_report)
    assert not hasattr(results, "recorded") and not hasattr(results, "show_recorded")
