"""Teaching kernels a learner reads, edits and runs again.

Every stage has a short, complete teaching kernel in `cuda_src/teach_<stage>.cu`: the handshake and the
instruction, with bounded waits, nothing else. `TeachingKernel` holds its text; a notebook shows it,
a learner changes it, and the stage's runner compiles and runs the changed text:

    k = TeachingKernel("teach_tma.cu")
    k.show()
    mine = k.replace("tx_bytes = box_bytes;", "tx_bytes = box_bytes + 16;")   # announce 16 bytes too many
    mine.compile()                                        # sm_90a by default; errors point at your line
    print(mine.diff())

or, in a notebook, with the `%cuda` magics (`%load_ext bwlab.lab` once):

    %cuda --load teach_tma.cu       # a new cell below: `%%cuda teach_tma.cu` and the kernel, to edit

    %%cuda teach_tma.cu
    ... the whole kernel, edited ...

    %cuda --diff teach_tma.cu       # your change, against cuda_src/teach_tma.cu
    %cuda --reset teach_tma.cu      # undo: the stage runs cuda_src/teach_tma.cu again (no file: every edit)

`%%cuda FILE` compiles the cell's text and, if it compiles, keeps it as `bwlab.lab.edited("teach_tma.cu")`,
which every runner of that file then uses, with or without `kernel=` (`kept(FILE)`; the magic names the
calls, `RUNS`; a ladder step is named by its path, `gemm_sm90/s3_warp_specialized.cu`, or by its file name
alone); a harness kernel is compiled but not kept. A compile error is shown on the line of the cell it
refers to (the `%%cuda` line is line 1), with the lines before it, and the previous version stays.
`bwlab.lab.reset(FILE)` undoes in Python. Long outputs are folded in a notebook (`fold`, `Folded`).

The cell's editor highlights the kernel as Python: JupyterLab 4 takes a cell's editor mode from the
notebook's language, and only a JupyterLab extension can map a cell magic to another mode. So a compile
error is shown in the cell's output with the cell's lines around it highlighted as CUDA C++ (pygments)
and the error line marked (`CellErrors`).
"""
from __future__ import annotations

from .compile import CUDA_SRC, Compiled, CompileError, compile_text, load_text_module
from .source import function_source, source_text

__all__ = ["TeachingKernel", "Folded", "fold", "FOLD_AT", "edited", "kept", "canonical", "runs_of", "RUNS", "reset",
           "EDITS", "CompileError",
           "load_ipython_extension", "isolate", "run_edited", "cell_errors", "CellErrors"]

# The kernels a learner changed with %%cuda, by file name (its path under cuda_src/).
EDITS: dict[str, "TeachingKernel"] = {}

# Which calls run a kept %%cuda edit of each file: every one of them loads `kept(file)` instead of the
# file (tests/test_lab_edits.py edits each file and proves the next run executes the edit). A file not
# named here (a harness kernel) is only compiled: no call of the course launches an edit of it.
_LADDER_SM90 = ("gemm.GemmCase(step, M, N, K).run()/check() and every run of that step "
                "(gemm.runner.run_step, run_step_emulated, the ladder's timelines)")
_LADDER_SM100 = "every run of that Blackwell step (gemm.runner.run_sm100, gemm.sm100.run_sm100_emulated)"
RUNS: dict[str, str] = {
    "hello_bulk.cu": "hello_roundtrip() and HelloCopy().run()/check()/results()",
    "teach_tma.cu": "tma.TmaLoad(..., kernel='teach_tma.cu') and tma.case.run_teach",
    "teach_multicast.cu": "multicast.MulticastLoad(..., kernel='teach_multicast.cu') and multicast.case.run_teach",
    "teach_wgmma.cu": "umma.WgmmaCase(..., kernel='teach_wgmma.cu') and umma.runner.run_teach_wgmma",
    "teach_umma.cu": "umma.UmmaCase(..., kernel='teach_umma.cu') and umma.runner.run_teach_umma",
    "teach_tmem.cu": "tmem.try_teach(), tmem.teach_case() and tmem.case.run_teach",
    "teach_store.cu": "epilogue.Epilogue(..., kernel='teach_store.cu') and epilogue.case.run_teach",
    "full_flow_sm100.cu": "Flow(...).run()/check()/trace('hardware' or 'emulated'), with or without kernel=",
    "full_flow_sm90.cu": "Flow(...).trace('hybrid') and the Hopper twin (flow.runner.run_hopper)",
    "teach_blockscaled.cu": "umma.blockscaled_case: BlockScaledCase(...).run() and run_where_possible(case)",
    "capstone/hopper_ws.cu": "capstone.try_kernel('hopper') (the graded exercises take their fills as strings)",
    "capstone/blackwell_ws.cu": "capstone.try_kernel('blackwell') (the graded exercises take their fills as strings)",
}


def canonical(file) -> str:
    """A kernel's name as EDITS keys it: its path under cuda_src/ (`s3_warp_roles.cu` is found in its
    folder when the name is unique there)."""
    from pathlib import Path
    name = str(file)
    if not name.endswith((".cu", ".cuh")):
        name += ".cu"
    if Path(name).is_absolute() or (CUDA_SRC / name).exists():
        return name
    found = sorted(p.relative_to(CUDA_SRC).as_posix() for p in CUDA_SRC.rglob(Path(name).name))
    return found[0] if len(found) == 1 else name


def runs_of(file) -> str | None:
    """The calls that run a kept edit of `file`, in words; None for a file no call launches edited."""
    name = canonical(file)
    if name in RUNS:
        return RUNS[name]
    if name.startswith("gemm_sm90/") and name.endswith(".cu"):
        return _LADDER_SM90
    if name.startswith("gemm_sm100/") and name.endswith(".cu"):
        return _LADDER_SM100
    return None


def kept(file) -> "TeachingKernel | None":
    """The learner's kept %%cuda edit of `file`, or None: what a runner that was given no kernel loads
    instead of the file."""
    return EDITS.get(canonical(file))


def _targets(text: str) -> tuple[str, ...]:
    """The architectures a source builds for: its `// bwlab-targets:` line, else sm_100a for tcgen05
    code and sm_90a otherwise (the convention of cuda_src/, see tests/test_compile.py)."""
    for line in text.splitlines()[:5]:
        if line.startswith("// bwlab-targets:"):
            return tuple(line.split(":", 1)[1].split())
    return ("sm_100a",) if "tcgen05" in text else ("sm_90a",)


# A notebook's output shows at most this many lines; what is longer is folded (an HTML <details>).
FOLD_AT = 40


class Folded:
    """A long text as a notebook shows it: its first `head` lines, then the rest in an HTML <details>
    element (closed; `summary` says what is inside). The plain-text form (a terminal, the stored
    notebook's text/plain) is the head and one line saying how much was folded; `.text` is all of it."""

    def __init__(self, text: str, head: int = 30, summary: str = ""):
        self.text = str(text).rstrip("\n")
        lines = self.text.splitlines()
        self.head, self.rest = lines[:head], lines[head:]
        self.summary = summary or f"{len(self.rest)} more lines (the object's .text holds all of it)"

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        if not self.rest:
            return self.text
        return "\n".join(self.head) + f"\n[... {self.summary}: folded]"

    def _repr_html_(self) -> str:
        from html import escape
        pre = '<pre style="margin:0">{}</pre>'
        out = pre.format(escape("\n".join(self.head)))
        if self.rest:
            out += (f"<details><summary>{escape(self.summary)}</summary>"
                    + pre.format(escape("\n".join(self.rest))) + "</details>")
        return out


def fold(text: str, head: int = 30, summary: str = "") -> None:
    """Show `text`: whole when it is at most FOLD_AT lines (or outside a notebook), else its first
    `head` lines and the rest folded (`Folded`)."""
    text = str(text).rstrip("\n")
    if len(text.splitlines()) <= FOLD_AT:
        print(text)
        return
    _show(Folded(text, head, summary))


class TeachingKernel:
    """The text of one teaching kernel file, original or edited."""

    def __init__(self, file: str, text: str | None = None):
        self.file = canonical(file)
        self.original = source_text(self.file)
        self.text = self.original if text is None else text

    @property
    def edited(self) -> bool:
        return self.text != self.original

    @property
    def targets(self) -> tuple[str, ...]:
        return _targets(self.text)

    def show(self, function: str | None = None, head: int = FOLD_AT - 1) -> None:
        """Print the kernel file, or one function of it (`function`: the kernel's own code without the file's
        header comment): whole up to FOLD_AT lines, else (in a notebook) the first `head` lines and the rest
        folded, `print(kernel.text)` showing all of it."""
        text = function_source(self.text, function) if function else self.text.rstrip("\n")
        n = len(text.splitlines())
        where = f"{function}() of {self.file}" if function else self.file
        fold(text, head, f"the rest of {where}: {max(0, n - head)} more lines (print(kernel.text) for the file)")

    def replace(self, old: str, new: str, count: int = 1) -> "TeachingKernel":
        """A copy with `old` replaced by `new` (exactly `count` occurrences must exist)."""
        n = self.text.count(old)
        if n != count:
            raise ValueError(f"{self.file}: expected {count} occurrence(s) of {old!r}, found {n}")
        return TeachingKernel(self.file, self.text.replace(old, new))

    def compile(self, arch: str | None = None, defines: dict | None = None, name_expressions=()) -> Compiled:
        """Compile for `arch` (default: the file's first target). Needs no GPU."""
        return compile_text(self.text, self.file, arch or self.targets[0], defines, name_expressions)

    def load(self, defines: dict | None = None, name_expressions=()):
        """Compile for this GPU and load it (a `bwlab.compile.Module`)."""
        return load_text_module(self.text, self.file, defines, name_expressions)

    def diff(self) -> str:
        """The learner's change, as a unified diff against the original."""
        import difflib
        return "".join(difflib.unified_diff(self.original.splitlines(True), self.text.splitlines(True),
                                            f"cuda_src/{self.file}", f"{self.file} (edited)"))

    def __repr__(self):
        return f"TeachingKernel({self.file!r}{', edited' if self.edited else ''})"


def edited(file: str) -> TeachingKernel:
    """The learner's version of `file` if a %%cuda cell changed it, else the original."""
    return EDITS.get(canonical(file)) or TeachingKernel(file)


def isolate(kernel: TeachingKernel) -> bool:
    """Whether a runner should hand this kernel to a worker process: an edited kernel, unless we are
    already in one. The original kernels are checked on GPUs and run in the notebook's process."""
    from .sandbox import in_worker
    return kernel.edited and not in_worker()


def run_edited(runner, *args, kernel: TeachingKernel, limit: float = 10.0, **kwargs):
    """`runner(*args, kernel=kernel, **kwargs)` in a worker process (`bwlab.sandbox.run_isolated`): a
    fault comes back as KernelFault, a hang after `limit` seconds as KernelHang, a bounded wait's
    timeout as MbarrierTimeout, and the notebook's CUDA context is never touched. The kernel is
    compiled here first, so a compile error shows on the learner's line before any process starts.
    (`limit` includes the worker's build of the kernel when the runner adds defines.)"""
    from . import device
    from .sandbox import run_isolated
    kernel.compile(device.native_arch())
    return run_isolated(runner, *args, kernel=kernel, name=f"{kernel.file} (edited)", limit=limit, **kwargs)


def reset(file: str | None = None) -> list[str]:
    """Undo `%%cuda` edits: of `file`, or of every kernel when None; returns the files reset."""
    if file is None:
        done = sorted(EDITS)
        EDITS.clear()
        return done
    file = canonical(file)
    return [file] if EDITS.pop(file, None) is not None else []


def _same_file(where: str, file: str) -> bool:
    """Whether a compiler diagnostic's file is the cell's kernel (NVRTC names it by its base name, a file
    in a folder of cuda_src/ too)."""
    return where.replace("\\", "/").rsplit("/", 1)[-1] == file.replace("\\", "/").rsplit("/", 1)[-1]


def _header_context(where: str, line: int) -> list[str]:
    """The lines around `line` of a header the kernel includes (a file under cuda_src/), numbered as in
    that file; [] when it cannot be read."""
    from pathlib import Path
    p = Path(where.replace("\\", "/"))
    if not p.is_absolute():
        p = CUDA_SRC / p
    try:
        lines = p.read_text().splitlines()
    except OSError:
        return []
    if not 1 <= line <= len(lines):
        return []
    return [f"{'>' if n == line else ' '}{n:4d} | {lines[n - 1]}"
            for n in range(max(1, line - 2), min(len(lines), line + 1) + 1)]


def cell_errors(e: CompileError, file: str, first_line: int = 2) -> str:
    """A compile error told in the lines of a `%%cuda` cell: the text's line n is the cell's line
    n + first_line - 1 (the magic's own line is line 1). Errors in a header name the header's line."""
    lines = (e.source or "").splitlines()
    out = []
    for where, line, kind, msg in e.diagnostics:
        if kind == "warning":
            continue
        if not _same_file(where, file) or not 1 <= line <= len(lines):
            out.append(f"{kind} in {where.replace(str(CUDA_SRC), 'cuda_src')}, line {line}: {msg}")
            out.extend(_header_context(where, line))
            continue
        at = line + first_line - 1
        out.append(f"{kind} on line {at} of this cell: {msg}")
        # three lines before: a missing ';' is reported on the next statement, a line or two further on
        for n in range(max(1, line - 3), min(len(lines), line + 1) + 1):
            out.append(f"{'>' if n == line else ' '}{n + first_line - 1:4d} | {lines[n - 1]}")
    return "\n".join(out) if out else str(e).split("--- compiler log ---", 1)[-1].strip()


class CellErrors:
    """A `%%cuda` cell's compile errors: as text (`str`, `cell_errors`) and, in a notebook, as HTML in
    which the cell's lines around each error are highlighted as CUDA C++ (pygments' CUDA lexer) with
    the error line marked and numbered as in the cell. JupyterLab 4 highlights the cell's own editor in
    the notebook's language (Python), and mapping a cell magic to another editor mode takes a
    JupyterLab extension; the output is where the kernel is shown as CUDA."""

    def __init__(self, e: CompileError, file: str, first_line: int = 2, context: int = 2):
        self.text = cell_errors(e, file, first_line)
        self.error, self.file, self.first_line, self.context = e, file, first_line, context

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text

    def _repr_html_(self) -> str | None:
        try:
            from pygments import highlight
            from pygments.formatters import HtmlFormatter
            from pygments.lexers import CudaLexer
        except ImportError:      # no pygments: the text form is shown
            return None
        from html import escape
        lines = (self.error.source or "").splitlines()
        parts = []
        for where, line, kind, msg in self.error.diagnostics:
            if kind == "warning":
                continue
            if not _same_file(where, self.file) or not 1 <= line <= len(lines):
                parts.append(f"<p><b>{escape(kind)}</b> in {escape(where.replace(str(CUDA_SRC), 'cuda_src'))}, "
                             f"line {line}: {escape(msg)}</p>")
                continue
            lo, hi = max(1, line - self.context), min(len(lines), line + self.context)
            fmt = HtmlFormatter(noclasses=True, linenos="inline", linenostart=lo + self.first_line - 1,
                                hl_lines=[line - lo + 1])
            parts.append(f"<p><b>{escape(kind)} on line {line + self.first_line - 1} of this cell</b> "
                         f"(highlighted): {escape(msg)}</p>"
                         + highlight("\n".join(lines[lo - 1:hi]) + "\n", CudaLexer(stripnl=False), fmt))
        return "\n".join(parts) if parts else None


def _show(obj) -> None:
    """display() in an IPython shell (a notebook shows the HTML form), else print the text."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        print(obj)
        return
    if get_ipython() is None:
        print(obj)
    else:
        display(obj)


def _cuda_magic(line: str, cell: str | None = None):
    """`%%cuda FILE` (cell): compile the cell's kernel and keep it. `%cuda --load FILE`, `%cuda --diff FILE`,
    `%cuda --reset [FILE]` (line magics): see the module's docstring."""
    words = line.split()
    opts = [w for w in words if w.startswith("--")]
    names = [w for w in words if not w.startswith("--")]
    file = names[0] if names else None
    if file and not file.endswith(".cu"):
        file += ".cu"
    if len(opts) > 1 or len(names) > 1 or (opts and opts[0] not in ("--reset", "--load", "--diff")):
        print("usage: %%cuda FILE (then the kernel) | %cuda --load FILE | %cuda --diff FILE | %cuda --reset [FILE]")
        return None
    if opts:
        if cell and cell.strip():
            print(f"%cuda {opts[0]} takes no kernel text: the cell's text was not used")
        if opts[0] == "--reset":
            done = reset(file)
            if done:
                print(f"reset {', '.join(done)}: the stage's runner uses cuda_src/ again")
            else:
                print(f"{file or 'no kernel'}: nothing to reset (no %%cuda edit kept)")
            return None
        if file is None:
            print(f"%cuda {opts[0]} needs a FILE")
            return None
        k = edited(file)
        if opts[0] == "--diff":
            print(k.diff() or f"{k.file}: unchanged from cuda_src/")
            return None
        text = f"%%cuda {k.file}\n" + k.text.rstrip("\n")
        try:
            from IPython import get_ipython
            ip = get_ipython()
        except ImportError:
            ip = None
        if ip is None:
            return text
        ip.set_next_input(text, replace=False)
        print(f"a new cell below holds {k.file}" + (" (your edited version)" if k.edited else "")
              + ": change it and run it")
        return None
    file = file or "kernel.cu"
    k = TeachingKernel(file, cell or "")
    for arch in k.targets:
        try:
            k.compile(arch)
        except CompileError as e:
            print(f"{k.file} does not compile for {arch}:")
            _show(CellErrors(e, k.file))
            print(f"\n{k.file} was NOT kept: the stage still runs the previous version.")
            return None
    runs = runs_of(k.file)
    if runs is None:
        print(f"{k.file}: compiled for {', '.join(k.targets)}, but no call of the course launches an edit of it "
              f"(a harness kernel); edit a teaching kernel ({', '.join(sorted(RUNS))}) or a ladder step instead.")
        return None
    EDITS[k.file] = k
    print(f"{k.file}: compiled for {', '.join(k.targets)}" + ("" if k.edited else " (unchanged from cuda_src/)")
          + f". From now on this version is what runs in: {runs}. Undo: %cuda --reset {k.file}")
    return None


def load_ipython_extension(ipython) -> None:
    """`%load_ext bwlab.lab` registers the `%%cuda FILE` cell magic and the `%cuda --load/--diff/--reset`
    line magic."""
    ipython.register_magic_function(_cuda_magic, magic_kind="line_cell", magic_name="cuda")
