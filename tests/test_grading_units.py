"""The grader's parts that need no sandbox: plain data across the wall, the id map, collecting a
folder, the sandbox's command line, the feedback page's escaping (bwlab.tools.grading, .plain)."""
import json
import math
import os
import sys

import numpy as np
import pytest
from pathlib import Path

from bwlab.tools import grading, plain

sys.path.insert(0, str(Path(__file__).parent))
import grading_cases as gc  # noqa: E402


@pytest.mark.parametrize("value", [None, True, 3, -2 ** 70, 2.5, "text", ..., [1, (2, "x")], (1, [2.5]),
                                   {"a": (1, 2), 3: None}, {1, 2}, np.arange(6, dtype=np.uint16).reshape(2, 3)])
def test_plain_round_trip_keeps_exact_types(value):
    got = plain.decode(json.loads(json.dumps(plain.encode(value))))
    if isinstance(value, np.ndarray):
        assert got.dtype == value.dtype and np.array_equal(got, value)
    else:
        assert got == value and type(got) is type(value)
        if isinstance(value, tuple):
            assert type(got[1]) is list


def test_numbers_compare_by_value():
    assert type(plain.decode(plain.encode(768.0))) is int and plain.decode(plain.encode(768.0)) == 768
    assert type(plain.decode(plain.encode(768.0), by_value=False)) is float
    assert plain.decode(plain.encode(np.int64(5))) == 5 and type(plain.decode(plain.encode(np.int64(5)))) is int
    assert math.isnan(plain.decode(plain.encode(float("nan"))))


def test_subclasses_travel_as_their_base_values():
    from collections import OrderedDict, namedtuple

    class Yes(int):
        def __eq__(self, other):
            return True

        def __int__(self):
            return 99

    class Loud(str):
        def __eq__(self, other):
            return True

    pair = namedtuple("pair", "thread register")
    got = plain.decode(plain.encode([Yes(3), Loud("x"), pair(1, 2), OrderedDict(a=1)]))
    assert got == [3, "x", (1, 2), {"a": 1}] and got[0] != 4 and got[1] != "y"
    assert [type(v) for v in got] == [int, str, tuple, dict]


def test_objects_that_are_not_plain_data_are_refused():
    class Thing:
        pass

    for bad in ({"k": Thing()}, [1, Thing()], np.array([object()]), (x for x in [1]), lambda: 1, Thing):
        with pytest.raises(plain.NotPlain):
            plain.encode(bad)
    with pytest.raises(plain.NotPlain, match="too large"):
        plain.encode([0] * (plain.MAX_ITEMS + 1))


@pytest.mark.parametrize("data", [{"pickle": "x"}, {"ndarray": "object", "shape": [1], "b64": ""}, {"tuple": 3},
                                  {"dict": [[1]]}])
def test_decode_refuses_what_encode_cannot_write(data):
    with pytest.raises((ValueError, TypeError)):
        plain.decode(data)


def test_text_that_could_reach_a_compiler_is_refused():
    payload = {"kind": "value", "value": {"tuple": ['0\n#include "/course/source/x.ipynb"', "0"]}}
    with pytest.raises(grading.NotAnAnswer, match="one line"):
        grading._reply_value(payload, "my_store_coords")
    assert grading._reply_value({"kind": "value", "value": {"tuple": ["blockIdx.x * BN", "0"]}}, "c") == \
        ("blockIdx.x * BN", "0")


def test_a_learner_exception_keeps_its_name_and_not_implemented_means_no_answer():
    with pytest.raises(Exception) as e:
        grading._reply_value({"kind": "raised", "ename": "KeyError", "evalue": "'f32'"}, "f")
    assert type(e.value).__name__ == "KeyError" and not isinstance(e.value, KeyError)   # made here, inert
    with pytest.raises(NotImplementedError):
        grading._reply_value({"kind": "raised", "ename": "NotImplementedError", "evalue": ""}, "f")
    with pytest.raises(Exception) as e:
        grading._reply_value({"kind": "raised", "ename": "os.system('x')", "evalue": ""}, "f")
    assert type(e.value).__name__ == "Exception"


def test_student_of_folders_and_the_id_map(tmp_path):
    ids = tmp_path / "ids.csv"
    ids.write_text('folder,student\n"Smith, Alice_12345",asmith\n67890,jdoe\n"Lee, Ann",lee\n"Lee, Ann_2",lee2\n')
    m = grading.load_id_map(ids)
    assert grading.student_of("Smith, Alice_12345_assignsubmission_file_", m) == ("asmith", "")
    assert grading.student_of("Doe, John_67890_assignsubmission_file_", m) == ("jdoe", "")
    assert grading.student_of("bob", m) == ("bob", "")
    sid, why = grading.student_of("Lee, Ann_2_assignsubmission_file_", m)
    assert sid is None and "more than one student (lee, lee2)" in why
    sid, why = grading.student_of("Mallory <x>", None)
    assert sid is None and "id map" in why
    (tmp_path / "bad.csv").write_text("name,id\na,b\n")
    with pytest.raises(grading.GradingError, match="columns folder,student"):
        grading.load_id_map(tmp_path / "bad.csv")


def test_collect_refuses_two_files_for_one_notebook_and_links(tmp_path):
    course, subs = tmp_path / "course", tmp_path / "subs"
    (course / "source" / "00_x").mkdir(parents=True)
    (course / "source" / "00_x" / "00_x.ipynb").write_text(json.dumps({"cells": []}))
    (subs / "amy").mkdir(parents=True)
    (subs / "amy" / "00_x.ipynb").write_text("{}")
    (subs / "amy" / "00_x_final.ipynb").write_text("{}")
    (subs / "eve").mkdir()
    (subs / "eve" / "00_x.ipynb").symlink_to(course / "source" / "00_x" / "00_x.ipynb")
    (subs / "ok").mkdir()
    (subs / "ok" / "00_x (2).ipynb").write_text("{}")
    (subs / "ok" / "notes.ipynb").write_text("{}")
    (subs / "pipe").mkdir()
    os.mkfifo(subs / "pipe" / "00_x.ipynb")                    # reading it would wait for ever
    (subs / "big").mkdir()
    with open(subs / "big" / "00_x.ipynb", "wb") as f:
        f.truncate(grading.MAX_NOTEBOOK + 1)
    copied, problems = grading.collect(course, subs)
    text = "\n".join(map(str, problems))
    assert copied == [course / "submitted" / "ok" / "00_x" / "00_x.ipynb"]
    assert "amy / 00_x: 2 files map to this notebook (00_x.ipynb, 00_x_final.ipynb); none was graded" in text
    assert "eve / 00_x.ipynb: ignored: a symbolic link" in text
    assert "ok / notes.ipynb: ignored: its name begins with no notebook's name" in text
    assert "pipe / 00_x.ipynb: ignored: not a regular file" in text
    assert "big / 00_x.ipynb: ignored: 50 MiB; a notebook here is under 50 MiB" in text
    amy = json.loads((course / "results" / "amy" / "00_x.json").read_text())
    assert amy["status"] == "FAILED" and "2 files" in amy["reason"]


def test_collect_refuses_two_folders_that_map_to_one_student(tmp_path):
    course, subs = tmp_path / "course", tmp_path / "subs"
    (course / "source" / "00_x").mkdir(parents=True)
    (course / "source" / "00_x" / "00_x.ipynb").write_text(json.dumps({"cells": []}))
    for folder in ("asmith", "Smith, Alice_12345_assignsubmission_file_"):
        (subs / folder).mkdir(parents=True)
        (subs / folder / "00_x.ipynb").write_text(json.dumps({"cells": [], "from": folder}))
    copied, problems = grading.collect(course, subs, {"12345": "asmith"})
    assert copied == []
    assert [str(p) for p in problems] == [
        "asmith / 00_x: 2 files map to this notebook (Smith, Alice_12345_assignsubmission_file_/00_x.ipynb, "
        "asmith/00_x.ipynb); none was graded: keep one"]


def test_sandbox_missing_says_what_to_do(monkeypatch):
    monkeypatch.setattr(grading.shutil, "which", lambda name: None)
    with pytest.raises(grading.GradingError, match="apt-get install -y bubblewrap.*docs/teaching.md"):
        grading.sandbox_mode("bwrap")


def test_sandbox_command_shows_nothing_of_the_course(tmp_path):
    cmd = grading.sandbox_command("/venv/bin/python", tmp_path, grading.Limits(), "bwrap")
    assert cmd[0] == "bwrap" and "--unshare-net" in cmd and "--unshare-pid" in cmd and "--die-with-parent" in cmd
    assert "--bind" not in cmd                                  # nothing writable but the private tmpfs
    ro = [cmd[i + 1] for i, c in enumerate(cmd) if c == "--ro-bind"]
    assert str(grading.ROOT) not in ro and str(grading.PACKAGE) in ro
    import sys
    # inside the checkout only the package, the CUDA sources, the GPU results and (where the checkout holds
    # it, as `make` makes it) the venv that runs the learner's notebook: never the course folder
    allowed = (str(grading.PACKAGE), str(grading.ROOT / "cuda_src"), str(grading.ROOT / "docs" / "results"),
               str(Path(sys.prefix)))
    assert all(not p.startswith(str(grading.ROOT)) or p in allowed for p in ro), ro
    assert not any(p.startswith(str(grading.ROOT / "build")) for p in ro)
    assert cmd[cmd.index("setpriv"):cmd.index("setpriv") + 3] == ["setpriv", "--reuid=65534", "--regid=65534"]


def test_feedback_escapes_everything_the_learner_wrote():
    result = {"student": "a<b>", "assignment": "00_x", "status": "graded", "score": 0.0, "max_score": 1.0,
              "notes": ["<img src=x onerror=alert(1)>"],
              "exercises": [{"grade_id": "g", "points": 0.0, "max_points": 1.0, "passed": False,
                             "message": "NotYet: you have '<script>'"}],
              "cells": [{"type": "markdown", "source": "<h2>Score: 1 / 1</h2>", "run": None},
                        {"type": "code", "source": "print('<script>')", "run": "", "stdout": "<script>x</script>",
                         "stderr": "", "error": {"ename": "E<", "evalue": "<b>"}},
                        {"type": "graded", "grade_id": "g", "source": "check(x)", "run": ""}]}
    page = grading.feedback_html(result)
    assert "<script>" not in page and "<img" not in page and "<h2>Score: 1 / 1" not in page
    assert page.count("<h2>Score:") == 1 and "<h2>Score: 0 / 1</h2>" in page


def test_a_sandbox_that_cannot_start_stops_the_batch_with_its_words(monkeypatch):
    monkeypatch.setattr(grading.sandbox, "sandbox_command",
                        lambda *a: ["sh", "-c", "echo 'bwrap: No permissions to create new namespace' >&2; exit 1"])
    with pytest.raises(grading.GradingError, match="does not start on this machine: .*No permissions to create"):
        grading.preflight(grading.Limits(), "none")


def test_grading_without_student_versions_says_to_make_them(tmp_path):
    course = tmp_path / "course"
    (course / "source" / "00_x").mkdir(parents=True)
    (course / "source" / "00_x" / "00_x.ipynb").write_text(json.dumps({"cells": []}))
    (course / "submitted" / "amy" / "00_x").mkdir(parents=True)
    (course / "submitted" / "amy" / "00_x" / "00_x.ipynb").write_text(json.dumps({"cells": []}))
    with pytest.raises(grading.GradingError, match="no student version of 00_x .*make student"):
        grading.grade_all(course, sandbox="none")


def test_a_link_in_submitted_is_not_graded(tmp_path):
    course = tmp_path / "course"
    for d in ("source", "release"):
        (course / d / "00_x").mkdir(parents=True)
        (course / d / "00_x" / "00_x.ipynb").write_text(json.dumps({"cells": []}))
    (course / "submitted" / "eve" / "00_x").mkdir(parents=True)
    (course / "submitted" / "eve" / "00_x" / "00_x.ipynb").symlink_to(course / "source" / "00_x" / "00_x.ipynb")
    batch = grading.grade_all(course, sandbox="none")
    assert [str(p) for p in batch.problems] == ["eve / 00_x: submitted/ holds a link or a special file here: not graded"]
    assert batch.graded == []


@pytest.mark.parametrize("text, words", [
    ('{"cells": [', "not a readable notebook"),
    ("[1, 2]", "not a notebook"),
    ('{"cells": [1]}', "cells are not readable"),
    (json.dumps({"cells": [{"cell_type": "code", "source": ""}] * (grading.MAX_CELLS + 1)}), "more than 2000"),
])
def test_read_submission_says_why_a_file_is_not_graded(tmp_path, text, words):
    (tmp_path / "x.ipynb").write_text(text)
    with pytest.raises(ValueError, match=words):
        grading.read_submission(tmp_path / "x.ipynb")


def test_the_sandbox_is_not_set_up_without_root(monkeypatch):
    monkeypatch.setattr(grading.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(grading.os, "geteuid", lambda: 1000)
    with pytest.raises(grading.GradingError, match="run the grader as root"):
        grading.sandbox_mode("bwrap")
    assert grading.sandbox_mode("none") == "none"


def test_decode_refuses_more_elements_than_encode_writes():
    """A reply need not come from `encode` (the learner's code can write onto the channel): its size is
    checked again here, a list and an array alike."""
    with pytest.raises(ValueError, match="more than"):
        plain.decode([0] * (plain.MAX_ITEMS + 1))
    with pytest.raises(ValueError, match="more than"):
        plain.decode({"dict": [[i, [0] * 1000] for i in range(plain.MAX_ITEMS // 1000 + 1)]})
    big = np.zeros(plain.MAX_ITEMS + 1, dtype=np.uint8)
    with pytest.raises(ValueError, match="more than"):
        plain.decode({"ndarray": "uint8", "shape": [big.size], "b64": __import__("base64").b64encode(big).decode()})
    assert len(plain.decode([0] * 1000)) == 1000


def test_printable_escapes_what_could_write_into_the_report():
    assert grading.printable("a\nb\x1b[31m\u202egnp\udfff ok é") == "a\\nb\\x1b[31m\\u202egnp\\udfff ok é"
    assert str(grading.Problem("Eve\n  PROBLEM x", "f\x07", "why")) == "Eve\\n  PROBLEM x / f\\x07: why"


# the learner's code that finds the grader's reply channel (the trick the graded class uses) and writes LINES onto it
_FORGE = gc._REPLY_FDS + """
for fd in _reply_fds():
    _send(fd, LINES)
"""


@pytest.mark.parametrize("lines", [b'{"event": "ready"}\n', b'{"event": "cell", "index": 0, "stdout": "x"}\n',
                                   b'{"event": "cell", "index": 5, "stdout": "x"}\n'])
def test_lines_the_learner_writes_onto_the_reply_channel_end_the_run(lines):
    cells = ["x = 1", f"LINES = {lines!r}\n" + _FORGE, "y = 2"]
    with pytest.raises(grading.SandboxGone, match="not the runner's report"):
        grading.Session(cells, grading.Limits(), "none").close()


def test_a_reply_written_before_the_question_is_refused():
    """A thread of the notebook writes a well-formed reply once the cells have run, before the grader
    asks: it lacks the question's id."""
    import time
    forge = "def _forge():\n" + "\n".join("    " + l for l in _FORGE.strip().splitlines())
    s = grading.Session(["import threading\nx = 1\nLINES = b'{\"kind\": \"value\", \"value\": 7}\\n'\n" + forge
                         + "\nthreading.Timer(0.3, _forge).start()"], grading.Limits(), "none")
    try:
        time.sleep(1.5)
        with pytest.raises(grading.NotAnAnswer, match="did not answer the grader's question .not the runner's report"):
            s.ask("get", "x")
    finally:
        s.close()


def test_the_learners_calls_of_one_exercise_share_a_time_budget():
    s = grading.Session(["import time\ndef slow(n):\n    time.sleep(0.4)\n    return n"],
                        grading.Limits(call_timeout=2, exercise_calls_s=1.0), "none")
    try:
        f = grading._LearnerFunction(s, "slow")
        assert [f(i) for i in range(3)] == [0, 1, 2]         # 1.2 s: the budget is spent after the third
        with pytest.raises(grading.NotAnAnswer, match="more than the 1 s one exercise may take"):
            f(3)
        s.exercise()                                          # the next graded cell starts afresh
        assert f(4) == 4
    finally:
        s.close()


def _planned(*sources, answer=None):
    """plan()'s cells for these code sources (the one at index `answer` is an answer cell)."""
    return [{"type": "code", "source": s, "run": s} for s in sources]


def test_demonstration_cells_that_nothing_needs_are_not_run():
    release = {"import numpy as np", "demo = np.arange(3)\nprint(demo.sum())", "x = np.ones(2)", "print(x)",
               "cfg.mode = 'fast'", "log.append(1)", "%timeit np.ones(2)", "my_answer = 1", "for i in range(3):\n    print(i)"}
    cells = _planned("import numpy as np", "demo = np.arange(3)\nprint(demo.sum())", "x = np.ones(2)", "print(x)",
                     "my_answer = 2", "for i in range(3):\n    print(i)")
    # demo: nothing reads it; x: read by print(x), a demonstration that is itself skipped; the loop: its
    # i is read by nothing after it; np: read by skipped cells only; my_answer: an answer (and changed)
    assert grading.skippable(cells, release, {"my_answer"}) == {0, 1, 2, 3, 5}
    # a learner's cell that reads x keeps x's cell; a changed demonstration runs
    cells = _planned("import numpy as np", "x = np.ones(2)", "y = x * 2", "demo = np.arange(3)\nprint(demo.sum()) ")
    assert grading.skippable(cells, release, set()) == set()
    # a cell that binds an answer name, or changes an object it did not make, or is followed by a cell
    # that cannot be parsed (a magic reads whatever it likes), runs
    assert grading.skippable(_planned("my_answer = 1"), release, {"my_answer"}) == set()
    assert grading.skippable(_planned("cfg = object()", "cfg.mode = 'fast'", "log = []", "log.append(1)"), release,
                             set()) == set()
    assert grading.skippable(_planned("import numpy as np", "x = np.ones(2)", "%timeit np.ones(2)"), release, set()) == set()
    # a call that may change a module's state (a seed, a setting) runs
    release |= {"np.random.seed(0)", "plt.rcParams.update({})"}
    assert grading.skippable(_planned("import numpy as np", "np.random.seed(0)", "plt.rcParams.update({})"), release,
                             set()) == set()
    # bound again before it is read: the earlier binding is not needed
    assert grading.skippable(_planned("import numpy as np", "x = np.ones(2)", "x = 3\nprint(x)"), release, set()) == {0, 1}
    # read inside a comprehension that binds the same name: not a read of the cell's name
    assert grading.skippable(_planned("import numpy as np", "x = np.ones(2)", "print([x for x in range(2)])"), release, set()) == {0, 1}
    assert grading.skippable(_planned("import numpy as np", "x = np.ones(2)", "print([x + i for i in range(2)])"), release, set()) == set()


def test_bench_refuses_a_folder_that_is_not_its_own(tmp_path):
    """`classroom bench` starts from an empty work folder: it never deletes one it did not make."""
    from bwlab.tools import classroom as cls
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(cls.ClassroomError, match="holds no earlier bench"):
        cls.bench_class(1, tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"
