"""Grading a class: each submission run in its own sandbox, its answers scored outside it.

The learner's notebook runs in a sandbox (`sandbox_command`): bubblewrap gives it a private mount,
PID, network, IPC and UTS namespace, where the process runs with no capabilities as a user id no
other running sandbox has (isolation.UidSlot), under a seccomp filter (isolation.seccomp_program),
sees the system's /usr, this Python, the virtual environment and bwlab's package read-only, a
private writable /tmp, and nothing of the course folder (no source/, no gradebook, no release/, no
other submission) nor of the network; memory (shared memory and memfds included), processes and CPU
are capped by a cgroup of its own where the host offers one (isolation), by rlimits besides, and wall
clock from outside, and the whole process tree dies with the sandbox (its PID namespace ends with
it; --die-with-parent when the grader itself dies).

Inside, bwlab.tools.answer_runner executes the learner's code cells (each graded cell reduced to its
imports) and then answers questions: "what is `my_tx_bytes`?", "call `my_smem_offset(3, 5, 2, 0)`".
Every reply is plain data (bwlab.tools.plain). The verdict is computed by the grader, each graded
cell in a jailed fork of its own (jail: memory, CPU and wall limits, no capabilities, seccomp), so that
no learner's text is compiled or evaluated in the grader's own process: each graded cell of the instructor's notebook (source/, hidden tests included) is executed with its
learner-facing names (`my_tx_bytes`, `tiles`, ...) bound to the decoded answers and to proxies that
call the learner's functions in the sandbox. The hidden tests' cases come from the course data
(course_data/, bwlab.exercises.hidden_cases), which the sandbox does not see. Each student's numbers
(bwlab.variants) come from a token computed here from the student id and the course secret: the
sandbox gets it in BWLAB_TOKEN, the checks here under variants.using(token). So monkeypatched checks,
input transformers, exception hooks, objects whose __eq__ always says yes, stack walking, printed
banners, stderr noise and edited files change nothing: none of it reaches this process.

A batch (`grade_all`) survives any submission: one that cannot be read, run or scored is recorded as
FAILED with the reason and graded again on the next run; a result is written (atomically) only when
its grading finished; feedback pages are rebuilt where missing; `jobs` submissions are graded at a
time. results/<student>/<assignment>.json holds everything; grades.csv and exercise_stats.csv are
made from those. Submissions are graded in worker processes; a worker that dies costs only the
submissions it held, each graded again alone and FAILED by name if that dies too; grades.csv is
written however the batch ends.

Modules: common (limits, caps, errors), isolation (cgroups, user ids, seccomp), sandbox (bubblewrap and
the conversation), session (the verdict), jail (the verdict in a fork), planning (what runs), collecting
(folders of submissions), results (results, feedback, CSVs), batch (one submission, a class).
"""
from __future__ import annotations

import os
import shutil
import sys

from .common import *                                            # noqa: F401,F403
from .sandbox import *                                           # noqa: F401,F403
from .sandbox import _limit, _readonly_paths, _tree_cpu          # noqa: F401
from .session import *                                           # noqa: F401,F403
from .session import _LearnerFunction, _Names, _reply_value, _unsafe_text   # noqa: F401
from .planning import *                                              # noqa: F401,F403
from .planning import _nbgrader, _source, _visible                   # noqa: F401
from .results import *                                           # noqa: F401,F403
from .results import _read, _result_path, _sha                   # noqa: F401
from .collecting import *                                           # noqa: F401,F403
from .batch import *                                             # noqa: F401,F403
from .batch import _failed, _guarded, _job                       # noqa: F401
