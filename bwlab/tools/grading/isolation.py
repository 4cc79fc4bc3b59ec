"""Limits the host can rely on: a cgroup per sandbox, a user id per sandbox, a seccomp filter.

rlimits count per process (RLIMIT_AS) or per user id (RLIMIT_NPROC): a memfd or a file in a tmpfs is
no process's address space, and one user id shared by every sandbox shares one process count and one
keyring. So each sandbox (and each jailed check, bwlab.tools.grading.jail) gets

* **its own cgroup** where the host offers one: cgroup v2 (memory.max, pids.max, cpu.max) where the
  grader's own cgroup delegates those controllers, else cgroup v1 (memory, pids and cpu hierarchies:
  memory.limit_in_bytes, pids.max, cpu.cfs_quota_us). The memory controller charges every page the
  sandbox's processes touch, shared memory, tmpfs files and memfds included, so the limit holds for
  the whole process tree; `describe(detect())` is the line `grade` prints when it starts;
* **its own user id** (`UidSlot`: UID_BASE + a slot no other running sandbox on this machine holds,
  taken with a lock file), so RLIMIT_NPROC counts its processes only and a hog's processes take no
  classmate's slots;
* **a seccomp filter** (`seccomp_program`, classic BPF written here, handed to bubblewrap's --seccomp):
  the keyring calls (add_key, request_key, keyctl) always fail with EPERM, so no key is shared between
  sandboxes or survives a run; without a memory cgroup, memfd_create and memfd_secret fail too, since
  nothing else would count them. Syscalls of another ABI (i386, x32) fail with ENOSYS.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import platform
import signal
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path

UID_BASE = 100_000          # sandbox user ids: UID_BASE .. UID_BASE + UID_SLOTS - 1 (no /etc/passwd entry)
UID_SLOTS = 1000
SLOT_DIR = Path("/run/bwlab-grading")          # root's lock files, one per slot in use
CONTROLLERS = ("memory", "pids", "cpu")


# ---------------------------------------------------------------------------------------------------
# a user id per sandbox

class UidSlot:
    """A sandbox user id that no other running sandbox on this machine holds (a lock file per slot,
    held for the sandbox's life and released by `release`, or by the kernel when the grader dies)."""

    def __init__(self):
        folder = SLOT_DIR if _writable_dir(SLOT_DIR) else Path("/tmp/bwlab-grading-slots")
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        start = (os.getpid() * 7) % UID_SLOTS
        for k in range(UID_SLOTS):
            n = (start + k) % UID_SLOTS
            fd = os.open(folder / f"slot-{n}", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            self.fd, self.uid, self.owner = fd, UID_BASE + n, os.getpid()
            return
        raise RuntimeError(f"all {UID_SLOTS} sandbox user ids are in use on this machine")

    def release(self) -> None:
        """Kill whatever still runs as this user id (nothing should: the sandbox's PID namespace ended),
        then free the slot. Only the process that took the slot releases it."""
        if getattr(self, "fd", None) is None or os.getpid() != self.owner:
            return
        kill_uid(self.uid)
        with contextlib.suppress(OSError):
            os.close(self.fd)
        self.fd = None


def _writable_dir(p: Path) -> bool:
    try:
        p.mkdir(mode=0o700, parents=True, exist_ok=True)
        return os.access(p, os.W_OK)
    except OSError:
        return False


def uid_processes(uid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            with contextlib.suppress(OSError, StopIteration, ValueError):
                line = next(l for l in (d / "status").read_text().splitlines() if l.startswith("Uid:"))
                if int(line.split()[1]) == uid:
                    out.append(int(d.name))
    return out


def kill_uid(uid: int, wait_s: float = 5.0) -> None:
    end = time.monotonic() + wait_s
    while True:
        pids = uid_processes(uid)
        if not pids or time.monotonic() > end:
            return
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)


# ---------------------------------------------------------------------------------------------------
# cgroups

@dataclass
class CgroupMode:
    kind: str                                   # "v2", "v1" or "none"
    parents: dict = field(default_factory=dict)  # controller -> folder under which sandboxes' cgroups go
    why: str = ""                               # why none (or what is missing)


_MODE: CgroupMode | None = None


def detect(refresh: bool = False) -> CgroupMode:
    """What this machine offers: v2 where the grader's cgroup can have children with memory, pids and
    cpu; else v1 where the memory and pids hierarchies let it make children; else none (and why)."""
    global _MODE
    if _MODE is not None and not refresh:
        return _MODE
    if os.environ.get("BWLAB_CGROUPS", "").strip() == "none":        # to test the fallback on purpose
        _MODE = CgroupMode("none", why="BWLAB_CGROUPS=none")
        return _MODE
    whys = []
    for probe in (_detect_v2, _detect_v1):
        try:
            mode = probe()
        except OSError as e:
            mode = CgroupMode("none", why=str(e))
        if mode.kind != "none":
            _MODE = mode
            return mode
        whys.append(mode.why)
    _MODE = CgroupMode("none", why="; ".join(w for w in whys if w))
    return _MODE


def _mounts() -> list[tuple[str, str, set]]:
    """(mount point, file system type, super options) of every cgroup mount."""
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fs = right.split()
        if fs and fs[0] in ("cgroup", "cgroup2"):
            out.append((left.split()[4], fs[0], set(fs[2].split(",")) if len(fs) > 2 else set()))
    return out


def _own(hierarchy: str) -> str | None:
    """This process's path in a hierarchy of /proc/self/cgroup ('' for v2's, a controller for v1's)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, ctrls, path = line.split(":", 2)
        if (hierarchy == "" and ctrls == "") or hierarchy in ctrls.split(","):
            return path
    return None


def _probe_dir(parent: Path) -> None:
    """OSError unless a child cgroup can be made (and removed) under `parent`."""
    probe = parent / f"bwlab-probe-{os.getpid()}"
    probe.mkdir()
    probe.rmdir()


def _detect_v2() -> CgroupMode:
    mount = next((m for m, fs, _ in _mounts() if fs == "cgroup2"), None)
    own = _own("")
    if mount is None or own is None:
        return CgroupMode("none", why="no cgroup2 mount")
    parent = Path(mount) / own.lstrip("/")
    have = set((parent / "cgroup.controllers").read_text().split())
    if not set(CONTROLLERS) <= have:
        return CgroupMode("none", why=f"cgroup v2 offers {' '.join(sorted(have)) or 'no controller'} here, "
                                      "not memory, pids and cpu")
    enabled = set((parent / "cgroup.subtree_control").read_text().split())
    if not set(CONTROLLERS) <= enabled:
        try:
            (parent / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in CONTROLLERS))
        except OSError as e:
            return CgroupMode("none", why=f"cgroup v2: cannot delegate memory, pids and cpu below {parent} ({e})")
    _probe_dir(parent)
    return CgroupMode("v2", {c: parent for c in CONTROLLERS})


def _detect_v1() -> CgroupMode:
    parents = {}
    for c in CONTROLLERS:
        mount = next((m for m, fs, opts in _mounts() if fs == "cgroup" and c in opts), None)
        own = _own(c)
        if mount is None or own is None:
            continue
        parent = Path(mount) / own.lstrip("/")
        try:
            _probe_dir(parent)
        except OSError:
            continue
        parents[c] = parent
    if not {"memory", "pids"} <= set(parents):
        return CgroupMode("none", why="no usable cgroup v1 memory and pids hierarchies")
    return CgroupMode("v1", parents, why="" if "cpu" in parents else "no cpu hierarchy")


def describe(mode: CgroupMode) -> str:
    """The line `grade` prints when it starts."""
    if mode.kind == "none":
        return ("sandbox limits: no cgroup on this machine (" + (mode.why or "none found") + "): rlimits per "
                "process and a user id per sandbox; memfd_create and the keyring calls are denied by a "
                "seccomp filter, since no memory limit would count them")
    ctl = ", ".join(c for c in CONTROLLERS if c in mode.parents)
    return (f"sandbox limits: cgroup {mode.kind} ({ctl}) per sandbox, memory counting shared memory and memfds; "
            "a user id per sandbox; the keyring calls are denied by a seccomp filter")


_SEQ = [0]


class Cgroup:
    """One sandbox's cgroup: made with its limits, joined by the sandbox's first process (`join`, in
    the child before exec), emptied and removed by `destroy`."""

    def __init__(self, mode: CgroupMode, memory_bytes: int, pids: int, cpus: float = 1.0, tag: str = "sandbox"):
        self.mode, self.dirs, self.owner = mode, {}, os.getpid()
        _SEQ[0] += 1
        name = f"bwlab-{tag}-{os.getpid()}-{_SEQ[0]}-{os.urandom(3).hex()}"
        try:
            for c, parent in mode.parents.items():
                d = parent / name
                if d not in self.dirs.values():      # v2: one folder for every controller
                    d.mkdir()
                self.dirs[c] = d
            self._limit(memory_bytes, pids, cpus)
        except OSError:
            self.destroy()
            raise

    def _limit(self, memory_bytes: int, pids: int, cpus: float) -> None:
        period = 100_000
        if self.mode.kind == "v2":
            d = self.dirs["memory"]
            (d / "memory.max").write_text(str(memory_bytes))
            with contextlib.suppress(OSError):
                (d / "memory.swap.max").write_text("0")
            (d / "pids.max").write_text(str(pids))
            (d / "cpu.max").write_text(f"{int(period * cpus)} {period}")
            return
        m = self.dirs["memory"]
        (m / "memory.limit_in_bytes").write_text(str(memory_bytes))
        with contextlib.suppress(OSError):                  # swap accounting, where the kernel has it
            (m / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
        (self.dirs["pids"] / "pids.max").write_text(str(pids))
        if "cpu" in self.dirs:
            (self.dirs["cpu"] / "cpu.cfs_period_us").write_text(str(period))
            (self.dirs["cpu"] / "cpu.cfs_quota_us").write_text(str(int(period * cpus)))

    def join(self) -> None:
        """Move the calling process into this cgroup (its children follow). Safe in a preexec_fn."""
        for d in dict.fromkeys(self.dirs.values()):
            with open(d / "cgroup.procs", "w") as f:
                f.write(str(os.getpid()))

    def processes(self) -> list[int]:
        d = self.dirs.get("pids") or self.dirs.get("memory")
        try:
            return [int(x) for x in (d / "cgroup.procs").read_text().split()] if d else []
        except (OSError, ValueError):
            return []

    def out_of_memory(self) -> bool:
        """True when the memory limit was hit (the kernel refused or reclaimed past it, or killed)."""
        d = self.dirs.get("memory")
        if d is None:
            return False
        with contextlib.suppress(OSError, ValueError, StopIteration):
            if self.mode.kind == "v2":
                ev = dict(l.split() for l in (d / "memory.events").read_text().splitlines())
                return int(ev.get("oom_kill", 0)) > 0 or int(ev.get("max", 0)) > 0
            if int((d / "memory.failcnt").read_text()) > 0:
                return True
            oc = dict(l.split() for l in (d / "memory.oom_control").read_text().splitlines())
            return int(oc.get("oom_kill", 0)) > 0
        return False

    def peak_bytes(self) -> int | None:
        d = self.dirs.get("memory")
        for f in ("memory.max_usage_in_bytes", "memory.peak"):
            with contextlib.suppress(OSError, ValueError, AttributeError):
                return int((d / f).read_text())
        return None

    def destroy(self, wait_s: float = 10.0) -> None:
        """Kill every process left in it, wait for them to go, remove its folders (the owner only)."""
        if os.getpid() != self.owner:
            return
        end = time.monotonic() + wait_s
        while True:
            pids = self.processes()
            if not pids or time.monotonic() > end:
                break
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.05)
        for d in dict.fromkeys(self.dirs.values()):
            for _ in range(50):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)
        self.dirs = {}


# ---------------------------------------------------------------------------------------------------
# seccomp (classic BPF, as bubblewrap's --seccomp and prctl(PR_SET_SECCOMP) take it)

_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_NR = {   # the syscalls the filter denies, by architecture
    "x86_64": {"memfd_create": 319, "memfd_secret": 447, "add_key": 248, "request_key": 249, "keyctl": 250},
    "aarch64": {"memfd_create": 279, "memfd_secret": 447, "add_key": 217, "request_key": 218, "keyctl": 219},
}
KEYRING_CALLS = ("add_key", "request_key", "keyctl")
MEMFD_CALLS = ("memfd_create", "memfd_secret")
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_ALLOW, _ERRNO, _KILL = 0x7FFF0000, 0x00050000, 0x80000000


def seccomp_program(deny: tuple[str, ...], machine: str | None = None) -> bytes:
    """A seccomp filter (struct sock_filter[], native byte order) that makes each syscall of `deny`
    fail with EPERM, any syscall of another ABI with ENOSYS, and allows the rest."""
    machine = machine or platform.machine()
    if machine not in _AUDIT_ARCH:
        raise RuntimeError(f"no seccomp filter for {machine} (only {', '.join(_AUDIT_ARCH)})")
    nrs = [_NR[machine][n] for n in deny]
    ins = []

    def op(code, k, jt=0, jf=0):
        ins.append((code, jt, jf, k))
    op(_LD_W_ABS, 4)                                        # seccomp_data.arch
    op(_JEQ_K, _AUDIT_ARCH[machine], 1, 0)
    op(_RET_K, _ERRNO | errno.ENOSYS)
    op(_LD_W_ABS, 0)                                        # seccomp_data.nr
    if machine == "x86_64":                                 # x32 calls carry bit 30
        op(_JGE_K, 0x40000000, 0, 1)
        op(_RET_K, _ERRNO | errno.ENOSYS)
    for i, nr in enumerate(nrs):                            # each: equal -> the EPERM return after the list
        op(_JEQ_K, nr, len(nrs) - i, 0)
    op(_RET_K, _ALLOW)
    op(_RET_K, _ERRNO | errno.EPERM)
    return b"".join(struct.pack("=HBBI", *i) for i in ins)


def denied_calls(mode: CgroupMode) -> tuple[str, ...]:
    return KEYRING_CALLS + (() if "memory" in mode.parents else MEMFD_CALLS)


def install_seccomp(program: bytes) -> None:
    """Install `program` on the calling thread (after PR_SET_NO_NEW_PRIVS), as a jailed check does."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
    buf = ctypes.create_string_buffer(program, len(program))
    prog = SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
    if libc.prctl(38, 1, 0, 0, 0) != 0:                                     # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.prctl(22, 2, ctypes.byref(prog), 0, 0) != 0:                    # PR_SET_SECCOMP, FILTER
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")


def drop_capabilities() -> None:
    """Give up every capability (bounding set, effective, permitted, inheritable) of the calling
    process: a jailed check that keeps uid 0 (where the installation is not readable to other users)
    can then not override file permissions, trace, mount or kill other users' processes."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in range(64):
        if libc.prctl(24, cap, 0, 0, 0) != 0 and ctypes.get_errno() == errno.EINVAL:   # PR_CAPBSET_DROP
            break
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)              # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()                             # two {effective, permitted, inheritable}, all 0
    if libc.capset(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capset")
