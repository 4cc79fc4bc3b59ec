"""The capstone's two skeletons (cuda_src/capstone/), their TODO regions, and a kernel assembled from fills.

A skeleton is a whole, persistent, warp-specialised GEMM kernel with its pipeline taken out: each
`// TODO(name)` ... `// END TODO` block marks where a wait, an arrival, an expect_tx, a commit or a fence
belongs (a name may mark several places: the same code goes into each). `assemble(kernel, fills)` puts a
fill (C++ statements, a string) into every place of its name and remembers which line of the kernel came
from which line of which fill, so that a compile error or an emulator report can name the learner's line.

The skeletons are the ladder's persistent steps (gemm_sm90/s4_persistent.cu, gemm_sm100/s4_persistent.cu)
with the timeline stamps and the pipeline removed. `ladder_fill(kernel, name)` reads what the ladder's step
writes in a region's place, from the ladder's own file: an exercise is graded with the learner's fills in
its own regions and the ladder's lines in the others, so that each is graded on its own. This package
holds no other copy of the pipeline.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..source import source_text

__all__ = ["Skeleton", "KERNELS", "skeleton", "todo_regions", "Assembled", "assemble", "ladder_fill",
           "ladder_fills", "FillError"]


class FillError(ValueError):
    """A fill that cannot go into the kernel (not a string, an unknown region, a brace left open)."""


@dataclass(frozen=True)
class Region:
    """Where a region's lines sit in the ladder's step: after `context`, between the lines holding
    `start` and `end` (exclusive); `given` lines there that the skeleton already has are left out."""
    context: str
    start: str
    end: str
    given: tuple = ()


@dataclass(frozen=True)
class Skeleton:
    key: str
    file: str            # under cuda_src/
    arch: str
    ladder: str          # the ladder step it is made from
    threads: int
    barriers: dict       # barrier id -> name (the bounded waits' reports)
    regions: dict = field(default_factory=dict)   # name -> Region


KERNELS = {
    "hopper": Skeleton(
        "hopper", "capstone/hopper_ws.cu", "sm_90a", "gemm_sm90/s4_persistent.cu", 384,
        {1: "full (a stage's bytes have landed)", 2: "empty (every consumer warp has released a stage)"},
        {"producer_acquire": Region("if (wg == 0) {", "stamp(stamps, 0, it, 0);", "tma_load_2d(sA, &tma_a",
                                    ("u8* sA = smem + s * STAGE_BYTES;",)),
         "consumer_wait": Region("setmaxnreg_inc<232>();", "const int s = it % STAGES;", "const u32 sA = smem_u32("),
         "consumer_release": Region("setmaxnreg_inc<232>();", "if (kt > 0) {", "}")}),
    "blackwell": Skeleton(
        "blackwell", "capstone/blackwell_ws.cu", "sm_100a", "gemm_sm100/s4_persistent.cu", 192,
        {0: "full (a stage's TMA bytes)", 1: "empty (tcgen05.commit: a stage's MMAs completed)",
         3: "tmem_full (tcgen05.commit: an accumulator holds a finished tile)",
         4: "tmem_empty (the epilogue warps have read an accumulator out)"},
        {"tma_acquire": Region("if (warp == WARP_TMA) {", "stamp(st, TRACK_TMA, it, 0);",
                               "tma_load_2d(smem + s * STAGE_BYTES + SMEM_A"),
         "mma_acc_acquire": Region("} else if (warp == WARP_MMA) {", "const u32 buf = acc % ACC_BUFS",
                                   "const u32 d = tmem + buf * BN;"),
         "mma_wait_full": Region("} else if (warp == WARP_MMA) {", "stamp(st, TRACK_MMA, it, 0);",
                                 "const u32 a = base + s * STAGE_BYTES + SMEM_A"),
         "mma_release_stage": Region("} else if (warp == WARP_MMA) {", "IDESC, (kb | k) != 0);",
                                     "stamp(st, TRACK_MMA, it, 1);"),
         "mma_acc_commit": Region("} else if (warp == WARP_MMA) {", "stamp(st, TRACK_MMA, it, 1);",
                                  "tcgen05_commit(&drained);", ("}",)),
         "epi_acc_wait": Region("const u32 q = warp % 4;", "if (lane == 0) stamp(st, TRACK_EPILOGUE + q, acc, 0);",
                                "const u32 row = tile.x * BM"),
         "epi_acc_release": Region("const u32 q = warp % 4;", "tmem_rows_to_gmem<BN, LD_COLS>(",
                                   "if (lane == 0) stamp(st, TRACK_EPILOGUE + q, acc, 1);")}),
}


def skeleton(kernel: str) -> Skeleton:
    """The skeleton named 'hopper' or 'blackwell'."""
    if kernel not in KERNELS:
        raise KeyError(f"no capstone kernel {kernel!r}; there are: {', '.join(KERNELS)}")
    return KERNELS[kernel]


_TODO = re.compile(r"^(?P<indent>[ \t]*)// TODO\((?P<name>\w+)\)[^\n]*\n(?:[ \t]*//(?! END TODO)[^\n]*\n)*"
                   r"[ \t]*// END TODO[^\n]*\n", re.M)


def todo_regions(text: str) -> list[tuple[str, int, int, str]]:
    """(name, start offset, end offset, indentation) of every TODO block of a kernel's text, in order."""
    return [(m["name"], m.start(), m.end(), m["indent"]) for m in _TODO.finditer(text)]


@dataclass
class Assembled:
    """A kernel with its TODO blocks filled: `text`, and for each of its lines that came from a fill,
    (region name, line of the fill, counted from 1) in `origin` (keyed by the kernel's line, from 1)."""
    kernel: str
    file: str
    text: str
    origin: dict
    edited: bool = False     # the learner's whole kernel (a %%cuda edit), not a skeleton with fills

    def where(self, line: int) -> str:
        """A line of the kernel in the learner's words."""
        if line in self.origin:
            name, n = self.origin[line]
            return f"line {n} of your {name}"
        if line - 1 in self.origin:        # a missing ';' is reported on the statement after it
            name, n = self.origin[line - 1]
            return f"line {line} of {self.file.rsplit('/', 1)[-1]} (given), just after line {n} of your {name}"
        name = self.file.rsplit('/', 1)[-1]
        return f"line {line} of your {name}" if self.edited else f"line {line} of {name} (given)"


def _clean(name: str, fill) -> list[str]:
    if not isinstance(fill, str):
        raise FillError(f"{name}: a fill is C++ statements in a string; got {type(fill).__name__}")
    depth = 0
    for ch in re.sub(r"//[^\n]*|\"(?:\\.|[^\"\\])*\"", "", fill):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth < 0:
            break
    if depth:
        raise FillError(f"{name}: a fill closes every brace it opens, and only those (it may not end the loop "
                        "or the function around it)")
    lines = fill.strip("\n").splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    indent = min((len(x) - len(x.lstrip()) for x in lines if x.strip()), default=0)
    return [x[indent:].rstrip() for x in lines]


def assemble(kernel: str, fills: dict) -> Assembled:
    """The skeleton `kernel` with each TODO block replaced by its fill (every region must have one)."""
    sk = skeleton(kernel)
    text = source_text(sk.file)
    regions = todo_regions(text)
    names = {r[0] for r in regions}
    unknown = sorted(set(fills) - names)
    if unknown:
        raise FillError(f"{sk.file} has no TODO region {unknown[0]!r}; its regions: {', '.join(sorted(names))}")
    missing = sorted(names - set(fills))
    if missing:
        raise FillError(f"{sk.file}: no fill for {', '.join(missing)}")
    clean = {name: _clean(name, f) for name, f in fills.items()}
    out, origin, pos = [], {}, 0
    for name, start, end, indent in regions:
        out.append(text[pos:start])
        first = "".join(out).count("\n") + 1
        body = clean[name] or [""]
        for i, line in enumerate(body):
            origin[first + i] = (name, i + 1)
        out.append("".join(f"{indent}{x}\n" if x else "\n" for x in body))
        pos = end
    out.append(text[pos:])
    return Assembled(kernel, sk.file, "".join(out), origin)


def _strip(line: str) -> str:
    return re.sub(r"\s+", " ", line.strip())


def ladder_fill(kernel: str, name: str) -> str:
    """What the ladder's step writes in the place of region `name` (timeline stamps and comment lines
    left out), read from the step's file, on one line."""
    sk = skeleton(kernel)
    r = sk.regions[name]
    lines = source_text(sk.ladder).splitlines()

    def find(text, after):
        for i in range(after, len(lines)):
            if text in lines[i]:
                return i
        raise LookupError(f"{sk.ladder}: no line holding {text!r} after line {after + 1}: the capstone's "
                          f"region {name!r} no longer matches the ladder's step")
    c = find(r.context, 0)
    s = find(r.start, c)
    e = find(r.end, s + 1)
    given = {_strip(g) for g in r.given}
    keep = [re.sub(r"\s*//.*$", "", x.strip()) for x in lines[s + 1:e]
            if x.strip() and not x.strip().startswith("//") and "stamp(" not in x and _strip(x) not in given]
    return " ".join(keep)      # one line, as a graded answer is written


def ladder_fills(kernel: str) -> dict:
    """Every region's ladder_fill."""
    return {name: ladder_fill(kernel, name) for name in skeleton(kernel).regions}
