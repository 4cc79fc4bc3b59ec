"""The grader against a class of honest, damaged, cheating and hostile students (tests/grading_cases.py).

One course with two notebooks (00_orientation, 01_tma_load); about thirty submissions graded through
the command line (`grade --collect DIR --id-map ids.csv -j 2`), each in its own bubblewrap sandbox.
Then: every honest one scores right; every cheat scores no more than its honest work; damaged ones
are FAILED with the reason and named in the report; nothing of the course, the submissions, the
package or the venv changed; no process of the sandbox user is left; a second run grades the FAILED
ones again, keeps the rest, and writes a missing feedback page again.

Needs bubblewrap and root (`make sandbox-deps`); without them the module is skipped, saying so.
"""
import contextlib
import hashlib
import io
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

pytest.importorskip("nbgrader")
if not (shutil.which("bwrap") and os.geteuid() == 0):
    pytest.skip("the sandbox needs bubblewrap and root (make sandbox-deps): hostile submissions are never "
                "run without it", allow_module_level=True)

from bwlab.tools import classroom as cls  # noqa: E402
from bwlab.tools import grading  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
import grading_cases as gc  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CELL_TIMEOUT, CALL_TIMEOUT, GRACE = "10", "2", "2"   # generous: the machine may be busy


def _hashes(*dirs) -> dict:
    out = {}
    for d in dirs:
        d = Path(d)
        files = [d] if d.is_file() else sorted(p for p in d.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
        for p in files:
            out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


RUN_ID = f"hostile-test-{os.getpid()}"


def _sandbox_processes() -> set:
    """Processes of the sandbox user started by this file's grading run (their environment carries its
    BWLAB_GRADING_RUN; other graders, of this checkout or another, may run at the same time)."""
    pids = set()
    mark = f"{grading.RUN_ENV}={RUN_ID}".encode()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            with contextlib.suppress(OSError, StopIteration):
                status = (d / "status").read_text()
                uid = next(l.split()[1] for l in status.splitlines() if l.startswith("Uid:"))
                if _sandbox_uid(int(uid)) and mark in (d / "environ").read_bytes().split(b"\0"):
                    pids.add(int(d.name))
    return pids


def _sandbox_uid(uid: int) -> bool:
    """A user id the sandboxes run as (one per running sandbox: bwlab.tools.grading.isolation.UidSlot)."""
    from bwlab.tools.grading import isolation
    return isolation.UID_BASE <= uid < isolation.UID_BASE + isolation.UID_SLOTS


def _grade(course, *extra) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = cls.main(["--course", str(course), "grade", "-j", "2", "--cell-timeout", CELL_TIMEOUT,
                       "--call-timeout", CALL_TIMEOUT, "--grace", GRACE, *extra])
    return rc, out.getvalue()


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("class")
    course, subs = base / "course", base / "submissions"
    cls.student(course, [ROOT / "notebooks" / f"{gc.NB0}.ipynb", ROOT / "notebooks" / f"{gc.NB1}.ipynb"])
    cases = gc.make_class(course, subs)
    site = Path(grading.sys.prefix)
    guarded = [course / "source", course / "release", course / "gradebook.db", subs, ROOT / "bwlab",
               ROOT / "course_data", course / "course_secret.txt"]
    before = _hashes(*guarded)
    venv_before = sorted(str(p) for p in site.rglob("*.pth"))
    procs_before = _sandbox_processes()
    os.environ[grading.RUN_ENV] = RUN_ID
    try:
        rc, report = _grade(course, "--collect", str(subs), "--id-map", str(base / "ids.csv"))
    finally:
        os.environ.pop(grading.RUN_ENV, None)
    after = _hashes(*guarded)
    results = {(r["student"], r["assignment"]): r for r in grading.read_results(course)}
    return dict(course=course, subs=subs, cases=cases, rc=rc, report=report, before=before, after=after,
                venv=(venv_before, sorted(str(p) for p in site.rglob("*.pth"))),
                procs=(procs_before, _left_after(procs_before)), results=results, ids=base / "ids.csv")


def _left_after(before: set, wait_s: float = 5.0) -> set:
    """The sandbox processes still there once the grader has returned: a killed sandbox's PID namespace
    takes a moment to empty on a busy machine, so wait up to `wait_s` for that; one that outlives its
    run stays."""
    import time
    deadline = time.monotonic() + wait_s
    while True:
        now = _sandbox_processes()
        if now <= before or time.monotonic() > deadline:
            return now
        time.sleep(0.1)


NAMES = ["key", "blank", "half", "noisy", "floats", "float768", "neighbour", "renamed_cells", "scratch_cells",
         "subclass_answers", "truncated",
         "not_json", "Smith, Alice_12345_assignsubmission_file_", "Doe, John_67890_assignsubmission_file_",
         "two_copies", "patch_checks", "input_transformer", "custom_exc", "always_equal", "stack_walker",
         "read_source", "edit_package", "pth_hook", "sqlite_gradebook", "overwrite_classmate", "forge_replies",
         "xss", "model_reader", "probe_visible_check", "root_probe", "kill_parent", "signal_ignoring_loop",
         "endless_loop",
         "huge_allocation", "lone_surrogates", "output_flood", "endless_function", "function_ignoring_signals", "daemons", "many_processes",
         "forged_output", "forged_ready", "slow_function", "exit_early", "metadata_liar", "odd_names"]

def test_every_case_is_listed(graded):
    assert sorted(c.folder for c in graded["cases"] if c.student) == sorted(NAMES)


@pytest.mark.parametrize("folder", NAMES)
def test_case(graded, folder):
    case = next(c for c in graded["cases"] if c.folder == folder)
    for nb, want in case.expect.items():
        r = graded["results"].get((case.student, nb))
        assert r is not None, f"{folder}: no result for {nb}"
        if isinstance(want, str) and want.startswith("FAILED:"):
            assert r["status"] == "FAILED", f"{folder}/{nb}: {r['status']} {r.get('score')}"
            assert want[7:] in r["reason"], r["reason"]
            assert f"FAILED {case.student} / {nb}: " in graded["report"], "the report does not name it"
        elif isinstance(want, str) and want.startswith("<="):
            assert r["status"] == "graded", r["reason"]
            assert r["score"] <= float(want[2:]), f"{folder} ({case.kind}) scores {r['score']}: " + "; ".join(
                f"{e['grade_id']} {e['message'][:120]}" for e in r["exercises"] if e["passed"])
        else:
            assert r["status"] == "graded", f"{folder}/{nb}: {r['reason']}"
            assert r["score"] == want, f"{folder}/{nb}: {r['score']} not {want}: " + "; ".join(
                f"{e['grade_id']}: {e['message'][-200:]}" for e in r["exercises"] if not e["passed"])


def test_the_report_names_every_problem(graded):
    assert graded["rc"] == 1                                   # something to look at
    assert "PROBLEM Bobby'); DROP TABLE students;-- / (folder): not graded: it is not a student id" in graded["report"]
    assert "2 files map to this notebook (00_orientation.ipynb, 00_orientation_old.ipynb)" in graded["report"]
    assert not any(s.startswith("Bobby") for s, _ in graded["results"])


def test_the_report_escapes_learners_names(graded):
    """A folder or file name cannot add lines to the report, nor send terminal escapes."""
    report = graded["report"]
    assert "\x1b" not in report and "\u202e" not in report
    assert "PROBLEM Eve\\n  PROBLEM a forged line\\x1b]0;pwned\\x07 / (folder): not graded" in report
    assert "PROBLEM odd_names / x\\n  PROBLEM forged\\x1b[31m.ipynb: ignored" in report
    assert not any(l.startswith("  PROBLEM") for l in report.splitlines())


def test_forged_reports_stay_out_of_the_results(graded):
    """Cell reports the learner's code wrote onto the grader's channel: FAILED, and none of their 32 MB kept."""
    for who in ("forged_output", "forged_ready"):
        assert (graded["course"] / "results" / who / f"{gc.NB0}.json").stat().st_size < 1_000_000
        assert grading.feedback_path(graded["course"], who, gc.NB0).stat().st_size < 1_000_000


def test_a_slow_function_costs_its_exercise_not_the_batch(graded):
    r = graded["results"][("slow_function", gc.NB0)]
    tile = next(e for e in r["exercises"] if e["grade_id"] == "orient_tile_bytes_check")
    assert not tile["passed"] and "more than the 12 s one exercise may take" in tile["message"], tile["message"]
    assert r["seconds"] < 60


def test_nothing_outside_the_sandbox_changed(graded):
    changed = [p for p in set(graded["before"]) | set(graded["after"])
               if graded["before"].get(p) != graded["after"].get(p)]
    assert changed == []
    assert graded["venv"][0] == graded["venv"][1], "a .pth file appeared in the venv"


def test_no_sandbox_process_outlives_the_run(graded):
    before, after = graded["procs"]
    assert after <= before, f"processes of the sandbox user ids left: {sorted(after - before)}"


def test_a_flood_of_output_stays_out_of_the_results(graded):
    path = graded["course"] / "results" / "output_flood" / f"{gc.NB0}.json"
    assert path.stat().st_size < 1_000_000
    assert "characters left out]" in path.read_text()


def test_what_the_sandbox_sees(graded):
    r = graded["results"][("root_probe", gc.NB0)]
    line = next(l for c in r["cells"] for l in (c.get("stdout") or "").splitlines() if l.startswith("FACTS "))
    facts = json.loads(line[6:])
    from bwlab.tools import grading
    tmp = ["00_orientation.ipynb", "notebook-output.log"]
    if grading.ROOT.is_relative_to("/tmp"):   # a checkout under /tmp: its read-only parts appear there
        tmp = sorted(tmp + [grading.ROOT.relative_to("/tmp").parts[0]])
    assert _sandbox_uid(facts["uid"]) and facts["euid"] == facts["uid"] and facts["id_u"] == str(facts["uid"])
    facts.update(uid=0, euid=0, id_u="0")
    assert facts == {"uid": 0, "euid": 0, "net": "blocked", "sees_course": False,
                     "sees_submissions": False, "sees_repo_notebooks": False, "sees_repo_tests": False,
                     "sees_course_data": False, "course_data_found": False,
                     "package_writable": False, "setuid0": False, "id_u": "0",
                     "tmp": tmp, "own_copy_writable": False}


def test_feedback_escapes_what_the_student_wrote(graded):
    page = grading.feedback_path(graded["course"], "xss", gc.NB0).read_text()
    assert "<script>" not in page and "&lt;script&gt;alert(" in page
    assert "<h2>Score: 0 / 6</h2>" in page and page.count("<h2>Score:") == 1


def test_csv_has_a_column_per_exercise_and_statistics(graded):
    import csv
    rows = list(csv.DictReader(open(graded["course"] / "grades.csv")))
    key = next(r for r in rows if r["student"] == "key")
    assert key["total"] == "17" and key[gc.NB0] == "6" and key[f"{gc.NB0}:orient_parity_check"] == "2"
    assert next(r for r in rows if r["student"] == "truncated")[gc.NB0] == "FAILED"
    stats = {r["exercise"]: r for r in csv.DictReader(open(graded["course"] / "exercise_stats.csv"))}
    assert set(stats) >= {"orient_tier_check", "tma_expect_tx_edit_check"}
    assert int(stats["orient_tier_check"]["failed"]) >= 3


def test_a_second_run_regrades_the_failed_and_rebuilds_missing_feedback(graded):
    course = graded["course"]
    page = grading.feedback_path(course, "key", gc.NB0)
    page.unlink()
    kept = graded["results"][("key", gc.NB0)]["graded_at"]
    rc, report = _grade(course)
    assert page.exists(), "the missing feedback page was not written again"
    assert "  truncated/00_orientation: FAILED" in report       # graded again, not "already graded"
    assert "  key/00_orientation" not in report
    assert "  endless_function/00_orientation" not in report    # graded (5 / 6): not again
    assert json.loads((course / "results" / "key" / f"{gc.NB0}.json").read_text())["graded_at"] == kept


def test_answers_that_could_not_be_asked_for_make_it_failed_not_zero(graded, tmp_path):
    """A function that never returns, with no restart left: the exercises after it are not evaluated,
    so the submission is FAILED (graded again next time), not a 0 for them."""
    course = graded["course"]
    nb = gc._read(course / "release" / gc.NB0 / f"{gc.NB0}.ipynb")
    nb.cells.append(gc._code("import signal\ndef my_tier(stage, cc):\n    signal.signal(signal.SIGALRM, "
                             "signal.SIG_IGN)\n    while True:\n        pass"))
    sub = tmp_path / f"{gc.NB0}.ipynb"
    gc._write(nb, sub)
    src, rel = (course / d / gc.NB0 / f"{gc.NB0}.ipynb" for d in ("source", "release"))
    r = grading.grade_one(sub, src, rel, grading.Limits(call_timeout=1, grace=1, restarts=0), "bwrap")
    assert r["status"] == "FAILED" and "not every exercise could be evaluated" in r["reason"], r["reason"]
    tier, hops = r["exercises"][:2]
    assert "sandbox stopped" in tier["message"] and "not evaluated" in hops["message"]
