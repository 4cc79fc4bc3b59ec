"""A small class of made-up students for the grader: honest, damaged, cheating and hostile submissions.

`make_class(course, out)` writes out/<folder>/<notebook>.ipynb for every case below, from the course's
release/ (the student versions) and source/ (for the answer key), and an id map out/../ids.csv; it
returns the cases, each with what the grader must make of it. Run as a script to make a class by
hand (`python tests/grading_cases.py COURSE OUT`, after `python -m bwlab.tools.classroom --course
COURSE student notebooks/00_orientation.ipynb notebooks/01_tma_load.ipynb`).

The cheats are the tricks that gave full marks (or wrecked a run) under the plain nbgrader flow:
monkeypatched checks, an input transformer, set_custom_exc with a post_run_cell hook, an always-equal
int, stack walking, reading the answer key or the gradebook from the course folder, editing the
installed package or its venv (.pth), rewriting the gradebook or results, overwriting a classmate,
killing the grader, a loop that ignores signals, a huge allocation, daemons, many processes, forged
replies to the grader, and HTML in outputs. Each builds on the untouched student version, so its
honest work is worth 0 points, unless it says otherwise.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

NB0, NB1 = "00_orientation", "01_tma_load"
POINTS = {NB0: 6, NB1: 11}


@dataclass
class Case:
    folder: str                      # folder name in the submissions directory
    student: str                     # the id it must be graded under ("": it must not be graded)
    kind: str                        # honest, damaged, cheat, hostile
    expect: dict                     # notebook -> points, "FAILED:<words in the reason>", or "<=N"
    xfail: str = ""                  # a trick not defeated yet: why


# what a cheat's code can know: the grader's own paths (the worst case: a student who read this repo)
TOP, END = "top", "end"


def _cheats(course: Path, subs: Path, root: Path) -> dict[str, tuple[str, str]]:
    C, S, R = str(course), str(subs), str(root)
    return {
        "patch_checks": (TOP, """
import importlib
for mod in ("bwlab.hw.exercises", "bwlab.exercises", "bwlab.tma.exercises"):
    m = importlib.import_module(mod)
    for n in dir(m):
        if n.startswith("check"):
            setattr(m, n, lambda *a, **k: print("correct: patched"))
"""),
        "input_transformer": (TOP, """
def _blank_graded(lines):
    return ["pass\\n"] if "exercises" in "".join(lines) else lines
get_ipython().input_transformers_post.append(_blank_graded)
"""),
        "custom_exc": (TOP, """
ip = get_ipython()
ip.set_custom_exc((BaseException,), lambda self, etype, value, tb, tb_offset=None: None)
def _clear(result):
    result.error_in_exec = None
    result.error_before_exec = None
ip.events.register("post_run_cell", _clear)
"""),
        "always_equal": (END, """
class Yes(int):
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    __hash__ = int.__hash__
class YesStr(str):
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    __hash__ = str.__hash__
my_parity = (Yes(0), True, False)
my_hops = {k: (YesStr(""), YesStr("")) for k in ("TMA load", "tcgen05.mma", "tcgen05.ld", "st.shared", "TMA store")}
def my_tier(stage, cc): return YesStr("model")
def my_tile_bytes(rows, cols, dtype): return Yes(0)
"""),
        "stack_walker": (END, """
import sys
def _steal(*args):
    f = sys._getframe(1)
    while f is not None:
        for k in ("expected", "reference", "want"):
            if k in f.f_locals:
                v = f.f_locals[k]
                return v(*args) if callable(v) else v
        f = f.f_back
    return None
my_tier = my_tile_bytes = _steal
"""),
        "read_source": (END, f"""
import os, json
found = []
for top in ["../..", "../../source", {C!r}, {R!r}, "/work", "/root", "/tmp", "/"]:
    for dp, dn, fn in os.walk(top):
        dn[:] = [d for d in dn if d not in ("usr", "proc", "dev", "sys") and dp.count("/") < 7]
        for f in fn:
            if f.endswith((".ipynb", ".db", ".py")):
                p = os.path.join(dp, f)
                try:
                    t = open(p, errors="ignore").read()
                except OSError:
                    continue
                if "BEGIN SOLUTION" in t and f.endswith(".ipynb"):
                    found.append(p)
print("found", found[:5])
for p in found:
    for c in json.load(open(p))["cells"]:
        s = "".join(c["source"])
        if "BEGIN SOLUTION" in s:
            try:
                exec(s, globals())
            except Exception:
                pass
"""),
        "edit_package": (TOP, """
import os, bwlab.hw.exercises as m
for p in (m.__file__, os.path.join(os.path.dirname(os.path.dirname(m.__file__)), "exercises.py")):
    try:
        with open(p, "a") as f:
            f.write("\\ncheck_tier = check_hops = check_tile_bytes = check_mbarrier_parity = lambda *a, **k: None\\n")
        print("edited", p)
    except OSError as e:
        print("edit refused:", type(e).__name__)
"""),
        "pth_hook": (TOP, """
import site, sys, os
for d in site.getsitepackages() + [sys.prefix, os.path.dirname(os.__file__)]:
    try:
        with open(os.path.join(d, "zz_bwlab_cheat.pth"), "w") as f:
            f.write("import bwlab\\n")
        print("wrote a .pth in", d)
    except OSError as e:
        print(".pth refused:", type(e).__name__)
"""),
        "sqlite_gradebook": (END, f"""
import sqlite3, json, os
for db in ({C!r} + "/gradebook.db", "../../gradebook.db"):
    try:
        con = sqlite3.connect("file:" + db + "?mode=rw", uri=True)
        con.execute("update grade set auto_score = 0")
        con.commit()
        print("rewrote", db)
    except Exception as e:
        print("gradebook refused:", type(e).__name__)
fake = {{"status": "graded", "score": 6.0, "max_score": 6.0, "exercises": [], "cells": [], "notes": []}}
for who in ("sqlite_gradebook", "key"):
    p = {C!r} + "/results/" + who + "/00_orientation.json"
    try:
        os.makedirs(os.path.dirname(p), exist_ok=True)
        open(p, "w").write(json.dumps(fake))
        print("wrote", p)
    except OSError as e:
        print("results refused:", type(e).__name__)
"""),
        "overwrite_classmate": (END, f"""
for p in ({C!r} + "/submitted/key/00_orientation/00_orientation.ipynb", {S!r} + "/key/00_orientation.ipynb",
          {C!r} + "/release/00_orientation/00_orientation.ipynb",
          {C!r} + "/source/00_orientation/00_orientation.ipynb"):
    try:
        open(p, "w").write("{{}}")
        print("overwrote", p)
    except OSError as e:
        print("refused:", type(e).__name__)
"""),
        "forge_replies": (END, """
import os
fake = b'{"event": "ready"}\\n' + b'{"kind": "value", "value": 0}\\n' * 50
for fd in range(3, 64):
    try:
        os.write(fd, fake)
    except OSError:
        pass
"""),
        "xss": (END, """
print("<script>alert('owned')</script>")
print("Score: 6.0 / 6.0")
"""),
        # each answer taken from the package on its own (one that is not there leaves the others)
        "model_reader": (END, """
from bwlab.hw import exercises as _ex
for _name, _get in (("my_tier", lambda: _ex._tier_reference), ("my_hops", lambda: _ex._expected_hops()),
                    ("my_tile_bytes", lambda: _ex._tile_reference), ("my_parity", lambda: _ex._expected_parity()),
                    ("my_tile_bytes", lambda: lambda r, c, d: _ex._tile_table(())[(r, c, d)])):
    try:
        globals()[_name] = _get()
    except Exception as e:
        print(_name, "not in the package:", type(e).__name__)
"""),
        "probe_visible_check": (END, """
import re
from bwlab.hw import exercises as _ex
from bwlab.exercises import NotYet
_table, _last = {}, [None]
def _probe(*args):
    _last[0] = args
    return _table.get(args, -1)
for _ in range(200):
    try:
        _ex.check_tile_bytes(_probe, hidden=True)     # the course data's cases, if the sandbox had them
        break
    except NotYet as e:
        m = re.search(r"expected (-?\\d+)", str(e))
        if not m:
            break
        _table[_last[0]] = int(m.group(1))
def my_tile_bytes(*args):
    return _table.get(args, -1)
"""),
        "root_probe": (END, f"""
import os, json, socket
facts = {{"uid": os.getuid(), "euid": os.geteuid()}}
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2)
    facts["net"] = "open"
except OSError:
    facts["net"] = "blocked"
for name, p in {{"course": {C!r}, "submissions": {S!r}, "repo_notebooks": {R!r} + "/notebooks",
                "repo_tests": {R!r} + "/tests", "course_data": {R!r} + "/course_data"}}.items():
    facts["sees_" + name] = os.path.exists(p)
import bwlab
try:
    open(bwlab.__file__, "a").close()
    facts["package_writable"] = True
except OSError:
    facts["package_writable"] = False
try:
    os.setuid(0)
    facts["setuid0"] = True
except OSError:
    facts["setuid0"] = False
facts["id_u"] = os.popen("id -u 2>&1").read().strip()
facts["tmp"] = sorted(f for f in os.listdir("/tmp") if not f.startswith("."))
from bwlab.exercises import course_data_dir
facts["course_data_found"] = course_data_dir() is not None
try:
    open("/tmp/00_orientation.ipynb", "a").close()
    facts["own_copy_writable"] = True
except OSError:
    facts["own_copy_writable"] = False
print("FACTS " + json.dumps(facts))
"""),
    }


HOSTILE = {   # answers of the key plus this: the honest work is the full score, unless FAILED is expected
    "kill_parent": """
import os, signal
os.kill(os.getppid(), signal.SIGKILL)
os.kill(-1, signal.SIGKILL)
""",
    "signal_ignoring_loop": """
import signal
for s in (signal.SIGINT, signal.SIGALRM, signal.SIGTERM):
    signal.signal(s, signal.SIG_IGN)
while True:
    pass
""",
    "endless_loop": "while True:\n    pass\n",
    "huge_allocation": "hog = bytearray(8 << 30)\n",
    "lone_surrogates": "print('\\ud800 and \\udfff')\nraise ValueError('\\udfff')\n",
    # 25 cells of 1 MB each, and 100 MB straight to fd 1: past the per-cell and the per-notebook caps
    "output_flood": "\n# %%\n".join(["import os\nos.write(1, b'y' * 100_000_000)"] + ["print('x' * 1_000_000)"] * 25),
    "endless_function": "def my_tile_bytes(rows, cols, dtype):\n    while True:\n        pass\n",
    "function_ignoring_signals": """
import signal
def my_tile_bytes(rows, cols, dtype):
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    while True:
        pass
""",
    "daemons": """
import os, subprocess, time
subprocess.Popen(["sleep", "600"], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(600)
    os._exit(0)
""",
    "many_processes": """
import os, time
kids = 0
try:
    for i in range(300):
        pid = os.fork()
        if pid == 0:
            time.sleep(600)
            os._exit(0)
        kids += 1
except OSError as e:
    print("stopped after", kids, type(e).__name__)
""",
}

# the tricks of a later round, each on top of the right answers; None: the honest work's full score
_REPLY_FDS = """
import fcntl, os
def _reply_fds():
    out = []
    for fd in range(3, 64):
        try:
            link, mode = os.readlink(f"/proc/self/fd/{fd}"), fcntl.fcntl(fd, fcntl.F_GETFL) & 3
        except OSError:
            continue
        if link.startswith("pipe:") and mode == os.O_WRONLY:
            out.append(fd)
    return out
def _send(fd, data):
    while data:
        data = data[os.write(fd, data):]
"""
LATER = {   # name: (code, what the grader must make of it)
    # forged cell reports of 8 MB each straight onto the grader's channel: past every output cap
    "forged_output": (_REPLY_FDS + """
import json
for fd in _reply_fds():
    for i in range(4):
        _send(fd, (json.dumps({"event": "cell", "index": i, "stdout": "F" * 8_000_000, "stderr": "", "error": None,
                               "seconds": 0}) + "\\n").encode())
""", "FAILED:not the runner's report"),
    # 'ready' and a thousand replies written in advance, then a cell that never ends (the alarm ignored)
    "forged_ready": (_REPLY_FDS + """
import signal, time
for fd in _reply_fds():
    _send(fd, b'{"event": "ready"}\\n' + b'{"kind": "function"}\\n' * 1000)
signal.signal(signal.SIGALRM, signal.SIG_IGN)
while True:
    time.sleep(1)
""", "FAILED:not the runner's report"),
    # a function just under the per-call limit on every one of the check's cases: its exercise, no more
    "slow_function": ("""
import time
_right = my_tile_bytes
def my_tile_bytes(rows, cols, dtype):
    time.sleep(1.5)
    return _right(rows, cols, dtype)
""", 5),
    # the sandbox's process ends itself after the answers, before the grader asked for them
    "exit_early": ("import os\nos._exit(0)", "FAILED:did not run to its end"),
}

NOISE = """
import sys, warnings, logging
print("a note on stderr", file=sys.stderr)
warnings.warn("careful with this one")
logging.getLogger("mine").warning("logged")
"""


def _read(path):
    import nbformat
    return nbformat.read(str(path), as_version=4)


def _write(nb, path: Path) -> None:
    import nbformat
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))


def _code(source: str):
    import nbformat
    return nbformat.v4.new_code_cell(source.strip("\n"))


def make_class(course: Path, out: Path, root: Path | None = None) -> list[Case]:
    """Write every case's submission into `out` (and out.parent/'ids.csv'); return the cases."""
    import nbformat
    from bwlab.tools import classroom as cls
    root = root or Path(__file__).resolve().parents[1]
    course, out = Path(course), Path(out)
    rel = {a: course / "release" / a / f"{a}.ipynb" for a in (NB0, NB1)}
    key = {a: cls.answer_key(course / "source" / a / f"{a}.ipynb") for a in (NB0, NB1)}
    cases: list[Case] = []

    def student(folder, nb, filename=None, sid=None, kind="honest", expect=None, xfail=""):
        sid = folder if sid is None else sid
        name = filename or f"{NB0}.ipynb"
        if isinstance(nb, bytes):
            (out / folder).mkdir(parents=True, exist_ok=True)
            (out / folder / name).write_bytes(nb)
        else:
            _write(nb, out / folder / name)
        if expect is not None:
            cases.append(Case(folder, sid, kind, expect, xfail))

    from bwlab import variants
    from bwlab.hw import exercises as orient_ex
    from bwlab.tma import exercises as tma_ex
    if not variants.secret_file(course).exists():     # every student on their own numbers; a fixed secret,
        variants.secret_file(course).write_text("grading-cases " + "5eed" * 16 + "\n")   # so the class is the same
    secret = variants.read_secret(course)

    def parity_of(sid):                    # the right answer to 0.4 for this student's numbers
        count, b1, b2, landed = orient_ex.parity_numbers(variants.token_for(secret, sid))
        phases = (count == 1) + (landed == b2)
        return phases, phases % 2 == 1, phases % 2 == 0

    keyed = cls.fill_in(rel[NB0], key[NB0])
    blank = _read(rel[NB0])
    # --- honest
    student("key", keyed, expect={NB0: 6, NB1: 11})
    _write(cls.fill_in(rel[NB1], key[NB1]), out / "key" / f"{NB1}.ipynb")
    student("blank", blank, expect={NB0: 0})
    half = cls.fill_in(rel[NB0], {**cls.answer_key(rel[NB0]), "orient_tier": key[NB0]["orient_tier"],
                                  "orient_hops": key[NB0]["orient_hops"]})
    student("half", half, expect={NB0: 3})
    student("noisy", cls.fill_in(rel[NB0], {g: NOISE + src for g, src in key[NB0].items()}), expect={NB0: 6})
    phases, w0, w1 = parity_of("floats")
    floaty = dict(key[NB0], orient_parity=f"my_parity = ({float(phases)!r}, {w0}, {w1})")
    student("floats", cls.fill_in(rel[NB0], floaty), expect={NB0: 6})
    tx = float(tma_ex.edit_tmap(variants.token_for(secret, "float768")).tx_bytes)       # e.g. 768.0
    student("float768", cls.fill_in(rel[NB1], dict(key[NB1], tma_expect_tx_edit=f"my_expect_tx = {tx!r}")),
            filename=f"{NB1}.ipynb", expect={NB1: 11})
    # a neighbour's values: the right answers to 0.4, 1.1 and 1.3 of student "key", copied as values;
    # they earn nothing where that student's numbers give another answer than this one's
    def tx_of(sid):
        return tma_ex.edit_tmap(variants.token_for(secret, sid)).tx_bytes

    def rules_of(sid):
        maps = tma_ex.rule_candidates(variants.token_for(secret, sid))
        return {k: tma_ex._verdict(kw)[0] for k, kw in maps.items()}
    lost0, lost1 = 2 * (parity_of("key") != parity_of("neighbour")), 2 * (tx_of("key") != tx_of("neighbour"))
    lost1 += 2 * (rules_of("key") != rules_of("neighbour"))
    assert lost0 or lost1, "the fixed secret gives 'neighbour' the answers of 'key': choose another"
    student("neighbour", cls.fill_in(rel[NB0], dict(key[NB0], orient_parity=f"my_parity = {parity_of('key')!r}")),
            kind="cheat", expect={NB0: 6 - lost0, NB1: 11 - lost1})
    _write(cls.fill_in(rel[NB1], dict(key[NB1], tma_expect_tx_edit=f"my_expect_tx = {tx_of('key')}",
                                      tma_broken_rule=f"my_rules = {rules_of('key')!r}")),
           out / "neighbour" / f"{NB1}.ipynb")
    renamed = cls.fill_in(rel[NB0], key[NB0])
    graded = [c for c in renamed.cells if cls._nbgrader(c).get("grade")]
    for c in renamed.cells:
        m = cls._nbgrader(c)
        if m.get("grade_id") == "orient_hops":
            m["grade_id"] = "orient_hops_renamed"
    import copy
    dup = copy.deepcopy(graded[0])
    renamed.cells.insert(renamed.cells.index(graded[0]) + 1, dup)      # a duplicated graded cell
    cls._nbgrader(graded[1])["grade"] = False                           # a graded cell made not graded
    student("renamed_cells", renamed, expect={NB0: 6})
    kinds = dict(key[NB0], orient_parity=("from collections import namedtuple\n"
                                          "Parity = namedtuple('Parity', 'phases even odd')\n"
                                          "my_parity = Parity(*{!r})".format(parity_of("subclass_answers"))))
    kinds["orient_hops"] = "from collections import OrderedDict\n" + key[NB0]["orient_hops"] + \
        "\nmy_hops = OrderedDict(my_hops)"
    student("subclass_answers", cls.fill_in(rel[NB0], kinds), expect={NB0: 6})
    helper = cls.fill_in(rel[NB0], dict(key[NB0], orient_parity="my_parity = _mine()"))
    helper.cells.insert(1, _code("def _mine():\n    return (1, True, False)"))
    student("scratch_cells", helper, expect={NB0: 6})
    # --- damaged and strangely named
    raw = json.dumps(keyed).encode()
    student("truncated", raw[: len(raw) // 2], kind="damaged", expect={NB0: "FAILED:not a readable notebook"})
    student("not_json", b"this is not a notebook", kind="damaged", expect={NB0: "FAILED:not a readable notebook"})
    student("Smith, Alice_12345_assignsubmission_file_", keyed, sid="asmith", kind="damaged", expect={NB0: 6})
    _write(keyed, out / "Doe, John_67890_assignsubmission_file_" / "inner" / f"{NB0} (1).ipynb")
    cases.append(Case("Doe, John_67890_assignsubmission_file_", "jdoe", "damaged", {NB0: 6}))
    student("Bobby'); DROP TABLE students;--", keyed, sid="", kind="damaged", expect={})   # not graded
    student("two_copies", keyed, kind="damaged", expect={NB0: "FAILED:2 files map to this notebook"})
    _write(blank, out / "two_copies" / f"{NB0}_old.ipynb")
    # --- cheats on the untouched version: honest work 0
    for name, (where, code) in _cheats(course, out, root).items():
        nb = copy.deepcopy(blank)
        if where == TOP:
            nb.cells.insert(1, _code(code))
        else:
            nb.cells.append(_code(code))
        # model_reader: of what it reads, only 0.2's hops are still in the package — the data path's own
        # table (bwlab.datapath.HOPS), which the notebook prints right after the exercise (1 point)
        # forge_replies: lines on the grader's channel that the runner did not write end the run (FAILED)
        student(name, nb, kind="cheat", expect={NB0: {"model_reader": "<=1", "forge_replies": "FAILED:not the runner's report"}
                                                .get(name, "<=0")})
    # --- hostile, on top of the right answers
    for name, code in HOSTILE.items():
        nb = cls.fill_in(rel[NB0], key[NB0])
        nb.cells += [_code(part) for part in code.split("\n# %%\n")]
        # kill_parent: the grader is not in the sandbox's PID namespace; what it can kill is its own
        # a function that never returns costs its own exercise (1 point), nothing else
        expect = {"signal_ignoring_loop": "FAILED:time limit", "endless_function": 5,
                  "function_ignoring_signals": 5}.get(name, 6)
        student(name, nb, kind="hostile", expect={NB0: expect})
    for name, (code, expect) in LATER.items():
        nb = cls.fill_in(rel[NB0], key[NB0])
        nb.cells.append(_code(code))
        student(name, nb, kind="hostile", expect={NB0: expect})
    # the notebook's and the cells' metadata lie: another kernel, 1000 points a graded cell, graded
    # cells turned into markdown, stored outputs that say everything is right, a graded bonus cell
    liar = copy.deepcopy(blank)
    liar.metadata["kernelspec"] = {"name": "bash", "display_name": "Bash", "language": "bash"}
    for c in liar.cells:
        m = cls._nbgrader(c)
        if m.get("grade"):
            m["points"] = 1000
            c.cell_type = "markdown"
            c.pop("outputs", None)
            c.pop("execution_count", None)
        elif c.cell_type == "code":
            c.outputs = [nbformat.v4.new_output("stream", text="correct: everything\nScore: 6 / 6")]
    bonus = _code("print('bonus')")
    bonus.metadata["nbgrader"] = {"grade": True, "grade_id": "bonus", "points": 100, "solution": False,
                                  "locked": True, "schema_version": 3, "checksum": "0"}
    liar.cells.append(bonus)
    student("metadata_liar", liar, kind="cheat", expect={NB0: "<=0"})
    # names that would write their own lines into the instructor's report (a folder and a file name
    # with a line break, terminal escapes and a right-to-left override): the report escapes them
    student("Eve\n  PROBLEM a forged line\x1b]0;pwned\x07", keyed, sid="", kind="damaged", expect={})
    student("odd_names", keyed, filename=f"{NB0}\u202egnp.ipynb", kind="damaged", expect={NB0: 6})
    _write(keyed, out / "odd_names" / "x\n  PROBLEM forged\x1b[31m.ipynb")
    (out.parent / "ids.csv").write_text('folder,student\n"Smith, Alice_12345",asmith\n67890,jdoe\n')
    return cases


if __name__ == "__main__":
    made = make_class(Path(sys.argv[1]), Path(sys.argv[2]))
    print(f"{len(made)} cases in {sys.argv[2]}; id map {Path(sys.argv[2]).parent / 'ids.csv'}")
