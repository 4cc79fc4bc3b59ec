"""What the notebooks hold: their graded exercises (found from the nbgrader metadata of their cells), the
exercise table, and the names of the course directory's parts."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path


ROOT = Path(__file__).resolve().parents[3]
NB_DIR = ROOT / "notebooks"
COURSE = ROOT / "build" / "classroom"
COURSE_ID = "bwlab"
CODE_STUB = "# your answer here"
CELL_TIMEOUT_S = 300          # nbgrader's per-cell limit when it executes a submission
SOLUTION_MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")
HIDDEN_MARKERS = ("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")
KEY, BLANK = "answer_key", "untouched"      # the selfcheck's pretend students: the key, the untouched version,
KEYS = (KEY, "answer_key_2", "answer_key_3")  # and the key again under two more ids (other numbers)
TABLE_BEGIN = "<!-- BEGIN exercise table: python -m bwlab.tools.classroom table --write docs/teaching.md -->"
TABLE_END = "<!-- END exercise table -->"
_POINTS_IN_TITLE = re.compile(r"\((\d+(?:\.\d+)?) points?\)")


class ClassroomError(RuntimeError):
    """An nbgrader step failed, or the course directory is not what a step needs; the message says which."""


# ---------------------------------------------------------------------------------------------------
# what the notebooks hold

@dataclass(frozen=True)
class Exercise:
    notebook: str       # the notebook's stem, which is also the assignment's name
    grade_id: str       # the graded cell's id (nbgrader's grade_id)
    points: float
    intro: str          # the first line of the markdown cell that introduces it, without '#'

    @property
    def title_points(self) -> float | None:
        """The points the intro's title announces ('(2 points)'), or None when it names none."""
        m = _POINTS_IN_TITLE.search(self.intro)
        return float(m.group(1)) if m else None


def _nbgrader(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def read(path):
    import nbformat
    return nbformat.read(str(path), as_version=4)


def exercises(path) -> list[Exercise]:
    """The graded cells of a notebook, in order, each with its points and its intro's first line."""
    nb, stem = read(path), Path(path).stem
    found = []
    for i, cell in enumerate(nb.cells):
        meta = _nbgrader(cell)
        if not meta.get("grade"):
            continue
        intro = ""
        for prev in reversed(nb.cells[:i]):
            if prev.cell_type == "markdown":
                lines = [l for l in prev.source.splitlines() if l.strip()]
                intro = lines[0].lstrip("#").strip() if lines else ""
                break
        pts = float(meta.get("points", 0))
        found.append(Exercise(stem, meta["grade_id"], int(pts) if pts.is_integer() else pts, intro))
    return found


def notebooks(paths=None) -> list[Path]:
    """The notebooks to work on: `paths`, or every notebooks/NN_*.ipynb."""
    return [Path(p) for p in paths] if paths else sorted(NB_DIR.glob("[0-9][0-9]*_*.ipynb"))


def with_exercises(paths=None) -> list[Path]:
    return [p for p in notebooks(paths) if exercises(p)]


def table(paths=None) -> str:
    """A markdown table of every exercise (notebook, title, grade id, points) and the totals."""
    found = [ex for p in notebooks(paths) for ex in exercises(p)]
    if not found:
        return "No notebook holds graded exercises yet.\n"
    rows = ["| notebook | exercise | graded cell | points |", "|---|---|---|---|"]
    rows += [f"| `{ex.notebook}` | {ex.intro.replace('|', chr(92) + '|') or '(no intro)'} | `{ex.grade_id}` | "
             f"{ex.points} |" for ex in found]
    def n(count, word):
        return f"{count} {word}{'s' if count != 1 else ''}"
    total = n(len(found), "exercise"), n(len({ex.notebook for ex in found}), "notebook"), \
        n(sum(ex.points for ex in found), "point")
    return "\n".join(rows) + "\n\n{} in {}, {} in all.\n".format(*total)


def replace_table(text: str, new_table: str) -> str:
    """`text` with the block between TABLE_BEGIN and TABLE_END replaced by `new_table`."""
    if TABLE_BEGIN not in text or TABLE_END not in text:
        raise ClassroomError(f"the file has no exercise-table markers ({TABLE_BEGIN!r} ... {TABLE_END!r})")
    head, rest = text.split(TABLE_BEGIN, 1)
    _, tail = rest.split(TABLE_END, 1)
    return f"{head}{TABLE_BEGIN}\n{new_table.rstrip()}\n{TABLE_END}{tail}"
