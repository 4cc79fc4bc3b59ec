"""Open every stored notebook in a real JupyterLab (headless Chromium) without running it, and check what a
learner sees first: no "Error displaying widget" / "model not found", every stored widget drawn (its
stored picture included), the notebook not marked modified, the file unchanged by a save, `src/` hidden;
then, as a learner would, Run All in one notebook, save, reopen: the widgets come back from the saved
state, with no "model not found".

    python tests/browser/check_lab.py [--out DIR] [notebooks/NN_name.ipynb ...]

Needs Playwright (`pip install playwright`; never `playwright install`) and a Chromium binary
(Debian: `apt-get install chromium`, launched as /usr/lib/chromium/chromium; or --chromium PATH).
JupyterLab is started as `make lab` starts it (bwlab.tools.notebooks.lab_args and its settings
override) on a COPY of the notebooks, with fresh Jupyter config/data/runtime/settings directories.
Writes one screenshot per notebook (and one per stored widget) to --out; exit status 1 if any check
fails. Not part of `make test` (it takes about a minute and a half on a 2-core machine).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from bwlab.tools.notebooks import VIEW_MIME, install_lab_settings, lab_args  # noqa: E402

TOKEN = "bwlab-browser-check"


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


def start_lab(work: Path, port: int):
    env = dict(os.environ)
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
    t0 = time.time()
    while time.time() - t0 < 90:
        try:
            api(base, "/api/status")
            return proc, base
        except Exception:
            time.sleep(0.5)
    proc.terminate()
    raise SystemExit(f"JupyterLab did not start; see {work / 'lab.log'}")


def expected_views(nb_json) -> int:
    return sum(1 for c in nb_json["cells"] for o in c.get("outputs", [])
               if VIEW_MIME in o.get("data", {}))


def check_notebook(page, base: str, name: str, work: Path, out: Path, i: int) -> dict:
    path = work / "notebooks" / name
    original = path.read_bytes()
    nb_json = json.loads(original)
    res = {"notebook": name, "problems": []}
    t0 = time.time()
    page.goto(f"{base}/lab/workspaces/check{i}/tree/{name}?token={TOKEN}")
    page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell", timeout=90_000)
    # Wait for the kernel to be connected and idle (the widget manager restores the stored state then).
    deadline = time.time() + 60
    while time.time() < deadline:
        st = page.evaluate("""() => {
            const ind = document.querySelector('.jp-NotebookPanel .jp-Notebook-ExecutionIndicator');
            return ind ? ind.getAttribute('data-status') : null; }""")
        if st == "idle":
            break
        time.sleep(0.5)
    time.sleep(4)   # late changes (language_info from the kernel, widget rendering) show up by now
    res["open_s"] = round(time.time() - t0, 1)
    want = expected_views(nb_json)
    info = page.evaluate("""() => {
        const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
        const text = panel ? panel.textContent : '';
        const widgets = [...panel.querySelectorAll('.jp-OutputArea-output:has(> .jupyter-widgets)')];
        const tab = document.querySelector('.lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current');
        return {
          errors: (text.match(/Error displaying widget|model not found/g) || []).length,
          widgets: widgets.length,
          widgetImages: widgets.map(w => w.querySelectorAll('img').length),
          dirty: !!(tab && tab.classList.contains('jp-mod-dirty')),
          anyDirty: document.querySelectorAll('.jp-mod-dirty').length,
          tabTitle: tab ? tab.textContent : null,
        }; }""")
    res.update(info)
    res["stored_widget_views"] = want
    if info["errors"]:
        res["problems"].append(f"{info['errors']} widget error text(s)")
    if info["widgets"] != want:
        res["problems"].append(f"{info['widgets']} widgets drawn, {want} stored")
    if info["dirty"] or info["anyDirty"]:
        res["problems"].append("marked modified on open")
    page.screenshot(path=str(out / f"{Path(name).stem}.png"))
    # One screenshot per stored widget (live, or its static copy), scrolled into view.
    cells = page.query_selector_all(".jp-NotebookPanel .jp-CodeCell")
    shots = [c for c in cells if c.query_selector(".jp-OutputArea-output:has(> .jupyter-widgets)")
             or "Static copy of the widget" in (c.evaluate("e => e.textContent") or "")]
    res["static_copies"] = [c.evaluate("e => e.querySelectorAll('.jp-OutputArea-output img').length")
                            for c in shots]
    want_copies = sum(1 for c in nb_json["cells"] for o in c.get("outputs", [])
                      if "Static copy of the widget" in "".join(o.get("data", {}).get("text/plain", "")))
    if len(shots) != want + want_copies:
        res["problems"].append(f"{len(shots)} widget cells seen, {want + want_copies} stored")
    for k, c in enumerate(shots):
        for _ in range(3):
            c.scroll_into_view_if_needed()
            time.sleep(0.3)
        c.screenshot(path=str(out / f"{Path(name).stem}_widget{k}.png"))
    # Save without running: the file must not change.
    page.click(".jp-NotebookPanel .jp-Notebook")
    page.keyboard.press("Control+s")
    time.sleep(3)
    saved = path.read_bytes()
    res["save_changes_file"] = saved != original
    if saved != original:
        after = json.loads(saved)
        diffs = [k for k in ("nbformat", "nbformat_minor") if after.get(k) != nb_json.get(k)]
        diffs += [f"metadata.{k}" for k in set(after["metadata"]) | set(nb_json["metadata"])
                  if after["metadata"].get(k) != nb_json["metadata"].get(k)]
        diffs += [f"cell {j}" for j, (a, b) in enumerate(zip(after["cells"], nb_json["cells"])) if a != b]
        res["save_diff"] = diffs or ["formatting only"]
        (out / f"{Path(name).stem}.saved.ipynb").write_bytes(saved)
        res["problems"].append(f"save rewrites the file: {', '.join(res['save_diff'][:6])}")
    for s in api(base, "/api/sessions"):
        api(base, f"/api/sessions/{s['id']}", method="DELETE")
    return res


def wait_idle(page, seconds: float = 180) -> bool:
    """Until no prompt shows [*] and the execution indicator says idle (bounded)."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        busy = page.evaluate("""() => {
            const p = [...document.querySelectorAll('.jp-NotebookPanel .jp-InputPrompt')]
                .some(e => e.textContent.includes('[*]'));
            const ind = document.querySelector('.jp-NotebookPanel .jp-Notebook-ExecutionIndicator');
            return p || !ind || ind.getAttribute('data-status') !== 'idle'; }""")
        if not busy:
            return True
        time.sleep(1)
    return False


def check_learner_save(ctx, base: str, name: str, work: Path, out: Path) -> dict:
    """A learner runs every cell, saves, and opens the notebook again: the widgets must come back
    from the saved state (JupyterLab's saveState, set by `make lab`), not as "model not found"."""
    res = {"notebook": name, "problems": []}
    t0 = time.time()
    page = ctx.new_page()
    page.goto(f"{base}/lab/workspaces/learner1/tree/{name}?token={TOKEN}")
    page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell", timeout=90_000)
    wait_idle(page, 60)
    page.click(".lm-MenuBar-itemLabel:text-is('Run')")
    page.click(".lm-Menu-itemLabel:text-is('Run All Cells')")
    time.sleep(2)
    res["ran"] = wait_idle(page)
    res["live_widgets"] = page.evaluate(
        "() => document.querySelectorAll('.jp-OutputArea-output:has(> .jupyter-widgets)').length")
    page.click(".jp-NotebookPanel .jp-Notebook")
    page.keyboard.press("Control+s")
    time.sleep(3)
    saved = json.loads((work / "notebooks" / name).read_text())
    res["saved_models"] = len(saved["metadata"].get("widgets", {}).get(
        "application/vnd.jupyter.widget-state+json", {}).get("state", {}))
    page.close(run_before_unload=False)
    for s in api(base, "/api/sessions"):
        api(base, f"/api/sessions/{s['id']}", method="DELETE")
    page = ctx.new_page()
    page.goto(f"{base}/lab/workspaces/learner2/tree/{name}?token={TOKEN}")
    page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell", timeout=90_000)
    wait_idle(page, 60)
    time.sleep(4)
    info = page.evaluate("""() => {
        const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
        return {errors: (panel.textContent.match(/Error displaying widget|model not found/g) || []).length,
                widgets: panel.querySelectorAll('.jp-OutputArea-output:has(> .jupyter-widgets)').length}; }""")
    res["reopened_errors"], res["reopened_widgets"] = info["errors"], info["widgets"]
    h = page.query_selector(".jp-NotebookPanel .jp-OutputArea-output:has(> .jupyter-widgets)")
    if h:
        for _ in range(3):
            h.scroll_into_view_if_needed()
            time.sleep(0.3)
        h.screenshot(path=str(out / f"{Path(name).stem}_after_learner_save.png"))
    page.close(run_before_unload=False)
    for s in api(base, "/api/sessions"):
        api(base, f"/api/sessions/{s['id']}", method="DELETE")
    if not res["ran"]:
        res["problems"].append("Run All did not finish")
    if res["live_widgets"] < 1 or res["saved_models"] < 1:
        res["problems"].append("no live widget / no widget state saved")
    if info["errors"] or info["widgets"] < res["live_widgets"]:
        res["problems"].append(f"after reopening: {info['errors']} widget errors, "
                               f"{info['widgets']} of {res['live_widgets']} widgets drawn")
    res["took_s"] = round(time.time() - t0, 1)
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("notebooks", nargs="*", help="default: notebooks/*.ipynb")
    ap.add_argument("--out", default=str(ROOT / "build" / "browser"), help="screenshots go here")
    ap.add_argument("--chromium", default="/usr/lib/chromium/chromium")
    ap.add_argument("--learner", default="04_tmem_load.ipynb",
                    help="notebook for the run-save-reopen check (after the others; '' skips it)")
    a = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright
    t_start = time.time()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    paths = [Path(p) for p in a.notebooks] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    work = Path(tempfile.mkdtemp(prefix="bwlab-lab-"))
    (work / "notebooks").mkdir()
    for p in paths:
        shutil.copy(p, work / "notebooks" / p.name)
    shutil.copytree(ROOT / "notebooks" / "src", work / "notebooks" / "src")
    proc, base = start_lab(work, free_port())
    results, ok = [], True
    try:
        listing = [e["name"] for e in api(base, "/api/contents/")["content"]]
        src_hidden = "src" not in listing
        print(f"file browser lists: {sorted(listing)}; src hidden: {src_hidden}")
        ok &= src_hidden
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=a.chromium, headless=True)
            ctx = browser.new_context(viewport={"width": 1440, "height": 900})
            for i, p in enumerate(paths):
                page = ctx.new_page()
                r = check_notebook(page, base, p.name, work, out, i)
                page.close(run_before_unload=False)
                results.append(r)
                ok &= not r["problems"]
                print(json.dumps(r), flush=True)
            if a.learner and a.learner in [p.name for p in paths]:
                learner = check_learner_save(ctx, base, a.learner, work, out)
                ok &= not learner["problems"]
                print("learner run-save-reopen:", json.dumps(learner), flush=True)
            browser.close()
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
    print(f"{'notebook':22s} widgets(stored) static-copies(images) errors dirty save-changes  open s")
    for r in results:
        print(f"{r['notebook']:22s} {r['widgets']:3d} ({r['stored_widget_views']:d})      "
              f"{len(r['static_copies']):3d} {str(r['static_copies']):12s} {r['errors']:4d}  "
              f"{str(r['dirty']):5s} {str(r['save_changes_file']):12s} {r['open_s']:6.1f}"
              + ("   " + "; ".join(r["problems"]) if r["problems"] else ""))
    print(f"screenshots: {out}; took {time.time() - t_start:.0f} s; {'PASS' if ok else 'FAIL'}")
    shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
