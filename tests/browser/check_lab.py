"""The notebooks in a real JupyterLab, driven by headless Chromium as a learner would use them.

For each notebook (default: every notebooks/*.ipynb):
  1. open it without running: no "Error displaying widget" / "model not found", not marked modified,
     and a save without running leaves the file byte-identical;
  2. clear all outputs and Run All, in the tier the stored outputs come from (the server runs with
     BWLAB_BACKEND=emulated, bwlab.tools.notebooks.STORED_BACKEND): every code cell runs, no traceback (in
     an output or in any error message the kernel sends), as many live widgets as the stored notebook has
     static copies of widgets; then save it and compare the saved outputs with the stored ones by strict
     nbval's rules (bwlab.tools.notebooks.stored_output_differences, notebooks/sanitize.cfg): this Run
     All is the notebook's one execution in CI, serving this check and nbval's (`make test BROWSER=1`);
  3. every widget control found in the DOM (dropdowns, sliders, checkboxes, toggles, radio buttons,
     text and number boxes, buttons) is moved once, and the pixels inside the widget's output areas
     must change (screenshots before and after, compared pixel by pixel) and keep their pictures (a
     plot that vanishes after a move fails); no control row may reach past the notebook panel's right
     edge. A control that an earlier move narrowed to a single choice is freed by undoing earlier
     moves, latest first;
  4. with --reopen only: save (widget state saved, as `make lab` does) and reopen: the widgets come
     back, with no "model not found". Not in `make browser-test`: on a loaded 2-core machine a
     reopened notebook sometimes drew "model not found" or no widget (2 of 15 reopens), which would
     make CI flaky.
Every wait is bounded; the whole run also stops at --budget seconds (a failure).

With --student the notebooks are the student editions that `make lab STUDENT=1` opens (nbgrader's
release; a notebook without exercises as it is), served as that command serves them (nbgrader's
instructor UI off), and the learner's first run is checked: Run All runs every code cell, the only
errors are the graded cells' NotYet "no answer yet", each shown as a message of a few lines (no
traceback), and the page shows no nbgrader menu or toolbar button. Every figure (a PNG or SVG output,
a widget's included) is screenshot as the page shows it ({notebook}_figNN.png) with its drawn and shown
widths in the summary; one shown at under MIN_SCALE of its drawn width fails (its text shrinks below
9 px). `make browser-test-student` runs it with a 1440-px window: with the file browser open, the
notebook's outputs are then ~1000 px wide, the width the figures are drawn for.

    python tests/browser/check_lab.py [--out build/browser] [--student] [notebooks/NN_name.ipynb ...]
    make browser-test          # installs what it needs first (make browser-deps)

Needs Playwright (the `browser` extra: `pip install -e ".[browser]"`; never `playwright install`) and a
Chromium binary (Debian: `apt-get install chromium`, launched as /usr/lib/chromium/chromium; or
--chromium PATH). JupyterLab is started as `make lab` starts it (bwlab.tools.notebooks.lab_args and its
settings override) on a COPY of the notebooks, with fresh Jupyter config/data/runtime/settings
directories. Screenshots and summary.txt go to --out; exit status 1 if any check fails.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bwlab.tools.notebooks import (STORED_BACKEND, install_lab_settings, lab_args,  # noqa: E402
                                   stored_output_differences, student_editions, student_lab_config,
                                   student_lab_env)
import widgets as W  # noqa: E402

TOKEN = "bwlab-browser-check"
STATIC_COPY = "Static copy of the widget"
WIDGET_ERRORS = re.compile(r"Error displaying widget|model not found|Could not create (a )?(model|view)", re.I)
PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"


class Budget:
    """The whole run's deadline: every wait is cut to what is left of it."""

    def __init__(self, seconds: float):
        self.end = time.time() + seconds

    def left(self) -> float:
        return self.end - time.time()

    def cap(self, seconds: float) -> float:
        return max(0.0, min(seconds, self.left()))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def api(base: str, path: str, method: str = "GET"):
    req = urllib.request.Request(f"{base}{path}", method=method,
                                 headers={"Authorization": f"token {TOKEN}"})
    with urllib.request.urlopen(req, timeout=10) as r:
        body = r.read()
    return json.loads(body) if body else None


def start_lab(work: Path, port: int, budget: Budget, student: bool = False, backend: str = STORED_BACKEND):
    # The tier the kernels run in (no GPU needed), and this checkout's bwlab in the kernels.
    env = dict(os.environ, BWLAB_BACKEND=backend,
               PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    if student:       # as `make lab STUDENT=1` serves the student editions: nbgrader's UI off
        env = student_lab_env(student_lab_config(work / "student-config"), env)
    for var in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "JUPYTERLAB_SETTINGS_DIR",
                "JUPYTERLAB_WORKSPACES_DIR"):
        d = work / "jupyter" / var.lower()
        d.mkdir(parents=True, exist_ok=True)
        env[var] = str(d)
    settings = Path(env["JUPYTERLAB_SETTINGS_DIR"])
    # No news toast; no autosave (a modified notebook must not be written behind our back).
    for plugin, value in {"@jupyterlab/apputils-extension/notification": {"fetchNews": "false"},
                          "@jupyterlab/docmanager-extension/plugin": {"autosave": False}}.items():
        pkg, name = plugin.rsplit("/", 1)
        f = settings / pkg / f"{name}.jupyterlab-settings"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(value))
    install_lab_settings()
    exe = str(Path(sys.executable).with_name("jupyter-lab"))
    cmd = [exe, *lab_args(work / "notebooks"), "--no-browser", "--ip=127.0.0.1", f"--port={port}",
           f"--IdentityProvider.token={TOKEN}", "--ServerApp.port_retries=0"]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    log = open(work / "lab.log", "w")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    # a bound on a hang: started alongside the unit tests (make test BROWSER=1) on a 2-core machine that other
    # jobs load too, JupyterLab has needed more than 90 s to start
    deadline = time.time() + budget.cap(300)
    while time.time() < deadline:
        try:
            api(base, "/api/status")
            return proc, base
        except Exception:
            time.sleep(0.5)
    proc.terminate()
    raise SystemExit(f"JupyterLab did not start; see {work / 'lab.log'}")


def lab_version() -> str:
    from importlib.metadata import version
    return version("jupyterlab")


def close_sessions(base: str):
    for s in api(base, "/api/sessions"):
        api(base, f"/api/sessions/{s['id']}", method="DELETE")


def kernel_idle(base: str) -> bool:
    return all(s["kernel"]["execution_state"] == "idle" for s in api(base, "/api/sessions"))


def wait_settled(page, base: str, seconds: float, quiet: float = 2.0) -> bool:
    """Until no prompt shows [*], the toolbar's indicator says idle and the server has seen the kernel
    idle for `quiet` seconds (bounded by `seconds`)."""
    deadline, since = time.time() + seconds, None
    while time.time() < deadline:
        busy = page.evaluate("""(panel) => {
            const p = document.querySelector(panel);
            if (!p) return true;
            const running = [...p.querySelectorAll('.jp-InputPrompt')].some(e => e.textContent.includes('[*]'));
            const ind = p.querySelector('.jp-Notebook-ExecutionIndicator');
            return running || !ind || ind.getAttribute('data-status') !== 'idle'; }""", PANEL)
        if not busy and kernel_idle(base):
            since = since or time.time()
            if time.time() - since >= quiet:
                return True
        else:
            since = None
        page.wait_for_timeout(300)
    return False


def open_lab(ctx, base: str, budget: Budget):
    """One JupyterLab page for the whole run (its file browser opens each notebook, as a learner does)."""
    page = ctx.new_page()
    page.set_default_timeout(30_000)
    page.goto(f"{base}/lab/workspaces/bwlab-check?token={TOKEN}")
    page.wait_for_selector(".jp-DirListing-item", timeout=budget.cap(120) * 1000 or 1)
    return page


def open_notebook(page, base: str, name: str, budget: Budget):
    """Double-click it in the file browser; wait for its kernel, then for late changes."""
    item = page.locator(".jp-DirListing-item").filter(
        has=page.locator(".jp-DirListing-itemText", has_text=re.compile(f"^{re.escape(name)}$")))
    item.first.dblclick()
    page.wait_for_selector(f"{PANEL} .jp-Notebook .jp-Cell", timeout=budget.cap(90) * 1000 or 1)
    wait_settled(page, base, budget.cap(60))
    page.wait_for_timeout(1500)   # late changes (language_info from the kernel, widget rendering)


def close_notebook(page, base: str):
    """File > Close and Shut Down Notebook, discarding changes (saved already where that matters)."""
    menu(page, "File", "Close and Shut Down Notebook")
    deadline = time.time() + 20
    while time.time() < deadline and page.locator(".jp-NotebookPanel").count():
        for label in ("Discard", "Don't Save", "Close and Shut Down", "Shut Down", "Ok", "OK", "Close"):
            b = page.locator(".jp-Dialog button", has_text=re.compile(f"^{re.escape(label)}$"))
            if b.count():
                b.first.click()
                break
        page.wait_for_timeout(300)
    close_sessions(base)


NOT_YET_LINES = 6     # the most lines an unanswered check's message may take (--student)


def not_yet_outputs(page) -> list[str]:
    """The text of every output that shows a NotYet (the graded cells of a student edition)."""
    return page.evaluate("""(panel) => {
        const p = document.querySelector(panel);
        return p ? [...p.querySelectorAll('.jp-OutputArea-output')].map(o => o.textContent)
                     .filter(t => t.includes('Not yet') || t.includes('NotYet')) : []; }""", PANEL)


def nbgrader_ui(page) -> list[str]:
    """What of nbgrader's UI the page shows: its menu, its notebook toolbar buttons."""
    return page.evaluate("""() => {
        const found = [];
        for (const e of document.querySelectorAll('.lm-MenuBar-itemLabel'))
            if (/nbgrader/i.test(e.textContent)) found.push('menu ' + e.textContent.trim());
        for (const e of document.querySelectorAll('.jp-Toolbar-item, .jp-ToolbarButtonComponent'))
            if (/validate|create assignment|nbgrader/i.test(e.textContent + ' ' + (e.getAttribute('title') || '')))
                found.push('toolbar ' + (e.textContent.trim() || e.getAttribute('title')));
        for (const e of document.querySelectorAll('.jp-LauncherCard'))
            if (/nbgrader|formgrader|assignment/i.test(e.textContent)) found.push('launcher ' + e.textContent.trim());
        return found; }""")


# --student: one wrong answer per notebook, typed into its solution cell as a learner would, the check run
# twice: (solution cell id, the wrong answer, words its first message must hold).
WRONG_ANSWERS = {
    "00_orientation.ipynb": ("orient_tile_bytes", "from bwlab.hw import element_type\n\n"
                             "def my_tile_bytes(rows, cols, dtype):\n    return rows * cols",
                             "the number of elements, not of bytes"),
    "00a_gemm_from_scratch.ipynb": ("scratch_tile_load_bytes", "def tile_load_bytes(M, N, K, T):\n"
                                    "    return (M // T) * (N // T) * (T * K + K * T)", "that counts elements"),
    "01_tma_load.ipynb": ("tma_tx_bytes", "def my_tx_bytes(dtype, box_shape, swizzle=\"none\"):\n    n = 1\n"
                          "    for b in box_shape:\n        n *= b\n    return n", "the number of elements, not of bytes"),
    "02_multicast.ipynb": ("mc_expect_tx", "def expect_tx_of(cluster_m, cluster_n, tile_m, tile_n, tile_k):\n"
                           "    return tile_m * tile_k * 2", "the A tile only"),
    "03a_umma_descriptors.ipynb": ("mma_lbo_sbo", "def lbo_sbo_of(swizzle, rows):\n"
                                   "    width = {\"none\": 16, \"32B\": 32, \"64B\": 64, \"128B\": 128}[swizzle]\n"
                                   "    lbo = (rows // 8) * 128 if swizzle == \"none\" else 16\n"
                                   "    return 8 * width, lbo", "LBO and SBO swapped"),
    "03b_umma_mma.ipynb": ("mma_legal_shape", "def legal_shape(M, N, cta_group):\n"
                           "    return M == 64 and N % 8 == 0 and N <= 256", "cta_group::1 takes M in (64, 128)"),
    "04_tmem_load.ipynb": ("tmem_address", "def my_taddr(base, lane, column):\n    return base + (column << 16) + lane",
                           "swapped"),
    "05_tma_store.ipynb": ("store_wait_ring", "def my_max_read_wait(stages):\n    return stages",
                           "may be among the N still reading it"),
    "06_full_flow.ipynb": ("flow_mma_count", "def mma_count(m, k, ab=\"f16\"):\n"
                           "    return k // 16, (m // 64) * (k // 16)", "steps K by 16 elements"),
    "07_gemm_ladder.ipynb": ("gemm_stage_bytes", "def stage_bytes(bm, bn):\n    return (bm + bn) * 64",
                             "that counts elements"),
    "09_low_precision.ipynb": ("lowp_sf_offset", "def sf_offset(row, j):\n    return 4 * row + j",
                               "rows r and r + 1 are 16 bytes apart"),
    "10_capstone.ipynb": ("cap_producer", 'producer_acquire = "mbarrier_arrive_expect_tx(&full[s], STAGE_BYTES);"',
                          "never waits on empty[s]"),
}


def cell_output(page, index: int) -> str:
    return page.evaluate("""([panel, i]) => {
        const c = document.querySelectorAll(panel + ' .jp-Notebook .jp-Cell')[i];
        return c ? [...c.querySelectorAll('.jp-OutputArea-output')].map(o => o.textContent).join('\\n') : ''; }""",
        [PANEL, index])


def try_wrong_answer(page, base: str, name: str, nb: dict, out: Path, budget: Budget, res: dict):
    """Type the wrong answer into the solution cell, run it and its check, then the check again: the first
    message says what is wrong (a few lines, no rule yet), the second adds the rule."""
    gid, text, words = WRONG_ANSWERS[name]
    ids = [c.get("metadata", {}).get("nbgrader", {}).get("grade_id") for c in nb["cells"]]
    i, j = ids.index(gid), ids.index(gid + "_check")
    cells = page.locator(f"{PANEL} .jp-Notebook .jp-Cell")
    W.settle_scroll(page, cells.nth(i).element_handle())
    cells.nth(i).locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(text)
    page.keyboard.press("Shift+Enter")          # runs the answer, selects the check
    page.keyboard.press("Shift+Enter")          # runs the check
    wait_settled(page, base, budget.cap(60), quiet=1.0)
    first = cell_output(page, j)
    W.settle_scroll(page, cells.nth(j).element_handle())
    cells.nth(j).screenshot(path=str(out / f"{Path(name).stem}_wrong_1.png"))
    cells.nth(j).locator(".jp-InputPrompt").click()
    page.keyboard.press("Control+Enter")        # the same miss again
    wait_settled(page, base, budget.cap(60), quiet=1.0)
    second = cell_output(page, j)
    cells.nth(j).screenshot(path=str(out / f"{Path(name).stem}_wrong_2.png"))
    (out / f"{Path(name).stem}_wrong.txt").write_text(f"{first}\n----\n{second}\n")
    lines = [line for line in first.splitlines() if line.strip()]
    res["wrong_answer"] = f"{len(lines)} lines, then {'the rule' if 'rule:' in second else 'no rule'}"
    if words not in first or "rule:" in first or len(lines) > NOT_YET_LINES or "Traceback" in first:
        res["problems"].append(f"first wrong answer to {gid}: {first[:300]!r}")
    if "rule:" not in second:
        res["problems"].append(f"the same wrong answer again did not show the rule: {second[:300]!r}")


def figure_shots(page, stem: str, out: Path) -> list[dict]:
    """A screenshot of every figure (a PNG or SVG output, a widget's included) as the page shows it, and its
    widths: what matplotlib drew (natural) and what the page shows (shown). A figure shown narrower than
    drawn has its text shrunk by that factor, so a 9 pt label drawn at 100 dpi (12.5 px) stays >= 9 px only
    while shown/natural >= 0.72."""
    n = page.evaluate("""(panel) => {
        const p = document.querySelector(panel);
        const imgs = p ? [...p.querySelectorAll('.jp-OutputArea-output img, .jp-OutputArea-output svg')]
            .filter(e => !e.parentElement.closest('svg')) : [];
        imgs.forEach((e, i) => e.setAttribute('data-bwlab-fig', String(i)));
        return imgs.length; }""", PANEL)
    figs = []
    for k in range(n):
        el = page.locator(f'{PANEL} [data-bwlab-fig="{k}"]').first
        W.settle_scroll(page, el.element_handle())
        page.wait_for_timeout(100)
        size = el.evaluate("""e => ({natural: e.naturalWidth || (e.viewBox && e.viewBox.baseVal
                                      ? e.viewBox.baseVal.width : 0) || e.getBoundingClientRect().width,
                                     shown: e.getBoundingClientRect().width,
                                     height: e.getBoundingClientRect().height})""")
        fig = {"index": k, "natural": round(size["natural"]), "shown": round(size["shown"]),
               "height": round(size["height"]), "file": f"{stem}_fig{k:02d}.png"}
        if size["shown"] < 1 or size["height"] < 1:
            fig["problem"] = "not drawn (zero size)"
        else:
            view = page.viewport_size
            tall = size["height"] > view["height"] - 250    # taller than the notebook's visible part
            if tall:                                         # a taller window: same width, same layout
                page.set_viewport_size({"width": view["width"], "height": int(size["height"]) + 400})
                W.settle_scroll(page, el.element_handle())
            el.screenshot(path=str(out / fig["file"]), animations="disabled")
            if tall:
                page.set_viewport_size(view)
        figs.append(fig)
    return figs


MIN_SCALE = 0.72      # shown / drawn width below which a 9 pt label falls under 9 px


CUDA_ERROR_NOTEBOOK = "01_tma_load.ipynb"   # --student: a %%cuda cell with a compile error, added at its end


def try_cuda_error(page, base: str, stem: str, out: Path, budget: Budget, res: dict):
    """A new cell at the end: `%load_ext bwlab.lab`, then the teaching kernel with one semicolon dropped under
    `%%cuda teach_tma.cu`. Its output must name the cell's line of the error and show the lines around it
    highlighted as CUDA (pygments' inline colours), the error line marked and numbered as in the cell."""
    from bwlab.lab import TeachingKernel
    text = TeachingKernel("teach_tma.cu").text
    lines = text.splitlines()
    n = next(i for i, line in enumerate(lines, 1) if line.rstrip().endswith(";") and "=" in line)
    lines[n - 1] = lines[n - 1].rstrip()[:-1]
    cells = page.locator(f"{PANEL} .jp-Notebook .jp-Cell")
    last = cells.nth(cells.count() - 1)
    W.settle_scroll(page, last.element_handle())
    last.locator(".jp-InputPrompt, .jp-InputArea-prompt").first.click()
    page.keyboard.press("Escape")
    for cell_text in ("%load_ext bwlab.lab", "%%cuda teach_tma.cu\n" + "\n".join(lines)):
        page.keyboard.press("b")                    # a new cell below, in command mode
        page.keyboard.press("Enter")                # edit it
        page.keyboard.insert_text(cell_text)
        page.keyboard.press("Shift+Enter")          # at the end this adds an empty cell, in edit mode
        wait_settled(page, base, budget.cap(90), quiet=1.0)
        page.keyboard.press("Escape")
    j = page.evaluate("""(panel) => [...document.querySelectorAll(panel + ' .jp-Notebook .jp-Cell')]
        .findIndex(c => (c.querySelector('.cm-content') || {textContent: ''}).textContent.startsWith('%%cuda'))""",
                      PANEL)
    shown = cell_output(page, j)
    el = cells.nth(j)
    W.settle_scroll(page, el.element_handle())
    el.screenshot(path=str(out / f"{stem}_cuda_error.png"))
    marked = el.evaluate("""c => [...c.querySelectorAll('.jp-OutputArea-output .highlight pre > span')]
        .filter(s => s.style.backgroundColor && s.style.backgroundColor !== 'transparent').map(s => s.textContent)""")
    coloured = el.evaluate("""c => c.querySelectorAll('.jp-OutputArea-output .highlight span[style*="color"]').length""")
    # NVRTC names the line where it found the missing ';': the edited line or the next one
    said = [int(m) for m in re.findall(r"error on line (\d+) of this cell", shown)]
    cell_lines = ["%%cuda teach_tma.cu"] + lines
    at = said[0] if said else 0
    res["cuda_error"] = (f"semicolon dropped on cell line {n + 1}; error named on line {at}, marked "
                         f"{' '.join(marked).strip()!r:.70}, {coloured} coloured spans")
    if (not said or at not in (n + 1, n + 2) or "NOT kept" not in shown or len(marked) != 1
            or marked[0].strip().split()[0] != str(at) or cell_lines[at - 1].strip() not in marked[0]
            or coloured < 10):
        res["problems"].append(f"%%cuda compile error: wanted the cell's line {n + 1} or {n + 2} named, marked and "
                               f"highlighted as CUDA; got {shown[:300]!r}, marked {marked!r:.200}, "
                               f"{coloured} coloured spans")


def panel_state(page) -> dict:
    return page.evaluate("""(panel) => {
        const p = document.querySelector(panel);
        const text = p ? [...p.querySelectorAll('.jp-OutputArea')].map(o => o.textContent).join(' ') : '';
        const tab = document.querySelector('.lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current');
        return {
          text_errors: (text.match(/Error displaying widget|model not found/g) || []).length,
          tracebacks: (text.match(/Traceback \\(most recent call last\\)/g) || []).length,
          widgets: p ? [...p.querySelectorAll('.jp-OutputArea-output:has(> .jupyter-widgets)')]
                         .filter(e => !e.parentElement.closest('.jupyter-widgets')).length : 0,
          dirty: !!(tab && tab.classList.contains('jp-mod-dirty')) || document.querySelectorAll('.jp-mod-dirty').length > 0,
          code_cells: p ? p.querySelectorAll('.jp-CodeCell').length : 0,
          prompts: p ? [...p.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].map(e => e.textContent.trim()) : [],
        }; }""", PANEL)


def save(page, path: Path, seconds: float = 15) -> bool:
    """Ctrl+S; True once the server has written the file (its mtime moves)."""
    before = path.stat().st_mtime_ns
    focus_notebook(page)
    page.keyboard.press("Control+s")
    deadline = time.time() + seconds
    while time.time() < deadline:
        page.wait_for_timeout(300)
        if path.stat().st_mtime_ns != before:
            page.wait_for_timeout(500)
            return True
    return False


def focus_notebook(page):
    """Make the notebook the current document by clicking its tab (a click inside it could land on a
    widget's control)."""
    page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabLabel").first.click()


def menu(page, top: str, item: str):
    focus_notebook(page)
    page.click(f".lm-MenuBar-itemLabel:text-is('{top}')")
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{re.escape(item)}…?$")).first.click()


class KernelErrors:
    """Every error message the kernel sends (iopub `error`), read from the page's websocket frames:
    it catches tracebacks that never reach a cell's output (a widget callback's, say)."""

    MSG = re.compile(rb'"msg_type":\s*"error"')
    NAME = re.compile(rb'"ename":\s*"((?:[^"\\]|\\.)*)",\s*"evalue":\s*"((?:[^"\\]|\\.)*)"')

    def __init__(self, page):
        self.errors = []
        page.on("websocket", lambda ws: ws.on("framereceived", self.frame))

    def frame(self, payload):
        data = payload if isinstance(payload, bytes) else payload.encode()
        if self.MSG.search(data):
            m = self.NAME.search(data)
            self.errors.append(f"{m.group(1).decode()}: {m.group(2).decode()[:200]}" if m else "error message")


def check_notebook(page, base: str, name: str, work: Path, out: Path, budget: Budget, reopen: bool,
                   errors: KernelErrors, console: list, student: bool = False, compare: bool = False) -> dict:
    path = work / "notebooks" / name
    stem = Path(name).stem
    original = path.read_bytes()
    # A student edition has no outputs: its widgets are counted in the answer notebook's static copies.
    nb_json = json.loads((ROOT / "notebooks" / name).read_bytes() if student else original)
    want_widgets = sum(1 for c in nb_json["cells"] for o in c.get("outputs", [])
                       if STATIC_COPY in "".join(o.get("data", {}).get("text/plain", "")))
    res = {"notebook": name, "problems": [], "notes": [], "controls": []}
    errors.errors.clear()
    console.clear()
    t0 = time.time()

    # 1. Open without running.
    open_notebook(page, base, name, budget)
    st = panel_state(page)
    res["open_s"] = round(time.time() - t0, 1)
    if st["text_errors"]:
        res["problems"].append(f"on open: {st['text_errors']} widget error text(s)")
    if st["dirty"]:
        res["problems"].append("marked modified by opening it")
    page.screenshot(path=str(out / f"{stem}_open.png"))
    if not save(page, path):
        res["problems"].append("save without running: the file was not written")
    elif path.read_bytes() != original:
        (out / f"{stem}.saved.ipynb").write_bytes(path.read_bytes())
        res["problems"].append("a save without running rewrites the file")
        path.write_bytes(original)

    # 2. Clear outputs, Run All.
    t1 = time.time()
    menu(page, "Edit", "Clear Outputs of All Cells")
    page.wait_for_timeout(300)
    left = [p for p in panel_state(page)["prompts"] if re.search(r"\d|\*", p)]
    if left:
        res["problems"].append(f"clearing outputs left {len(left)} numbered prompts")
    menu(page, "Run", "Run All Cells")
    page.wait_for_timeout(1000)
    ran = wait_settled(page, base, budget.cap(300), quiet=2.0)
    st = panel_state(page)
    res["run_s"] = round(time.time() - t1, 1)
    numbered = sum(1 for p in st["prompts"] if re.fullmatch(r"\[\d+\]:", p))
    res["cells_run"] = f"{numbered}/{st['code_cells']}"
    res["widgets"] = f"{st['widgets']}/{want_widgets}"
    if not ran:
        res["problems"].append(f"Run All did not finish in time ({res['run_s']} s)")
    if numbered != st["code_cells"]:
        res["problems"].append(f"only {numbered} of {st['code_cells']} code cells ran")
    if compare and ran:
        # This Run All against the stored outputs, by strict nbval's rules: saved as JupyterLab saves it.
        t_compare = time.time()
        if not save(page, path):
            res["problems"].append("save after Run All: the file was not written")
        else:
            import nbformat
            differ = stored_output_differences(nbformat.reads(original.decode(), as_version=4), path)
            res["stored_outputs"] = "as stored" if not differ else f"{len(differ)} cells differ"
            if differ:
                shutil.copy(path, out / f"{stem}.executed.ipynb")
                res["problems"].extend(f"outputs differ from the stored ones: {d}" for d in differ)
        res["compare_s"] = round(time.time() - t_compare, 1)
    in_file = sum(1 for c in json.loads(original)["cells"] if c["cell_type"] == "code")
    if st["code_cells"] != in_file:
        res["problems"].append(f"the page shows {st['code_cells']} code cells, the notebook has {in_file}")
    if student:
        graded = sum(1 for c in json.loads(original)["cells"]
                     if c.get("metadata", {}).get("nbgrader", {}).get("grade"))
        shown = not_yet_outputs(page)
        res["not_yet"] = f"{len(shown)}/{graded}"
        if len(shown) != graded:
            res["problems"].append(f"{len(shown)} NotYet messages shown, {graded} graded cells")
        for text in shown:
            lines = [line for line in text.splitlines() if line.strip()]
            if len(lines) > NOT_YET_LINES or "Traceback" in text or "no answer yet" not in text:
                res["problems"].append(f"a NotYet message of {len(lines)} lines: {text[:200]!r}")
        (out / f"{stem}_not_yet.txt").write_text("\n----\n".join(shown) + "\n")
        first = page.locator(f"{PANEL} .jp-OutputArea-output", has_text="Not yet").first
        if shown and first.count():
            W.settle_scroll(page, first.element_handle())
            first.screenshot(path=str(out / f"{stem}_not_yet.png"))
        res["figures"] = figure_shots(page, stem, out)
        for f in res["figures"]:
            if "problem" in f:
                res["problems"].append(f"figure {f['index']}: {f['problem']}")
            elif f["natural"] and f["shown"] / f["natural"] < MIN_SCALE:
                res["problems"].append(f"figure {f['index']} drawn {f['natural']} px wide, shown at {f['shown']} px: "
                                       f"its text shrinks to {f['shown'] / f['natural']:.0%}")
        ui = nbgrader_ui(page)
        if ui:
            res["problems"].append(f"nbgrader's UI shows: {', '.join(ui)}")
        if name in WRONG_ANSWERS and budget.left() > 60:
            try_wrong_answer(page, base, name, json.loads(original), out, budget, res)
        if name == CUDA_ERROR_NOTEBOOK and budget.left() > 60:
            try_cuda_error(page, base, stem, out, budget, res)
        # the graded cells' NotYet are what a student edition must show (and the wrong answer's); nothing
        # else may fail
        errors.errors[:] = [e for e in errors.errors if not e.startswith("NotYet:")]
    if st["widgets"] != want_widgets:
        res["problems"].append(f"{st['widgets']} live widgets, {want_widgets} stored as static copies")
    page.screenshot(path=str(out / f"{stem}_ran.png"))

    # 3. Every control of every widget.
    t2 = time.time()
    for k in range(st["widgets"]):
        if budget.left() < 30:
            res["problems"].append("out of time before every widget was driven")
            break
        W.drive_view(page, base, k, out / f"{stem}_w{k}", res, budget, kernel_idle)
    res["drive_s"] = round(time.time() - t2, 1)
    st = panel_state(page)
    if st["tracebacks"]:
        res["problems"].append(f"{st['tracebacks']} traceback(s) in the outputs")
    if st["text_errors"]:
        res["problems"].append(f"after running: {st['text_errors']} widget error text(s)")
    page.wait_for_timeout(100)      # let the last websocket frames be read
    if errors.errors:
        res["problems"].append(f"kernel error messages: {'; '.join(dict.fromkeys(errors.errors))}")

    # 4. Save with the widget state; reopen: the widgets come back.
    if reopen and st["widgets"] and budget.left() > 60:
        t3, live = time.time(), st["widgets"]
        if not save(page, path):
            res["problems"].append("save after running: the file was not written")
        close_notebook(page, base)
        open_notebook(page, base, name, budget)
        deadline = time.time() + budget.cap(20)
        while (st2 := panel_state(page))["widgets"] < live and time.time() < deadline:
            page.wait_for_timeout(500)
        res["reopened_widgets"] = f"{st2['widgets']}/{live}"
        if st2["text_errors"] or st2["widgets"] != live:
            shutil.copy(path, out / f"{stem}.saved_after_run.ipynb")
            res["problems"].append(f"after save and reopen: {st2['text_errors']} widget error text(s), "
                                   f"{st2['widgets']} of {live} widgets drawn")
        if st2["dirty"]:
            # jupyterlab-manager marks the notebook dirty as it restores each saved model (saveState on).
            res["notes"].append("after a save with widget state, reopening marks the notebook modified")
        h = page.query_selector(f"{PANEL} .jp-OutputArea-output:has(> .jupyter-widgets)")
        if h:
            W.settle_scroll(page, h)
            h.screenshot(path=str(out / f"{stem}_reopened_w0.png"))
        res["reopen_s"] = round(time.time() - t3, 1)
    elif reopen and st["widgets"]:
        res["notes"].append("save-and-reopen skipped: out of time")
    close_notebook(page, base)
    if console:
        res["problems"].append(f"browser console: {'; '.join(dict.fromkeys(console))[:300]}")
    res["took_s"] = round(time.time() - t0, 1)
    return res


def summary_lines(results, listing_ok, ok, took, out, about) -> list[str]:
    lines = [about, f"{'notebook':26s} {'cells run':>9s} {'widgets':>7s} {'controls changed':>16s} "
             f"{'open s':>6s} {'run s':>6s} {'drive s':>7s} {'reopen s':>8s} {'total s':>7s}  result"]
    for r in results:
        changed = sum(1 for c in r["controls"] if c["changed"])
        moved = f"{changed}/{len(r['controls'])}"
        lines.append(f"{r['notebook']:26s} {r.get('cells_run', '-'):>9s} {r.get('widgets', '-'):>7s} {moved:>16s} "
                     f"{r.get('open_s', 0):6.1f} {r.get('run_s', 0):6.1f} {r.get('drive_s', 0):7.1f} "
                     f"{r.get('reopen_s', 0):8.1f} "
                     f"{r.get('took_s', 0):7.1f}  {'FAIL' if r['problems'] else 'ok'}")
    lines.append("")
    for r in results:
        for c in r["controls"]:
            lines.append(f"  {r['notebook'][:2]} widget {c['view']} {c['kind']:9s} {c['label'][:28]!r:30s} "
                         f"{c['from'][:18]!s:>18s} -> {c['to'][:18]!s:18s} "
                         f"{c.get('why') or 'changed ' + str(c['pixels']) + ' px'}")
        if "figures" in r:
            shown = [f"{f['shown']}/{f['natural']}" for f in r["figures"]]
            lines.append(f"  {r['notebook']}: {len(r['figures'])} figures screenshot "
                         f"({r['notebook'][:-6]}_figNN.png), width shown/drawn px: {' '.join(shown)}")
        if "not_yet" in r:
            lines.append(f"  {r['notebook']}: unanswered checks shown as a short NotYet message: {r['not_yet']}")
        if "cuda_error" in r:
            lines.append(f"  {r['notebook']}: a %%cuda cell with a compile error: {r['cuda_error']}")
        if "stored_outputs" in r:
            lines.append(f"  {r['notebook']}: Run All's outputs against the stored ones (nbval's rules): "
                         f"{r['stored_outputs']}")
        if "wrong_answer" in r:
            lines.append(f"  {r['notebook']}: a wrong answer's message: {r['wrong_answer']}")
        for p in r["problems"]:
            lines.append(f"  {r['notebook']}: PROBLEM: {p}")
        for n in r["notes"]:
            lines.append(f"  {r['notebook']}: note: {n}")
    lines.append(f"file browser hides src/: {listing_ok}")
    lines.append(f"screenshots: {out}; took {took:.0f} s; {'PASS' if ok else 'FAIL'}")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("notebooks", nargs="*", help="default: notebooks/*.ipynb")
    ap.add_argument("--out", default=str(ROOT / "build" / "browser"), help="screenshots and summary.txt")
    ap.add_argument("--chromium", default=os.environ.get("CHROMIUM", "/usr/lib/chromium/chromium"))
    ap.add_argument("--width", type=int, default=1280, help="browser window width (px): a laptop's")
    ap.add_argument("--height", type=int, default=900)
    # A guard against a hang, not a target: `make test BROWSER=1` runs this alongside the unit tests, and on
    # a 2-core machine that other jobs load as well a Run All in the emulated tier takes minutes.
    ap.add_argument("--budget", type=float, default=1800, help="seconds for the whole run (then FAIL)")
    ap.add_argument("--student", action="store_true",
                    help="the student editions, served as `make lab STUDENT=1` serves them (see above)")
    ap.add_argument("--backend", choices=("model", "emulated"),
                    help=f"the kernels' tier (BWLAB_BACKEND); default {STORED_BACKEND} (the stored outputs' tier: each "
                         "Run All is then compared with them), model with --student")
    ap.add_argument("--reopen", action="store_true",
                    help="also save each notebook after driving its widgets and reopen it (step 4)")
    a = ap.parse_args(argv)
    a.backend = a.backend or ("model" if a.student else STORED_BACKEND)
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        raise SystemExit('Playwright is missing: pip install -e ".[browser]" (or make browser-deps)')
    if not os.access(a.chromium, os.X_OK):
        raise SystemExit(f"no Chromium at {a.chromium}: apt-get install chromium (or make browser-deps), "
                         "or pass --chromium PATH")
    budget = Budget(a.budget)
    t_start = time.time()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    for f in out.iterdir():        # this run's files only: the last run's screenshots go
        if f.is_file() and f.suffix in (".png", ".ipynb") or f.name == "summary.txt":
            f.unlink()
    if a.student:
        editions = student_editions()
        paths = ([editions[Path(p).name] for p in a.notebooks] if a.notebooks
                 else [editions[k] for k in sorted(editions)])
    else:
        paths = [Path(p) for p in a.notebooks] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    work = Path(tempfile.mkdtemp(prefix="bwlab-lab-"))
    (work / "notebooks").mkdir()
    for p in paths:
        shutil.copy(p, work / "notebooks" / p.name)
    shutil.copytree(ROOT / "notebooks" / "src", work / "notebooks" / "src")
    proc, base = start_lab(work, free_port(), budget, a.student, a.backend)
    results, listing_ok, about = [], False, ""
    try:
        listing = [e["name"] for e in api(base, "/api/contents/")["content"]]
        listing_ok = "src" not in listing
        about = run_all(a, base, budget, work, out, paths, results)
    except Exception as e:             # JupyterLab or the browser gave up: still write the summary
        traceback.print_exc()
        results.append({"notebook": "(the run)", "problems": [f"{type(e).__name__}: {str(e).splitlines()[0]}"],
                        "notes": [], "controls": []})
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
    ok = listing_ok and results and not any(r["problems"] for r in results)
    lines = summary_lines(results, listing_ok, ok, time.time() - t_start, out, about)
    (out / "summary.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


def run_all(a, base: str, budget: Budget, work: Path, out: Path, paths, results: list) -> str:
    """One browser, one JupyterLab page; each notebook in turn (a failed one does not stop the next).
    Returns what ran where, for the summary."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=a.chromium, headless=True)
        about = (f"Chromium {browser.version} (headless, {a.width}x{a.height}), JupyterLab {lab_version()}, "
                 f"{os.cpu_count()} CPUs, BWLAB_BACKEND={a.backend}")
        ctx = browser.new_context(viewport={"width": a.width, "height": a.height})
        console = []
        page = errors = None
        for p in paths:
            if page is None:
                page = open_lab(ctx, base, budget)
                errors = KernelErrors(page)
                page.on("console", lambda m: console.append(m.text) if WIDGET_ERRORS.search(m.text) else None)
            if budget.left() < 60:
                results.append({"notebook": p.name, "problems": ["not checked: out of time"],
                                "notes": [], "controls": []})
                continue
            try:
                r = check_notebook(page, base, p.name, work, out, budget, a.reopen, errors, console, a.student,
                                   compare=a.backend == STORED_BACKEND and not a.student)
            except Exception as e:      # a Playwright timeout, say: record it, start the next afresh
                traceback.print_exc()
                r = {"notebook": p.name, "problems": [f"{type(e).__name__}: {str(e).splitlines()[0]}"],
                     "notes": [], "controls": []}
                try:
                    page.screenshot(path=str(out / f"{p.stem}_error.png"))
                finally:
                    page.close(run_before_unload=False)
                    page = None
                    close_sessions(base)
            results.append(r)
            print(json.dumps({k: v for k, v in r.items() if k != "controls"}), flush=True)
        browser.close()
    return about


if __name__ == "__main__":
    raise SystemExit(main())
