"""Driving ipywidgets in JupyterLab from the DOM alone (check_lab.py's step 3): find a widget view's
controls, move each once as a learner would (keyboard on sliders, a different option in a menu, a click
on a checkbox/toggle/radio/button, a new value typed in a text box), and compare screenshots of the
view's output areas before and after, pixel by pixel. No knowledge of which notebook builds what.
"""
from __future__ import annotations

import io
import re
import time

PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"
MIN_PIXELS = 10           # pixels that must differ (by more than TOLERANCE in some channel) to count
TOLERANCE = 24
MOVE_WAIT_S = 25          # longest wait for one move's output
QUIET_S = 2.0             # kernel idle this long after a move, output unchanged: it will not change

# A top-level widget view; its controls, each tagged with data-bwlab-ctl="j" (DOM order), and its
# output areas (tagged data-bwlab-out="j"), and the rows that reach past the notebook panel.
_DISCOVER = r"""([panel, k]) => {
  const p = document.querySelector(panel);
  const views = [...p.querySelectorAll('.jp-OutputArea-output:has(> .jupyter-widgets)')]
      .filter(e => !e.parentElement.closest('.jupyter-widgets'));
  const view = views[k];
  if (!view) return null;
  view.querySelectorAll('[data-bwlab-ctl]').forEach(e => e.removeAttribute('data-bwlab-ctl'));
  view.querySelectorAll('[data-bwlab-out]').forEach(e => e.removeAttribute('data-bwlab-out'));
  view.setAttribute('data-bwlab-view', String(k));
  const label = (e) => {
    const box = e.closest('.widget-inline-hbox, .widget-inline-vbox, .widget-checkbox, .jupyter-button, .widget-box');
    const named = [...(box ? box.querySelectorAll(':scope > .widget-label, :scope > label.widget-label-basic span') : []),
                   {textContent: e.getAttribute('aria-label')}, {textContent: e.title}, {textContent: e.textContent}];
    for (const l of named) {
      const t = (l.textContent || '').replace(/​/g, '').trim();
      if (t) return t;
    }
    return '';
  };
  const controls = [];
  const add = (e, kind, value, extra) => {
    e.setAttribute('data-bwlab-ctl', String(controls.length));
    const disabled = !!(e.disabled || e.closest('[disabled]') || e.getAttribute('aria-disabled') === 'true');
    const hidden = e.getClientRects().length === 0;
    controls.push(Object.assign({kind, label: label(e), value: String(value), disabled, hidden}, extra || {}));
  };
  for (const e of view.querySelectorAll(
      'select, .noUi-handle, input, textarea, button, .widget-toggle-buttons, .widget-radio-box')) {
    if (e.closest('.widget-output')) continue;               // a nested widget shown in an output
    const group = e.closest('.widget-toggle-buttons, .widget-radio-box');
    if (group && group !== e) continue;                      // the group is one control
    if (e.matches('select')) {
      add(e, 'menu', [...e.selectedOptions].map(o => o.textContent).join(', '),
          {options: [...e.options].map(o => o.textContent), multiple: e.multiple});
    } else if (e.matches('.noUi-handle')) {
      const box = e.closest('.widget-slider, .widget-hslider, .widget-vslider, .widget-inline-hbox, .widget-inline-vbox');
      const readout = ((box && box.querySelector('.widget-readout')) || {}).textContent || '';
      add(e, 'slider', readout.trim() || e.getAttribute('aria-valuetext') || e.getAttribute('aria-valuenow'),
          {now: +e.getAttribute('aria-valuenow'), min: +e.getAttribute('aria-valuemin'),
           max: +e.getAttribute('aria-valuemax')});
    } else if (e.matches('.widget-toggle-buttons')) {
      const b = [...e.querySelectorAll('button')];
      add(e, 'toggles', (b.find(x => x.classList.contains('mod-active')) || {}).textContent || '',
          {options: b.map(x => x.textContent)});
    } else if (e.matches('.widget-radio-box')) {
      const r = [...e.querySelectorAll('input[type=radio]')];
      add(e, 'radio', (r.find(x => x.checked) || {}).value || '', {options: r.map(x => x.value)});
    } else if (e.matches('input[type=checkbox]')) {
      add(e, 'checkbox', e.checked);
    } else if (e.matches('button')) {
      add(e, e.classList.contains('widget-toggle-button') ? 'toggle' : 'button',
          e.classList.contains('mod-active') ? 'on' : (e.classList.contains('widget-toggle-button') ? 'off' : 'click'));
    } else if (e.matches('input[type=number]')) {
      add(e, 'number', e.value, {step: e.step, min: e.min, max: e.max});
    } else if (e.matches('input[type=color], input[type=date], input[type=datetime-local], input[type=time]')) {
      add(e, e.type, e.value);
    } else if (e.matches('textarea, input[type=text], input:not([type]), input[type=search], input[type=password]')) {
      add(e, 'text', e.value);
    }
  }
  // Output areas: the outermost Output widgets of the view.
  const outs = [...view.querySelectorAll('.widget-output')].filter(o => !o.parentElement.closest('.widget-output'));
  outs.forEach((o, j) => o.setAttribute('data-bwlab-out', String(j)));
  // Rows past the panel's right edge (the scrolling area's visible width, scroll bar excluded).
  const outer = p.querySelector('.jp-WindowedPanel-outer') || p;
  const r0 = outer.getBoundingClientRect();
  const right = r0.left + outer.clientWidth;
  const wide = [];
  for (const e of view.querySelectorAll('.widget-box, .widget-inline-hbox, .widget-inline-vbox, .jupyter-button')) {
    if (e.closest('.widget-output')) continue;
    const r = e.getBoundingClientRect();
    if (r.width > 0 && r.right > right + 1)
      wide.push(`${(e.textContent || '').trim().slice(0, 40)} ends at ${Math.round(r.right - r0.left)} px, ` +
                `panel ${Math.round(outer.clientWidth)} px`);
  }
  if (view.scrollWidth > view.clientWidth + 1)
    wide.push(`the widget's output scrolls sideways (${view.scrollWidth} px in ${view.clientWidth} px)`);
  const pictures = outs.map(o => o.querySelectorAll('img, canvas, svg').length).reduce((a, b) => a + b, 0);
  return {controls, outputs: outs.length, pictures, wide};
}"""


def settle_scroll(page, el, times: int = 3):
    """scrollIntoView until the cell heights around it have settled (windowed notebook)."""
    for _ in range(times):
        el.scroll_into_view_if_needed()
        page.wait_for_timeout(150)


def discover(page, k: int):
    return page.evaluate(_DISCOVER, [PANEL, k])


def _view(page, k: int):
    return page.locator(f'{PANEL} [data-bwlab-view="{k}"]')


def _shots(page, k: int, n_out: int) -> list:
    """PIL images of the view's output areas (or of the whole view where it has none)."""
    from PIL import Image
    view = _view(page, k)
    els = [view.locator(f'[data-bwlab-out="{j}"]') for j in range(n_out)] or [view]
    shots = []
    for e in els:
        if e.count() == 0 or e.first.bounding_box() is None or e.first.bounding_box()["height"] < 1:
            shots.append(None)
            continue
        shots.append(Image.open(io.BytesIO(e.first.screenshot(animations="disabled"))).convert("RGB"))
    return shots


def pixel_diff(a: list, b: list) -> int:
    """Pixels that differ between two lists of screenshots (a size change counts every pixel)."""
    from PIL import ImageChops
    n = 0
    for x, y in zip(a, b):
        if x is None or y is None:      # an output area with nothing drawn, before or after
            n += 0 if x is y else (x or y).size[0] * (x or y).size[1]
        elif x.size != y.size:
            n += max(x.size[0] * x.size[1], y.size[0] * y.size[1])
        else:
            d = ImageChops.difference(x, y).convert("L").point(lambda v: 255 if v > TOLERANCE else 0)
            n += d.histogram()[255]
    return n + sum(s.size[0] * s.size[1] for s in (a[len(b):] + b[len(a):]) if s is not None)


def _new_text(value: str, kind: str) -> str:
    """A different, still well-formed value for a text or number box."""
    v = value.strip()
    try:
        if re.fullmatch(r"[+-]?0[xX][0-9a-fA-F]+", v):
            return f"{int(v, 16) + 1:#0{len(v)}x}"
        if re.fullmatch(r"[+-]?\d+", v):
            return str(int(v) + 1)
        return repr(float(v) + 1.0)
    except ValueError:
        return (value + "1") if kind == "text" else "1"


def _control(page, k: int, j: int):
    return page.locator(f'{PANEL} [data-bwlab-view="{k}"] [data-bwlab-ctl="{j}"]').first


def movable(c: dict):
    """None if the control can be moved, else why not."""
    if c["disabled"]:
        return "disabled"
    if c["hidden"]:
        return "hidden"
    if c["kind"] in ("menu", "toggles", "radio") and len(c["options"]) < 2:
        return f"only one choice ({c['options'][0] if c['options'] else 'none'})"
    if c["kind"] == "slider" and c["max"] <= c["min"]:
        return f"only one position ({c['value']})"
    if c["kind"] not in ("menu", "slider", "toggles", "radio", "checkbox", "toggle", "button", "text", "number",
                         "color"):
        return f"no way to move a {c['kind']} control"
    return None


def move(page, k: int, j: int, c: dict, to=None) -> tuple[str, dict]:
    """Move control j of view k once (to the next choice, one slider step, a click, a value one up);
    with `to`, put it back as an earlier move's undo record says. Returns (what it now shows, the undo
    record)."""
    el = _control(page, k, j)
    settle_scroll(page, el, 2)
    kind = c["kind"]
    if kind == "menu":
        opts = c["options"]
        if to is not None:
            if to["value"] in opts:
                el.select_option(label=to["value"])
            return to["value"], {}
        cur = [i for i, o in enumerate(opts) if o in c["value"].split(", ")] or [0]
        i = (cur[0] + 1) % len(opts)
        el.select_option(index=i)
        return opts[i], {"value": c["value"]}
    if kind == "slider":
        key = to["key"] if to is not None else ("ArrowRight" if c["now"] < c["max"] else "ArrowLeft")
        el.focus()
        page.keyboard.press(key)
        page.wait_for_timeout(100)
        el.evaluate("e => e.blur()")
        return "", {"key": "ArrowLeft" if key == "ArrowRight" else "ArrowRight"}
    if kind in ("toggles", "radio"):
        opts = c["options"]
        if to is not None:
            i = opts.index(to["value"]) if to["value"] in opts else None
        else:
            i = (opts.index(c["value"]) + 1) % len(opts) if c["value"] in opts else 0
        if i is not None:
            (el.locator("button") if kind == "toggles" else el.locator("input[type=radio]")).nth(i).click()
        return opts[i] if i is not None else c["value"], {"value": c["value"]}
    if kind in ("checkbox", "toggle", "button"):
        el.click()
        return {"checkbox": str(c["value"] != "true").lower(), "toggle": "off" if c["value"] == "on" else "on",
                "button": "clicked"}[kind], {}
    if kind in ("text", "number", "color"):
        if to is not None:
            new = to["value"]
        elif kind == "color":
            new = "#1f77b4" if c["value"].lower() != "#1f77b4" else "#ff7f0e"
        else:
            new = _new_text(c["value"], kind)
            if kind == "number" and c.get("max") not in ("", None) and float(new) > float(c["max"]):
                new = str(float(c["value"]) - 1) if "." in c["value"] else str(int(c["value"]) - 1)
        el.fill(new)
        if kind != "color":
            el.press("Enter")
            el.evaluate("e => e.blur()")   # a focused text box keeps notebook shortcuts from firing
        return new, {"value": c["value"]}
    raise ValueError(f"no way to move a {kind} control")


def wait_output(page, base: str, k: int, n_out: int, before: list, kernel_idle) -> tuple[int, float]:
    """Until the output areas differ from `before` and have stopped changing (kernel idle), or the
    kernel has been idle QUIET_S with nothing changed; bounded by MOVE_WAIT_S. (pixels, seconds)."""
    t0 = time.time()
    last, idle_since = None, None
    while time.time() - t0 < MOVE_WAIT_S:
        page.wait_for_timeout(400)
        shots = _shots(page, k, n_out)
        idle = kernel_idle(base) and page.evaluate(
            """(panel) => { const i = document.querySelector(panel + ' .jp-Notebook-ExecutionIndicator');
                            return !!i && i.getAttribute('data-status') === 'idle'; }""", PANEL)
        idle_since = (idle_since or time.time()) if idle else None
        diff = pixel_diff(before, shots)
        if diff >= MIN_PIXELS and idle and last is not None and pixel_diff(last, shots) == 0:
            return diff, time.time() - t0
        if diff < MIN_PIXELS and idle_since and time.time() - idle_since >= QUIET_S and time.time() - t0 > 3:
            page.wait_for_timeout(2000)             # a last look before calling it unchanged
            if pixel_diff(before, _shots(page, k, n_out)) < MIN_PIXELS:
                return diff, time.time() - t0
            idle_since = None
        last = shots
    return pixel_diff(before, _shots(page, k, n_out)), time.time() - t0


def drive_view(page, base: str, k: int, prefix, res: dict, budget, kernel_idle):
    """Every control of top-level widget view k, once, in DOM order; results appended to
    res['controls'], failures to res['problems']; screenshots prefix.png (as Run All drew it) and
    prefix_cJ.png (after moving control J). A control that an earlier move narrowed to one choice
    (a menu offering only values legal with the others) is freed by undoing the earlier moves, latest
    first, as far as needed."""
    view = _view(page, k)
    if discover(page, k) is None:
        res["problems"].append(f"widget {k}: not found")
        return
    settle_scroll(page, view.first)
    info = discover(page, k)       # measured once scrolled into view (its cell laid out)
    view.first.screenshot(path=f"{prefix}.png")
    for w in info["wide"]:
        res["problems"].append(f"widget {k}: a control row is wider than the notebook panel: {w}")
    if not info["controls"]:
        res["notes"].append(f"widget {k}: no controls")
    if info["outputs"] == 0 and info["controls"]:
        res["problems"].append(f"widget {k}: no Output area to watch (its controls change nothing visible)")
    undo = []                      # (j, control as it was after the move, undo record)
    for j in range(len(info["controls"])):
        if budget.left() < 20:
            res["problems"].append(f"widget {k}: out of time at control {j}")
            return
        now = discover(page, k)     # menus may have narrowed, values moved: read the control afresh
        if now is None or j >= len(now["controls"]):
            res["problems"].append(f"widget {k}: control {j} disappeared")
            continue
        c = now["controls"][j]
        while (movable(c) or "").startswith("only one") and undo:
            uj, uc, rec = undo.pop()
            before = _shots(page, k, now["outputs"])
            move(page, k, uj, uc, to=rec)
            wait_output(page, base, k, now["outputs"], before, kernel_idle)
            now = discover(page, k)
            c = now["controls"][j]
        rec = {"view": k, "kind": c["kind"], "label": c["label"], "from": c["value"], "to": "",
               "changed": False, "pixels": 0}
        why = movable(c)
        if why:
            rec["why"] = f"not moved: {why}"
            res["notes"].append(f"widget {k}: {c['kind']} {c['label']!r} not moved: {why}")
            res["controls"].append(rec)
            continue
        before = _shots(page, k, now["outputs"])
        to, back = move(page, k, j, c)
        diff, took = wait_output(page, base, k, now["outputs"], before, kernel_idle)
        after = discover(page, k)
        moved = after["controls"][j] if after and j < len(after["controls"]) else c
        rec.update(to=to or moved["value"], pixels=diff, changed=diff >= MIN_PIXELS, s=round(took, 1))
        undo.append((j, moved, back))
        view.first.screenshot(path=f"{prefix}_c{j}.png")
        what = f"moving {c['kind']} {c['label']!r} {c['value']} -> {rec['to']}"
        if not rec["changed"]:
            rec["why"] = f"NO CHANGE ({diff} px in {took:.0f} s)"
            res["problems"].append(f"widget {k}: {what} changed no output pixel ({diff} px differ)")
        elif now["pictures"] and after and not after["pictures"]:
            rec["why"] = f"changed {diff} px, but its picture is gone"
            res["problems"].append(f"widget {k}: {what}: the output's picture disappeared "
                                   f"({now['pictures']} before, none after)")
        res["controls"].append(rec)
