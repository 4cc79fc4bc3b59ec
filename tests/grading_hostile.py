"""A hostile class for the grader's limits: text answers that cost without bound, checks used as oracles,
hogs of the host's memory, keyring and process slots, and folder trees made to stop collecting.

`make_class(course, out, full=False)` writes out/<folder>/<notebook>.ipynb for every case (from the
course's release/ and source/ of 02_multicast and 05_tma_store) and returns the cases with what the
grader must make of each; `LIMITS` (or `FULL_LIMITS`) are the command-line limits it is graded under.
Scaled down by default so that the whole class grades in about a minute on two busy cores; `full=True`
(BWLAB_HOSTILE_FULL=1 in tests/test_grading_hostile_class.py) uses the sizes that were found against
the grader: a 20,000-comma expression, five-million-bit integers, 4 GiB of memfd, every process slot.

    python tests/grading_hostile.py COURSE OUT [--full]     # after `classroom --course COURSE student`
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

NB2, NB5 = "02_multicast", "05_tma_store"
POINTS = {NB2: 12, NB5: 11}
NOTEBOOKS = (NB2, NB5)

# the grade command's limits (MiB and seconds): small enough that every hog reaches them soon
LIMITS = ["--memory", "1536", "--check-memory", "384", "--check-time", "8", "--cell-timeout", "40",
          "--call-timeout", "3", "--grace", "3"]
FULL_LIMITS = ["--cell-timeout", "60", "--call-timeout", "5", "--grace", "3"]


@dataclass
class Case:
    folder: str
    student: str                          # "" : must not be graded (a PROBLEM line instead)
    kind: str                             # honest, cheat, hostile
    expect: dict = field(default_factory=dict)   # notebook -> points, "FAILED:<words>", or "<=N"
    problem: str = ""                     # words the PROBLEM line about it must hold
    stdout: dict = field(default_factory=dict)   # notebook -> (text its cells' output must hold, must not)


def _comma_bomb(right: str, n: int) -> str:
    """A comma expression worth `right`: passes every text filter (one line, no '#', no '\\')."""
    return "(" + "0," * n + right + ")"


def _big_int(right: str, factors: int) -> str:
    """`right` plus a product of big integers times 0: worth `right`, costly to evaluate."""
    return f"{right} + " + "((1 << 5000000) - 1) * " * factors + "0"


ORACLE = """
import re
from bwlab.multicast import exercises as _ex
from bwlab.exercises import NotYet
def a_mask_of(m, n, cluster_x, cluster_y):
    try:
        _ex.check_a_mask(lambda *a: -1, hidden={hidden})
    except NotYet as e:
        found = re.search(r"expected (-?\\d+)", str(e))
        if found:
            return int(found.group(1))
    return -1
"""

ORACLE_COURSE_DATA = """
import os, re, pathlib
from bwlab.multicast import exercises as _ex
from bwlab.exercises import NotYet
def a_mask_of(m, n, cluster_x, cluster_y):
    d = pathlib.Path("/tmp/forged")                      # course data of its own, asked for with hidden=True
    d.mkdir(exist_ok=True)
    (d / "hidden.py").write_text(f"def mc_a_mask():\\n    return [({m}, {n}, {cluster_x}, {cluster_y})]\\n")
    os.environ["BWLAB_COURSE_DATA"] = str(d)
    try:
        _ex.check_a_mask(lambda *a: -1, hidden=True)
    except NotYet as e:
        found = re.findall(r"expected (-?\\d+)", str(e))
        if found:
            return int(found[-1])
    return -1
"""

ORACLE_UNWRAPPED = """
import inspect, re
from bwlab.multicast import exercises as _ex
from bwlab.exercises import NotYet
def a_mask_of(m, n, cluster_x, cluster_y):
    inner = inspect.unwrap(_ex.check_a_mask)              # the check behind its decorator, if it shows one
    try:
        inner(lambda *a: -1, hidden=[(m, n, cluster_x, cluster_y)])
    except NotYet as e:
        found = re.search(r"expected (-?\\d+)", str(e))
        if found:
            return int(found.group(1))
    except TypeError:
        pass
    return -1
"""

MEMFD_HOG = """
import os
fds = []
for k in range({n}):
    fds.append(os.memfd_create("hog"))
    for _ in range(15):
        os.write(fds[-1], b"x" * (16 << 20))            # 240 MiB each: under the file-size limit
print("memfd hog: kept", len(fds))
"""

KEY_WRITER = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
kid = libc.syscall({add_key}, b"user", b"bwlab-channel", b"the answer is 42", 16, -4)   # the user keyring
print("add_key:", kid, ctypes.get_errno())
"""

KEY_READER = """
import ctypes, time
libc = ctypes.CDLL(None, use_errno=True)
for _ in range(6):
    kid = libc.syscall({request_key}, b"user", b"bwlab-channel", None, 0)
    if kid > 0:
        buf = ctypes.create_string_buffer(64)
        libc.syscall({keyctl}, 11, kid, buf, 64)                 # KEYCTL_READ
        print("read a classmate's key:", buf.value)
        break
    time.sleep(0.5)
else:
    print("no key found:", ctypes.get_errno())
"""

SLOT_HOG = """
import os, time
kids = 0
while kids < {n}:
    try:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        kids += 1
    except OSError:
        break
print("slot hog: holds", kids, "processes")
time.sleep({hold})                                    # holds them while classmates are graded
"""

FORKER = """
import subprocess
ok = sum(subprocess.run(["true"]).returncode == 0 for _ in range(8))
print("forked", ok, "of 8")
"""


def rm_tree(top) -> None:
    """Remove a folder tree of any depth without recursion (shutil.rmtree, and pytest's clean-up of its
    temporary folders, stop at about 1000 levels): every test that makes the deep folder removes it."""
    import os
    if not os.path.lexists(top):
        return
    stack, order = [str(top)], []
    while stack:
        d = stack.pop()
        order.append(d)
        with os.scandir(d) as entries:
            for e in entries:
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
                else:
                    os.unlink(e.path)
    for d in reversed(order):
        os.rmdir(d)


def worker_dies(args):
    """A job that ends its worker process the way an abort in a compiler would (for the batch's tests)."""
    import os
    os.abort()


def _syscalls():
    import platform
    return {"x86_64": dict(add_key=248, request_key=249, keyctl=250),
            "aarch64": dict(add_key=217, request_key=218, keyctl=219)}[platform.machine()]


def make_class(course: Path, out: Path, full: bool = False) -> list[Case]:
    import nbformat
    from bwlab.tools import classroom as cls
    course, out = Path(course), Path(out)
    rel = {a: course / "release" / a / f"{a}.ipynb" for a in NOTEBOOKS}
    key = {a: cls.answer_key(course / "source" / a / f"{a}.ipynb") for a in NOTEBOOKS}
    blank = {a: cls.answer_key(rel[a]) for a in NOTEBOOKS}
    cases: list[Case] = []

    def write(folder: str, nb: str, answers: dict, extra: str = "") -> Path:
        book = cls.fill_in(rel[nb], answers)
        if extra:
            book.cells.append(nbformat.v4.new_code_cell(extra.strip("\n")))
        path = out / folder / f"{nb}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(book, str(path))
        return path

    def edit(nb: str, cell: str, make) -> dict:
        answers = dict(key[nb])
        first, *rest = answers[cell].split("\n")
        answers[cell] = "\n".join([first] + [make(line) for line in rest])
        return answers

    # honest classmates, graded alongside the hogs
    for who in ("honest_a", "honest_b"):
        for nb in NOTEBOOKS:
            write(who, nb, key[nb])
        cases.append(Case(who, who, "honest", {NB2: 12, NB5: 11}))
    write("honest_forker", NB2, key[NB2], FORKER)
    cases.append(Case("honest_forker", "honest_forker", "honest", {NB2: 12}, stdout={NB2: ("forked 8 of 8", "")}))

    # text answers that cost without bound: that exercise 0 with its reason, the rest scored
    commas = 20_000 if full else 8_000

    def bomb(line):
        q = line.index('"')
        return line[:q] + '"' + _comma_bomb(line[q + 1:line.rindex('"')], commas) + '"'
    write("comma_bomb", NB2, edit(NB2, "mc_teach_mask", bomb))
    cases.append(Case("comma_bomb", "comma_bomb", "hostile", {NB2: 9}))
    factors = 12 if full else 8

    def big(line):
        if "my_store_coords = (" not in line:
            return line
        x = line.split('"')[1]
        return line.replace(f'"{x}"', f'"{_big_int(x, factors)}"', 1)
    write("big_integer", NB5, edit(NB5, "store_kernel_coords", big))
    cases.append(Case("big_integer", "big_integer", "hostile", {NB5: 9}))

    # the visible check as an oracle, and two variants: nothing learned, 0 for the exercise
    write("oracle", NB2, blank[NB2], ORACLE.format(hidden="[(m, n, cluster_x, cluster_y)]"))
    write("oracle_course_data", NB2, blank[NB2], ORACLE_COURSE_DATA)
    write("oracle_unwrapped", NB2, blank[NB2], ORACLE_UNWRAPPED)
    for who in ("oracle", "oracle_course_data", "oracle_unwrapped"):
        cases.append(Case(who, who, "cheat", {NB2: 0}))

    # hogs of the host: each costs its own submission at most
    from bwlab.tools.grading import isolation
    cgroups = isolation.detect().kind != "none"
    write("memfd_hog", NB2, key[NB2], MEMFD_HOG.format(n=20 if full else 8))
    cases.append(Case("memfd_hog", "memfd_hog", "hostile",
                      {NB2: "FAILED:memory limit" if cgroups else 12},
                      stdout={} if cgroups else {NB2: ("Operation not permitted", "memfd hog: kept")}))
    sc = _syscalls()
    write("key_writer", NB2, key[NB2], KEY_WRITER.format(**sc))
    write("key_reader", NB2, key[NB2], KEY_READER.format(**sc))
    cases.append(Case("key_writer", "key_writer", "hostile", {NB2: 12}, stdout={NB2: ("add_key: -1 1", "")}))
    cases.append(Case("key_reader", "key_reader", "hostile", {NB2: 12},
                      stdout={NB2: ("no key found", "read a classmate's key")}))
    write("slot_hog", NB2, key[NB2], SLOT_HOG.format(n=100_000 if full else 200, hold=25 if full else 8))
    cases.append(Case("slot_hog", "slot_hog", "hostile", {NB2: 12}))

    # folder trees: a 1000-deep folder is graded where its notebook is shallow, a linked folder is not
    write("deep_folder", NB2, key[NB2])
    d = out / "deep_folder"
    for _ in range(1000):
        d = d / "d"
        d.mkdir()
    (d / f"{NB2}_deep.ipynb").write_text("{}")
    cases.append(Case("deep_folder", "deep_folder", "honest", {NB2: 12}, problem="not searched: deeper than"))
    (out / "copycat").symlink_to(out / "honest_a")
    cases.append(Case("copycat", "", "cheat", problem="copycat / (folder): not graded: a symbolic link"))
    return cases


if __name__ == "__main__":
    made = make_class(Path(sys.argv[1]), Path(sys.argv[2]), "--full" in sys.argv)
    print(f"{len(made)} cases in {sys.argv[2]}")
