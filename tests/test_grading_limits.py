"""The grader's limits without a class: collecting hostile folder trees, the jailed checks (memory,
CPU, the conversation with the sandbox kept), the visible checks' hidden= (no oracle), the seccomp
filter and the cgroups (bwlab.tools.grading.collect, .jail, .isolation; bwlab.exercises)."""
import json
import os
import struct
import sys
import time
from pathlib import Path

import pytest

from bwlab import exercises
from bwlab.tools import grading
from bwlab.tools.grading import collecting, isolation, jail

sys.path.insert(0, str(Path(__file__).parent))
from grading_hostile import rm_tree  # noqa: E402


def _course(tmp_path):
    course, subs = tmp_path / "course", tmp_path / "subs"
    (course / "source" / "00_x").mkdir(parents=True)
    (course / "source" / "00_x" / "00_x.ipynb").write_text(json.dumps({"cells": []}))
    subs.mkdir()
    return course, subs


def test_collect_refuses_a_linked_student_folder_and_names_odd_ones(tmp_path):
    course, subs = _course(tmp_path)
    (subs / "amy").mkdir()
    (subs / "amy" / "00_x.ipynb").write_text("{}")
    (subs / "bob").symlink_to(subs / "amy")                       # bob hands in amy's folder
    (subs / "..evil").mkdir()
    (subs / "..evil" / "00_x.ipynb").write_text("{}")
    (subs / "notes.txt").write_text("")
    (subs / "__MACOSX").mkdir()
    copied, problems = grading.collect(course, subs)
    text = "\n".join(map(str, problems))
    assert copied == [course / "submitted" / "amy" / "00_x" / "00_x.ipynb"]
    assert "bob / (folder): not graded: a symbolic link" in text
    assert "..evil / (folder): not graded: a hidden folder" in text
    assert "notes.txt / (file): not graded: not in a student's folder" in text
    assert "__MACOSX" not in text and not (course / "submitted" / "bob").exists()


def test_collect_walks_a_deep_folder_without_recursion_and_says_where_it_stopped(tmp_path):
    course, subs = _course(tmp_path)
    (subs / "deep").mkdir()
    (subs / "deep" / "00_x.ipynb").write_text("{}")
    d = subs / "deep"
    for _ in range(1000):                                        # RecursionError for a recursive glob
        d = d / "d"
        os.mkdir(d)
    (d / "00_x_old.ipynb").write_text("{}")
    (subs / "wide").mkdir()
    for i in range(collecting.MAX_ENTRIES + 10):
        (subs / "wide" / f"f{i}").write_text("")
    (subs / "amy").mkdir()
    (subs / "amy" / "00_x.ipynb").write_text("{}")
    t0 = time.monotonic()
    try:
        copied, problems = grading.collect(course, subs)
    finally:
        rm_tree(subs / "deep")                   # pytest's own clean-up cannot remove a 1000-deep folder
    assert time.monotonic() - t0 < 30
    text = "\n".join(map(str, problems))
    assert sorted(p.parts[-3] for p in copied) == ["amy", "deep"]     # the one 1000 folders down is not seen
    assert f"not searched: deeper than {collecting.MAX_DEPTH} folders" in text
    assert f"wide / (folder): more than {collecting.MAX_ENTRIES} files and folders" in text


def test_a_submission_whose_worker_dies_twice_is_failed_by_name():
    from bwlab.tools.grading import batch
    import grading_hostile
    r = batch._alone(("sub.ipynb",), "BrokenProcessPool: a child process terminated abruptly",
                     job=grading_hostile.worker_dies)
    assert r["status"] == "FAILED" and "worker process died while grading it, twice" in r["reason"], r


# ---- the jailed checks -----------------------------------------------------------------------------

NAMES = grading.Names(answers={"x", "f"}, prelude={})


@pytest.fixture
def session():
    s = grading.Session(["x = 1\nimport signal, time\ndef f(n):\n    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
                         "    time.sleep(n)\n    return n"],
                        grading.Limits(check_s=3, check_memory_bytes=256 << 20, call_timeout=2, grace=1), "none")
    yield s
    s.close()


def test_a_check_past_its_memory_scores_0_and_the_sandbox_answers_on(session):
    v = jail.jailed_verdict("assert x == 1\nhog = bytearray(1 << 30)\nhog[::4096] = b'y' * (1 << 18)",
                            session, NAMES, session.limits)
    assert not v["passed"] and v["ename"] == "CheckLimit", v
    assert "256 MiB a check may use" in v["message"], v["message"]
    assert jail.jailed_verdict("assert x == 1", session, NAMES, session.limits)["passed"]
    assert session.restarts == 0                  # the child was between questions: the sandbox kept


def test_a_check_past_its_cpu_time_scores_0(session):
    t0 = time.monotonic()
    v = jail.jailed_verdict("n = 0\nwhile True:\n    n += 1", session, NAMES, session.limits)
    assert not v["passed"] and ("3 s of CPU" in v["message"] or "9 s a check may take" in v["message"]), v
    assert time.monotonic() - t0 < 30


def test_a_sandbox_stopped_in_a_jailed_check_is_started_again_by_the_grader(session):
    v = jail.jailed_verdict("f(30)", session, NAMES, session.limits)     # ignores its timeout: stopped
    assert not v["passed"] and "the sandbox stopped" in v["message"], v
    assert session.box is None
    assert jail.jailed_verdict("assert x == 1", session, NAMES, session.limits)["passed"]
    assert session.restarts == 1


def test_the_course_s_own_mistake_still_stops_grading(session):
    with pytest.raises(grading.GradingError, match="no answer cell defines"):
        jail.jailed_verdict("print(y)", session, NAMES, session.limits)


# ---- no oracle -----------------------------------------------------------------------------------

def test_a_visible_check_takes_no_cases_of_its_callers(tmp_path, monkeypatch, capsys):
    from bwlab.hw import exercises as ex

    def probe(rows, cols, dtype):
        return -1
    for hidden in ([((64, 64, "bf16"), 1)], [(64, 64, "bf16")], ((64, 64, "bf16"),)):
        with pytest.raises(TypeError, match="takes no cases of its caller's"):
            ex.check_tile_bytes(probe, hidden=hidden)
    assert not hasattr(ex.check_tile_bytes, "__wrapped__")
    # forged course data in the sandbox: hidden=True and hidden_cases read nothing there
    (tmp_path / "hidden.py").write_text("def orient_tile_bytes():\n    return [((1, 1, 'bf16'), 12345)]\n")
    monkeypatch.setenv(exercises.COURSE_DATA_ENV, str(tmp_path))
    monkeypatch.setattr(exercises, "_NO_COURSE_DATA", True)
    assert exercises.hidden_cases("orient_tile_bytes") == ()
    ex.check_tile_bytes(lambda r, c, d: r * c * 2 if d == "bf16" else r * c // 2 if r > 1 else 0, hidden=True)
    assert "12345" not in capsys.readouterr().out
    monkeypatch.setattr(exercises, "_NO_COURSE_DATA", False)
    got = exercises.hidden_cases("orient_tile_bytes")        # the instructor's own copy: taken
    assert list(got) == [((1, 1, "bf16"), 12345)]
    right = (lambda r, c, d: r * c * 2 if d == "bf16" else r * c // 2)
    with pytest.raises(exercises.NotYet, match="expected: 12345"):
        ex.check_tile_bytes(lambda r, c, d: right(r, c, d) if r > 1 else 0, hidden=got)


# ---- isolation -------------------------------------------------------------------------------------

def test_the_seccomp_program_denies_what_it_names():
    prog = isolation.seccomp_program(isolation.KEYRING_CALLS, "x86_64")
    ins = [struct.unpack("=HBBI", prog[i:i + 8]) for i in range(0, len(prog), 8)]
    assert ins[0] == (0x20, 0, 0, 4) and ins[1][3] == 0xC000003E          # the architecture first
    assert [k for code, _, _, k in ins if code == 0x15][1:] == [248, 249, 250]
    assert ins[-1] == (0x06, 0, 0, 0x00050000 | 1) and ins[-2] == (0x06, 0, 0, 0x7FFF0000)
    pid = os.fork()
    if pid == 0:                                   # a child: the filter stays with it
        code = 1
        try:
            isolation.install_seccomp(isolation.seccomp_program(isolation.KEYRING_CALLS + isolation.MEMFD_CALLS))
            try:
                os.memfd_create("x")
            except PermissionError:
                code = 0
        finally:
            os._exit(code)
    assert os.waitpid(pid, 0)[1] == 0, "memfd_create was not denied"


@pytest.mark.skipif(os.geteuid() != 0 or isolation.detect().kind == "none", reason="needs root and cgroups")
def test_a_cgroup_counts_a_memfd_and_is_removed():
    cg = isolation.Cgroup(isolation.detect(), 128 << 20, 8)
    pid = os.fork()
    if pid == 0:
        try:
            cg.join()
            fd = os.memfd_create("hog")
            for _ in range(32):
                os.write(fd, b"x" * (8 << 20))
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and cg.out_of_memory()
    dirs = list(cg.dirs.values())
    cg.destroy()
    assert not any(d.exists() for d in dirs)
    assert isolation.describe(isolation.detect()).startswith("sandbox limits: cgroup")


def test_a_long_learner_cell_is_not_parsed_in_the_grader():
    """What a cell reads is found by parsing it in the grader's process: a cell over MAX_PARSED characters
    is not parsed there and counts as reading every name (so nothing before it is left out)."""
    long = "y = 0\n" * (grading.planning.MAX_PARSED // 6 + 1)
    cells = [{"type": "code", "source": s, "run": s} for s in ("import numpy as np", "x = np.ones(2)", long)]
    release = {"import numpy as np", "x = np.ones(2)", long}
    assert grading.skippable(cells, release, set()) == set()          # the long one runs, and all before it
    short = [{"type": "code", "source": s, "run": s} for s in ("import numpy as np", "x = np.ones(2)", "y = 0")]
    assert grading.skippable(short, {"import numpy as np", "x = np.ones(2)", "y = 0"}, set()) == {0, 1, 2}
