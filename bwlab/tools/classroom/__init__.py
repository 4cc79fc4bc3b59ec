"""The instructor's side of the graded exercises: student versions, autograding, scores (nbgrader).

Every notebook's exercises are nbgrader cells (their metadata is written on the `# %% nbgrader={...}`
lines of `notebooks/src/*.py`, jupytext's cell-metadata syntax; the builder checks it). Nothing here
knows a particular exercise: everything is found from that metadata. docs/teaching.md is the guide.

    python -m bwlab.tools.classroom student            # release/<assignment>/<assignment>.ipynb
    python -m bwlab.tools.classroom tokens ID ...      # each student's token (their numbers), CSV
    python -m bwlab.tools.classroom collect DIR [--id-map FILE.csv]   # DIR/<student>/NN_name.ipynb -> submitted/
    python -m bwlab.tools.classroom submit --student NAME FILE.ipynb ...
    python -m bwlab.tools.classroom autograde [ASSIGNMENT ...] [-j N] [--force] [--sandbox bwrap|none]
    python -m bwlab.tools.classroom feedback                    # feedback/<student>/<assignment>/*.html
    python -m bwlab.tools.classroom scores [--detail]           # from results/
    python -m bwlab.tools.classroom grade [--collect DIR] [-j N]   # collect + autograde + scores, CSV
    python -m bwlab.tools.classroom selfcheck [NOTEBOOK ...]    # the answer key scores full, a blank 0
    python -m bwlab.tools.classroom table [--write FILE | --check FILE]
    python -m bwlab.tools.classroom bench N [-j J] [--workdir DIR]   # grade a made-up class of N: timings

The course directory (default `build/classroom/`, `--course DIR`) is an ordinary nbgrader course: one
assignment per notebook (`01_tma_load` holds `01_tma_load.ipynb`), `source/` the solution notebooks,
`release/` the student versions, `submitted/<student>/<assignment>/` what comes back, `autograded/`,
`results/<student>/<assignment>.json`, `feedback/`, `grades.csv` and `exercise_stats.csv`. nbgrader
(through its NbGraderAPI, with the settings of `settings()`, also written to the course's
`nbgrader_config.py`) makes the student versions; grading is bwlab.tools.grading's: every submission
in its own sandbox, its answers scored outside it by the grader's own copy of the checks.

Exit codes: 0 done, 1 something to look at (a failed nbgrader step, a submission that could not be
graded, a stale table, a failed selfcheck, no exercises found, nothing submitted), 2 usage.

The package, by concern: `exercises` (what the notebooks hold, the exercise table), `course` (nbgrader's
steps for a course, submissions, scores), `selfcheck` (the answer key against the grader), `bench` (a
made-up class against the clock) and `command` (the command line).
"""
from .bench import BENCH_KINDS, bench_class
from .command import main
from .course import (Score, assignments, autograde, collect, config_text, ensure_secret, environment, feedback,
                     format_scores, nbgrader, scores, settings, student, submit, submitted, tokens)
from .exercises import (BLANK, CELL_TIMEOUT_S, CODE_STUB, COURSE, COURSE_ID, HIDDEN_MARKERS, KEY, KEYS, NB_DIR, ROOT,
                        SOLUTION_MARKERS, TABLE_BEGIN, TABLE_END, ClassroomError, Exercise, exercises, notebooks, read,
                        replace_table, table, with_exercises)
from .exercises import _nbgrader  # noqa: F401 - a cell's nbgrader metadata; the tests read cells with it
from .selfcheck import Check, answer_key, check_all, check_notebook, default_sandbox, empty_gradebook, errors, fill_in


# The one lazy mechanism (bwlab.util.names_elsewhere): HeadlessExecute is made on first use, since
# importing nbgrader takes seconds.
from ...util import names_elsewhere as _names_elsewhere  # noqa: E402

_ELSEWHERE = {"bwlab.tools.classroom.headless_execute": "HeadlessExecute"}

__getattr__, __dir__ = _names_elsewhere(globals(), _ELSEWHERE)
