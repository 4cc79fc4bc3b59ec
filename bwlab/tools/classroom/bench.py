"""A made-up class, graded against the clock."""
from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from .course import autograde, collect, student
from .exercises import _nbgrader, ClassroomError, read
from .selfcheck import answer_key, fill_in


BENCH_KINDS = ("key", "half", "edits_everything", "blank", "key", "half", "scratch", "key", "half", "key")


def bench_class(n: int, workdir: Path, paths=None, jobs: int = 2, backend: str | None = "model",
                sandbox: str = "bwrap", run_every_cell: bool = False, out=sys.stdout) -> dict:
    """Make a course of `paths` (default every notebook with exercises) in `workdir`, a class of `n`
    students (each hands in every notebook: the answer key, half of it, the untouched version, the key
    with a scratch cell that raises, or the key with every cell of the student version edited so that
    the grader runs each one), grade it `jobs` at a time as `grade --collect` does, and print wall
    time, CPU time and per-submission figures. Returns them as a dict."""
    import nbformat
    import resource
    import time
    from .. import grading
    from ... import variants
    workdir = Path(workdir).resolve()
    if workdir.exists() and any(workdir.iterdir()) and not (workdir / "bench.json").exists() \
            and not (workdir / "course" / "nbgrader_config.py").exists():
        raise ClassroomError(f"{workdir} is not empty and holds no earlier bench: give an empty or new --workdir")
    shutil.rmtree(workdir, ignore_errors=True)
    course, subs = workdir / "course", workdir / "submissions"
    released = student(course, paths)
    variants.secret_file(course).write_text(f"bench {os.urandom(32).hex()}\n")
    keys = {a: answer_key(course / "source" / a / f"{a}.ipynb") for a in released}
    for i in range(n):
        sid, kind = f"s{i:03d}", BENCH_KINDS[i % len(BENCH_KINDS)]
        for a, rel in released.items():
            key = keys[a]
            if kind == "blank":
                nb = read(rel)
            elif kind == "half":            # the first half of the answers, the rest as handed out
                untouched = answer_key(rel)
                nb = fill_in(rel, {g: key[g] if i < (len(key) + 1) // 2 else untouched[g] for i, g in enumerate(key)})
            else:
                nb = fill_in(rel, key)
            if kind == "scratch":
                nb.cells.insert(2, nbformat.v4.new_code_cell("scratch = 1 / 0   # a learner's experiment"))
            if kind == "edits_everything":
                for c in nb.cells:
                    if c.cell_type == "code" and not _nbgrader(c).get("grade"):
                        c.source += "\n# mine"
            (subs / sid).mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, str(subs / sid / f"{a}.ipynb"))
    print(f"bench: {n} students x {len(released)} notebooks in {subs}; grading {jobs} at a time", file=out, flush=True)

    def machine_busy() -> float:          # CPU seconds of the whole machine (every core): /proc/stat
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:8]]
        return (v[0] + v[1] + v[2] + v[5] + v[6]) / os.sysconf("SC_CLK_TCK")

    collect(course, subs)
    busy0, t0 = machine_busy(), time.monotonic()
    r0 = [resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    batch = autograde(course, backend=backend, jobs=jobs, sandbox=sandbox,
                      limits=grading.Limits(run_every_cell=run_every_cell))
    wall, busy = time.monotonic() - t0, machine_busy() - busy0
    r1 = [resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    grader_cpu = sum(b.ru_utime + b.ru_stime - a.ru_utime - a.ru_stime for a, b in zip(r0, r1))
    results = [r for _, _, r in batch.graded]
    secs = sorted(r.get("seconds") or 0.0 for r in results)
    cpu = [(r.get("cpu_s") or {}).get("grader", 0.0) + (r.get("cpu_s") or {}).get("sandbox", 0.0) for r in results]
    per_nb: dict = {}
    for (_, a, r), c in zip(batch.graded, cpu):
        per_nb.setdefault(a, []).append((r.get("seconds") or 0.0, c))
    m = len(results)
    sub_cpu = sum(cpu)
    stats = {"students": n, "submissions": m, "jobs": jobs, "run_every_cell": run_every_cell, "wall_s": round(wall, 1),
             "machine_cpu_s": round(busy, 1), "grader_cpu_s": round(grader_cpu, 1),
             "submission_cpu_s": round(sub_cpu, 1), "cpu_per_submission_s": round(sub_cpu / max(m, 1), 2),
             "class_of_100_on_2_idle_cores_min": round(sub_cpu / max(n, 1) * 100 / 2 / 60, 1),
             "wall_per_submission_s": {"median": secs[m // 2] if m else 0, "p90": secs[int(m * 0.9)] if m else 0,
                                       "max": secs[-1] if m else 0},
             "failed": len(batch.failed), "cores": os.cpu_count()}
    print(f"graded {m} submissions of {n} students in {wall:.1f} s wall ({jobs} at a time, {os.cpu_count()} cores)",
          file=out)
    print(f"CPU: {sub_cpu:.1f} s for the submissions ({sub_cpu / max(m, 1):.2f} s each: the grader's process for it "
          f"and the processes in its sandboxes), {grader_cpu:.1f} s of the batch's own processes (the grader, its "
          f"workers, bubblewrap); the whole machine was busy {busy:.1f} CPU-s meanwhile (other work included)",
          file=out)
    print("per submission, wall s (each in its own sandbox): median {median:.2f}, p90 {p90:.2f}, max {max:.2f}"
          .format(**stats["wall_per_submission_s"]), file=out)
    for a, v in sorted(per_nb.items()):
        print(f"  {a:24s} wall mean {sum(w for w, _ in v) / len(v):6.2f} s max {max(w for w, _ in v):6.2f} s   CPU mean "
              f"{sum(c for _, c in v) / len(v):6.2f} s  ({len(v)} graded)", file=out)
    if batch.failed:
        print(f"FAILED: {len(batch.failed)} (" + "; ".join(f"{s}/{a}: {r['reason'][:80]}" for s, a, r in
                                                          batch.failed[:5]) + ")", file=out)
    per_student = wall / max(n, 1)
    print(f"=> {per_student:.1f} s of wall time per student at -j {jobs} here; 100 students: about "
          f"{100 * per_student / 60:.0f} min at this rate. From the CPU time: {sub_cpu / max(n, 1):.1f} CPU-s a student, "
          f"100 students on 2 idle cores about {stats['class_of_100_on_2_idle_cores_min']:.0f} min", file=out, flush=True)
    (workdir / "bench.json").write_text(json.dumps(stats, indent=1))
    return stats
