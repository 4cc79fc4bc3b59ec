"""One class holding every trick against the grader's limits (tests/grading_hostile.py), graded through
the command line (`grade --collect DIR -j 2`): it grades to the end; honest classmates score full marks,
hogs included among them; each cheat scores 0 where it cheated (or is FAILED for what it did to its own
sandbox); grades.csv has every student; no cgroup, process or shared memory of the run is left behind.

Scaled down for CI (about a minute on two cores); BWLAB_HOSTILE_FULL=1 grades the full-size tricks under
the default limits. Needs bubblewrap and root (`make sandbox-deps`).
"""
import contextlib
import csv
import io
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("nbgrader")
if not (shutil.which("bwrap") and os.geteuid() == 0):
    pytest.skip("the sandbox needs bubblewrap and root (make sandbox-deps): hostile submissions are never "
                "run without it", allow_module_level=True)

from bwlab.tools import classroom as cls  # noqa: E402
from bwlab.tools import grading  # noqa: E402
from bwlab.tools.grading import isolation  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
import grading_hostile as gh  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FULL = os.environ.get("BWLAB_HOSTILE_FULL") == "1"


def _meminfo(field: str) -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) << 10
    return 0


def _bwlab_cgroups() -> set:
    mode = isolation.detect()
    return {str(p) for parent in mode.parents.values() for p in parent.glob("bwlab-*")}


def _slot_processes() -> set:
    out = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            with contextlib.suppress(OSError, StopIteration, ValueError):
                line = next(l for l in (d / "status").read_text().splitlines() if l.startswith("Uid:"))
                uid = int(line.split()[1])
                if isolation.UID_BASE <= uid < isolation.UID_BASE + isolation.UID_SLOTS:
                    out.add(int(d.name))
    return out


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile")
    course, subs = base / "course", base / "submissions"
    cls.student(course, [ROOT / "notebooks" / f"{nb}.ipynb" for nb in gh.NOTEBOOKS])
    try:
        cases = gh.make_class(course, subs, full=FULL)
        yield _grade(course, subs, cases)
    finally:
        gh.rm_tree(subs / "deep_folder")          # pytest's own clean-up cannot remove a 1000-deep folder


def _grade(course, subs, cases) -> dict:
    shmem0, avail0, cg0, procs0 = _meminfo("Shmem"), _meminfo("MemAvailable"), _bwlab_cgroups(), _slot_processes()
    out = io.StringIO()
    t0 = time.monotonic()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = cls.main(["--course", str(course), "grade", "-j", "2", "--collect", str(subs),
                       *(gh.FULL_LIMITS if FULL else gh.LIMITS)])
    seconds = time.monotonic() - t0
    deadline = time.monotonic() + 10
    while (_slot_processes() - procs0) and time.monotonic() < deadline:
        time.sleep(0.2)
    results = {(r["student"], r["assignment"]): r for r in grading.read_results(course)}
    return dict(course=course, cases=cases, rc=rc, report=out.getvalue(), results=results, seconds=seconds,
                shmem=(shmem0, _meminfo("Shmem")), avail=(avail0, _meminfo("MemAvailable")),
                cgroups=(cg0, _bwlab_cgroups()), procs=(procs0, _slot_processes()))


CASES = ["honest_a", "honest_b", "honest_forker", "comma_bomb", "big_integer", "oracle", "oracle_course_data",
         "oracle_unwrapped", "memfd_hog", "key_writer", "key_reader", "slot_hog", "deep_folder", "copycat"]


def test_every_case_is_listed(graded):
    assert sorted(c.folder for c in graded["cases"]) == sorted(CASES)


@pytest.mark.parametrize("folder", CASES)
def test_case(graded, folder):
    case = next(c for c in graded["cases"] if c.folder == folder)
    if case.problem:
        assert case.problem in graded["report"], graded["report"][-3000:]
    if not case.student:
        assert not any(s == folder for s, _ in graded["results"]), f"{folder} was graded"
        return
    for nb, want in case.expect.items():
        r = graded["results"].get((case.student, nb))
        assert r is not None, f"{folder}: no result for {nb}"
        if isinstance(want, str) and want.startswith("FAILED:"):
            assert r["status"] == "FAILED" and want[7:] in r["reason"], (r["status"], r.get("reason"))
            assert f"FAILED {case.student} / {nb}" in graded["report"] or f"{case.student}/{nb}: FAILED" in graded["report"]
            continue
        assert r["status"] == "graded", f"{folder}/{nb}: {r['reason']}"
        assert r["score"] == want, f"{folder}/{nb}: {r['score']} not {want}: " + "; ".join(
            f"{e['grade_id']}: {e['message'][-300:]}" for e in r["exercises"] if not e["passed"])
    for nb, (must, must_not) in case.stdout.items():
        text = "\n".join((c.get("stdout") or "") + (c.get("stderr") or "") for c in graded["results"][(case.student, nb)]["cells"])
        assert must in text, text[-2000:]
        assert not must_not or must_not not in text, text[-2000:]


def test_the_costly_text_answers_say_why_they_score_0(graded):
    bomb = {e["grade_id"]: e for e in graded["results"][("comma_bomb", gh.NB2)]["exercises"]}["mc_teach_mask_check"]
    assert bomb["points"] == 0 and "CheckLimit" in bomb["message"] and "memory" in bomb["message"], bomb["message"]
    big = {e["grade_id"]: e for e in graded["results"][("big_integer", gh.NB5)]["exercises"]}["store_kernel_coords_check"]
    assert big["points"] == 0 and "CheckLimit" in big["message"], big["message"]
    assert "s of CPU a check may take" in big["message"] or "s a check may take" in big["message"], big["message"]


def test_the_batch_ends_with_every_student_in_grades_csv(graded):
    rows = {r["student"]: r for r in csv.DictReader(open(graded["course"] / "grades.csv"))}
    assert set(rows) == {c.student for c in graded["cases"] if c.student}
    assert rows["honest_a"]["total"] == "23"
    assert isolation.describe(isolation.detect()) in graded["report"]          # the mode, printed at the start


def test_the_host_is_left_as_it_was(graded):
    shmem0, shmem1 = graded["shmem"]
    assert shmem1 - shmem0 < 100 << 20, f"shared memory grew by {(shmem1 - shmem0) >> 20} MiB"
    cg0, cg1 = graded["cgroups"]
    # a cgroup is named bwlab-<tag>-<pid of its creator>-...: one whose creator still runs belongs to a grading
    # run alongside this one (another test, another worker); one whose creator is gone was leaked
    left = sorted(c for c in cg1 - cg0 if not Path(f"/proc/{Path(c).name.split('-')[2]}").exists())
    assert not left, f"cgroups left: {left}"
    p0, p1 = graded["procs"]
    assert p1 <= p0, f"processes of sandbox user ids left: {sorted(p1 - p0)}"
    assert not list((graded["course"] / ".nvrtc-cache").glob("batch-*")), "the batch's NVRTC cache was left"
    avail0, avail1 = graded["avail"]
    print(f"MemAvailable {avail0 >> 20} -> {avail1 >> 20} MiB, Shmem {shmem0 >> 20} -> {shmem1 >> 20} MiB; "
          f"graded in {graded['seconds']:.0f} s; " + isolation.describe(isolation.detect()))
    for (s, a), r in sorted(graded["results"].items()):
        print(f"  {s}/{a}: {r['status']} {r.get('score')} in {r.get('seconds')} s")
