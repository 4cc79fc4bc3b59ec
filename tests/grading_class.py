"""A class of N made-up students for timing the grader: every notebook with exercises, for each student.

    python tests/grading_class.py COURSE OUT [N]     # after `python -m bwlab.tools.classroom --course COURSE student`

writes OUT/s000/NN_name.ipynb ... for N students (default 100): one in five hands in the answer key,
one in five the untouched student version, the rest a mix (each answer cell taken from the key or left
untouched, chosen by a random generator seeded with the student's number, so a rerun writes the same
class). Then `python -m bwlab.tools.classroom --course COURSE grade --collect OUT -j 2` grades it.
The timing figures of docs/teaching.md come from `python -m bwlab.tools.classroom bench N -j 2`, which
makes its own class (with a student who edits every cell, so that every cell is graded) and reports the
wall and CPU time.
"""
from __future__ import annotations

import random
import sys
from pathlib import Path


def make(course: Path, out: Path, n: int = 100) -> int:
    import nbformat
    from bwlab.tools import classroom as cls
    course, out = Path(course), Path(out)
    names = cls.assignments(course)
    release = {a: course / "release" / a / f"{a}.ipynb" for a in names}
    key = {a: cls.answer_key(course / "source" / a / f"{a}.ipynb") for a in names}
    blank = {a: cls.answer_key(release[a]) for a in names}
    written = 0
    for i in range(n):
        rng = random.Random(i)
        for a in names:
            if i % 5 == 0:
                answers = key[a]
            elif i % 5 == 1:
                answers = blank[a]
            else:
                answers = {g: (key[a][g] if rng.random() < 0.6 else blank[a][g]) for g in key[a]}
            path = out / f"s{i:03d}" / f"{a}.ipynb"
            path.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(cls.fill_in(release[a], answers), str(path))
            written += 1
    return written


if __name__ == "__main__":
    count = make(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 100)
    print(f"{count} notebooks in {sys.argv[2]}")
