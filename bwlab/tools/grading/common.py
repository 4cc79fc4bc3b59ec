"""What the grader's parts share: the paths, the caps, the limits and the errors."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path


ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "bwlab"
STUDENT_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@-]{0,63}")   # no leading '-' or '@': safe in shells and CSVs
SANDBOX_UID = 65534              # "nobody": the sandbox user of --sandbox none's tests; bwrap's are UidSlot ids
RUN_ENV = "BWLAB_GRADING_RUN"
HIDDEN_MARKERS = ("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")
MAX_REPLY = 32 << 20             # bytes of one line from the sandbox
MAX_OUTPUT = 20_000              # characters of a cell's stdout/stderr kept here (the sandbox's own caps are
MAX_TOTAL = 400_000              # ... and of the whole notebook's: the sandbox's word is not trusted for them)
MAX_NOTEBOOK = 50 << 20          # bytes of a submitted notebook
MAX_CELLS = 2000                 # cells of a submitted notebook


class GradingError(RuntimeError):
    """Grading could not start (no sandbox, a broken course); the message says what to do."""


class SandboxGone(RuntimeError):
    """The sandboxed process ended, or ran past its time, before it answered."""


@dataclass
class Limits:
    cell_timeout: float = 120.0      # s per code cell (then a CellTimeout is raised in it)
    grace: float = 10.0              # s more before a cell that ignores its CellTimeout ends the sandbox
    call_timeout: float = 10.0       # s per call of a learner's function by a check
    total_timeout: float = 900.0     # s for the whole notebook, cells and checks together
    memory_bytes: int = 4 << 30      # memory of the whole sandbox (its cgroup; RLIMIT_AS per process besides)
    processes: int = 64              # processes and threads of the sandbox (its cgroup; RLIMIT_NPROC of its uid)
    cpus: float = 1.0                # CPUs the sandbox may keep busy at once (its cgroup's CPU quota)
    cpu_s: int = 900                 # CPU seconds per process (RLIMIT_CPU)
    file_bytes: int = 256 << 20      # largest file it may write (RLIMIT_FSIZE)
    tmp_bytes: int = 512 << 20       # size of its private /tmp (a tmpfs: all it may write)
    restarts: int = 2                # times the sandbox is started again after a learner's call killed it
    exercise_calls_s: float | None = None   # s of the learner's calls for one exercise (None: 6 x call_timeout)
    run_every_cell: bool = False     # False: the student version's own cells that nothing needs are not run
    check_s: float = 60.0            # s (wall and CPU) of a graded cell's own work in its jail: compiling and
    check_memory_bytes: int = 2 << 30   # evaluating text answers, the model; and the memory it may use

    @property
    def exercise_budget(self) -> float:
        return self.exercise_calls_s if self.exercise_calls_s is not None else 6 * self.call_timeout

