"""Mutation testing, the generation half: the kernels that are mutated and every mutant of each.

A small C-aware locator (`call_sites`) finds the protocol's call sites in a kernel and the headers whose
helpers it calls (comments and strings masked, definitions skipped); `mutants_of` turns each into the mutants
`bwlab.checks.mutants` describes (remove, count+-1, tx+-16, early, depth+1), each recording file, line, the
text before and after, and the whole mutated file. Running them: `bwlab.checks.mutant_runs`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["Target", "TARGETS", "Site", "Mutant", "mask_comments", "call_sites", "mutants_of", "find_mutant"]

# ---- what a mutation may touch: the protocol's call sites, by function name ----------------------------
FENCES = ("fence_proxy_async_shared_cta", "fence_proxy_async_global", "fence_mbarrier_init_release_cluster",
          "tcgen05_fence_before_thread_sync", "tcgen05_fence_after_thread_sync", "wgmma_fence", "__threadfence")
WAITS = ("mbarrier_wait", "wait", "mbarrier_try_wait_parity", "mbarrier_try_wait_parity_cluster",
         "tcgen05_wait_drained", "wgmma_wait_group", "bulk_wait_group", "bulk_wait_group_read", "tcgen05_wait_ld",
         "tcgen05_wait_st", "barrier_cluster_wait_acquire")
COMMITS = ("tcgen05_commit", "tcgen05_commit_multicast_cta_group2", "wgmma_commit_group", "bulk_commit_group")
ARRIVES = ("mbarrier_arrive", "mbarrier_arrive_expect_tx", "mbarrier_arrive_cluster", "mbarrier_arrive_remote",
           "barrier_cluster_arrive_release", "release")
SYNCS = ("cluster_sync", "pair_sync", "__syncthreads", "named_barrier_sync", "__syncwarp")
KIND = {**{n: "fence" for n in FENCES}, **{n: "wait" for n in WAITS}, **{n: "commit" for n in COMMITS},
        **{n: "arrive" for n in ARRIVES}, **{n: "sync" for n in SYNCS}}
RELEASES = ARRIVES + COMMITS
DEPTH = ("wgmma_wait_group", "bulk_wait_group", "bulk_wait_group_read")
# helpers of the kernels' headers whose body waits (moving a release above a call of one is 'early')
WAITING_HELPERS = ("tmem_rows_to_gmem",)
# `wait` is a name only ladder.cuh gives a function; elsewhere it would be an ordinary word
_LOCAL_NAMES = {"wait": ("gemm_sm100/",), "release": ("gemm_sm90/",)}
# header helpers not mutated inside: the body of ladder100::wait is every wait of the kernel at once
_HEADER_SKIP = {"gemm_sm100/ladder.cuh": ("wait",)}


@dataclass(frozen=True)
class Target:
    """One kernel of the suite: its files (the .cu first, then the headers whose helpers it calls), the
    arch, and `run`, the name of the function in this module that runs it and compares with the model."""
    name: str
    arch: str
    files: tuple
    run: str
    cluster: bool = False
    step: str = ""


def _ladder_targets():
    from ..gemm import sm100
    from ..gemm.ladder import ALL_STEPS
    out = []
    for s in ALL_STEPS:
        out.append(Target(f"sm90/{s.name}", "sm_90a", (s.path, "gemm_sm90/gemm_common.cuh"), "_run_sm90_step",
                          cluster=s.cluster > 1, step=s.name))
    for s in sm100.STEPS_SM100:
        out.append(Target(f"sm100/{s['name']}", "sm_100a", (s["file"], "gemm_sm100/ladder.cuh"), "_run_sm100_step",
                          cluster=s["cluster"] > 1, step=str(s["step"])))
    return out


TARGETS = {t.name: t for t in _ladder_targets() + [
    Target("full_flow_sm90", "sm_90a", ("full_flow_sm90.cu",), "_run_flow_sm90"),
    Target("full_flow_sm100", "sm_100a", ("full_flow_sm100.cu",), "_run_flow_sm100"),
    Target("teach_tma", "sm_90a", ("teach_tma.cu",), "_run_teach_tma"),
    Target("teach_multicast", "sm_90a", ("teach_multicast.cu",), "_run_teach_multicast", cluster=True),
    Target("teach_wgmma", "sm_90a", ("teach_wgmma.cu",), "_run_teach_wgmma"),
    Target("teach_store", "sm_90a", ("teach_store.cu",), "_run_teach_store"),
    Target("teach_umma", "sm_100a", ("teach_umma.cu",), "_run_teach_umma"),
    Target("teach_tmem", "sm_100a", ("teach_tmem.cu",), "_run_teach_tmem"),
]}


# ---- the locator ------------------------------------------------------------------------------------------
def mask_comments(text: str) -> str:
    """`text` with comments and string/char literals replaced by spaces (newlines kept): the same
    offsets, nothing in a comment mistaken for code."""
    out, i, n = list(text), 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j += 1
        else:
            i += 1
            continue
        for k in range(i, min(j, n)):
            if out[k] != "\n":
                out[k] = " "
        i = j
    return "".join(out)


def _close(masked: str, i: int, open_: str = "(", close: str = ")") -> int:
    """The index just after the bracket that closes the one at `i`."""
    depth = 0
    for j in range(i, len(masked)):
        if masked[j] == open_:
            depth += 1
        elif masked[j] == close:
            depth -= 1
            if depth == 0:
                return j + 1
    raise ValueError(f"unbalanced {open_!r} at offset {i}")


_CALL = re.compile(r"(?<![\w.:>])(?P<name>[A-Za-z_]\w*)\s*(?P<targs><[^<>;(){}]*>)?\s*\(")
_TYPES = {"void", "bool", "int", "u32", "u64", "u16", "u8", "auto", "float", "unsigned", "__forceinline__",
          "__device__", "__noinline__", "inline", "static", "const"}


@dataclass
class Site:
    name: str
    start: int        # the call expression: name ... closing parenthesis
    end: int
    stmt_start: int   # the whole expression statement when the call is one, else == start
    stmt_end: int
    statement: bool


def call_sites(text: str, path: str = ""):
    """Every call of a protocol function in `text` (a kernel or header), in order."""
    masked = mask_comments(text)
    out = []
    for m in _CALL.finditer(masked):
        name = m.group("name")
        if name not in KIND:
            continue
        if name in _LOCAL_NAMES and not any(path.startswith(p) for p in _LOCAL_NAMES[name]):
            continue
        before = masked[:m.start()].rstrip()
        prev = re.search(r"(\w+)$", before)
        if prev and prev.group(1) in _TYPES:
            continue                                       # a declaration or definition
        if name == "release" and re.match(r"\s*=", masked[m.end("name"):]):
            continue
        end = _close(masked, m.end() - 1)
        after = masked[end:].lstrip()
        if after.startswith("{"):
            continue                                       # a definition (no type before it: a constructor)
        stmt_end = end + (len(masked[end:]) - len(after)) + 1 if after.startswith(";") else end
        last = before[-1:] if before else ";"
        statement = after.startswith(";") and (last in ";{}:" or before.endswith("else") or
                                               (last == ")" and _if_head(masked, len(before) - 1)))
        out.append(Site(name, m.start(), end, m.start(), stmt_end if statement else end, statement))
    return out


def _if_head(masked: str, close_paren: int) -> bool:
    """Whether the ')' at `close_paren` ends the condition of an if/for/while."""
    j = _open_paren(masked, close_paren)
    return j >= 0 and re.search(r"\b(if|for|while)\s*$", masked[:j]) is not None


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _line_text(text: str, offset: int) -> str:
    a = text.rfind("\n", 0, offset) + 1
    b = text.find("\n", offset)
    return text[a:b if b >= 0 else len(text)].strip()


def _statements(masked: str, open_brace: int):
    """The top-level statements of the block opened at `open_brace`: (start, end) offsets. A compound
    statement (for/if/while with a body, an if ... else chain) is one statement."""
    end_block = _close(masked, open_brace, "{", "}") - 1
    out, i, start = [], open_brace + 1, None
    while i < end_block:
        c = masked[i]
        if c.isspace():
            i += 1
            continue
        if start is None:
            start = i
        if c == "#":                                        # a directive: part of the next statement
            i = masked.find("\n", i)
            continue
        if c == "(":
            i = _close(masked, i)
            continue
        if c == "{":
            i = _close(masked, i, "{", "}")
            rest = masked[i:].lstrip()
            if rest.startswith(("else", ";", ",", ")")):
                continue
            out.append((start, i))
            start = None
            continue
        if c == ";":
            i += 1
            rest = masked[i:].lstrip()
            if rest.startswith("else"):
                continue
            out.append((start, i))
            start = None
            continue
        i += 1
    return out


def _enclosing_brace(masked: str, offset: int) -> int:
    depth = 0
    for j in range(offset - 1, -1, -1):
        if masked[j] == "}":
            depth += 1
        elif masked[j] == "{":
            if depth == 0:
                return j
            depth -= 1
    return -1


@dataclass(frozen=True)
class Mutant:
    target: str
    file: str
    line: int
    op: str            # remove | count+1 | count-1 | tx+16 | tx-16 | early | depth+1
    kind: str          # fence | wait | commit | arrive | sync | count | tx | order | depth
    before: str        # the source line(s) before
    after: str         # ... and after
    new_text: str = field(repr=False, compare=False, default="")

    @property
    def id(self) -> str:
        return f"{self.target}:{self.file}:{self.line}:{self.op}:{self.kind}"

    def describe(self) -> str:
        return f"{self.file}:{self.line} {self.op} ({self.kind}): `{self.before}` -> `{self.after}`"


def _mutate_file(target: Target, path: str, text: str):
    """Every mutant of one file of `target`: (op, kind, start offset, new text)."""
    masked = mask_comments(text)
    sites = call_sites(text, path)
    out = []

    def put(op, kind, at, new, after=None):
        out.append((op, kind, at, new, after))
    for s in sites:
        kind = KIND[s.name]
        call = text[s.start:s.end]
        if s.statement:
            put("remove", kind, s.start, text[:s.stmt_start] + "/* mutant: removed */;" + text[s.stmt_end:])
        elif kind == "wait" and s.name not in DEPTH:
            put("remove", kind, s.start, text[:s.start] + "true /* mutant: no wait */" + text[s.end:])
        if s.name in DEPTH:
            m = re.match(r"(\w+\s*<\s*)(\d+)(\s*>)", call)
            if m:
                put("depth+1", "depth", s.start, text[:s.start] + m.group(1) + str(int(m.group(2)) + 1) + m.group(3)
                    + call[m.end():] + text[s.end:])
        if s.name in ("mbarrier_arrive_expect_tx",):
            args = _split_args(masked, text, s)
            if len(args) == 2:
                a0, a1 = args[1]
                for d in (16, -16):
                    put(f"tx{d:+d}", "tx", s.start, text[:a0] + f"({text[a0:a1].strip()}) {'+' if d > 0 else '-'} 16u"
                        + text[a1:])
        if s.name in RELEASES and s.statement:
            early = _early(text, masked, s)
            if early is not None:
                put("early", "order", s.start, early[0], f"moved above `{early[1]}`")
    for m in re.finditer(r"\bmbarrier_init\s*\(", masked):
        end = _close(masked, m.end() - 1)
        s = Site("mbarrier_init", m.start(), end, m.start(), end, False)
        args = _split_args(masked, text, s)
        if len(args) != 2:
            continue
        a0, a1 = args[1]
        for d in (1, -1):
            put(f"count{d:+d}", "count", m.start(), text[:a0] + f"({text[a0:a1].strip()}) {'+' if d > 0 else '-'} 1"
                + text[a1:])
    return out


def _split_args(masked: str, text: str, s: Site):
    """(start, end) of each argument of the call at `s`."""
    open_ = masked.index("(", s.start)
    out, depth, a = [], 0, open_ + 1
    for j in range(open_ + 1, s.end - 1):
        c = masked[j]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            out.append((a, j))
            a = j + 1
    out.append((a, s.end - 1))
    return out


def _early(text: str, masked: str, s: Site):
    """The text with the release statement at `s` moved above the nearest earlier statement of its block
    that waits, and that statement's first line. When no earlier sibling waits and the release sits in
    the body of an `if` (with no else), the whole `if` is moved in the block around it (a release guarded
    by `if (kt > 0) { ... }` moved above the wgmma.wait_group before it). None when nothing earlier waits."""
    at = s.stmt_start
    waiting = WAITS + WAITING_HELPERS
    for _level in range(2):
        brace = _enclosing_brace(masked, at)
        if brace < 0:
            return None
        stmts = _statements(masked, brace)
        mine = next((k for k, (a, b) in enumerate(stmts) if a <= at < b), None)
        if mine is None:
            return None
        a, b = stmts[mine]
        for k in range(mine - 1, -1, -1):
            p, q = stmts[k]
            body = masked[p:q]
            if any(re.search(rf"(?<![\w.]){re.escape(w)}\s*(<[^<>;]*>)?\s*\(", body) for w in waiting):
                moved = text[a:b]
                new = text[:p] + moved + "  /* mutant: moved up */\n" + _indent(text, p) + text[p:a].rstrip() + \
                    text[b:]
                return new, _line_text(text, p)
        head = masked[:brace].rstrip()
        if not head.endswith(")") or not _if_head(masked, len(head) - 1) or \
                not re.search(r"\bif\s*\($", masked[:_open_paren(masked, len(head) - 1) + 1]) or \
                masked[_close(masked, brace, "{", "}"):].lstrip().startswith("else"):
            return None
        at = masked.rfind("if", 0, _open_paren(masked, len(head) - 1) + 1)   # the enclosing if, one block up
    return None


def _open_paren(masked: str, close_paren: int) -> int:
    """Where the '(' matching the ')' at `close_paren` is (-1: none)."""
    depth = 0
    for j in range(close_paren, -1, -1):
        if masked[j] == ")":
            depth += 1
        elif masked[j] == "(":
            depth -= 1
            if depth == 0:
                return j
    return -1


def _indent(text: str, offset: int) -> str:
    a = text.rfind("\n", 0, offset) + 1
    return text[a:offset] if not text[a:offset].strip() else ""


def mutants_of(target: Target | str) -> list:
    """Every mutant of a target, in file and line order."""
    from ..compile import CUDA_SRC
    t = TARGETS[target] if isinstance(target, str) else target
    main = (CUDA_SRC / t.files[0]).read_text()
    out = []
    for path in t.files:
        text = (CUDA_SRC / path).read_text()
        if path != t.files[0]:
            used = _helpers_used(text, main)
            if not used:
                continue
        for op, kind, at, new, after in _mutate_file(t, path, text):
            if path != t.files[0] and (_function_at(text, at) not in used or
                                       _function_at(text, at) in _HEADER_SKIP.get(path, ())):
                continue              # a helper this kernel never calls, or one whose every call is a site
            line = _line(text, at)
            before = _line_text(text, at)
            after = after or _line_text(new, at)
            out.append(Mutant(t.name, path, line, op, kind, before, after, new))
    return out


_FUNC = re.compile(r"__device__\s+__forceinline__\s+[\w:<>]+\s+(\w+)\s*\(")


def _helpers_used(header: str, main: str) -> set:
    names = {m.group(1) for m in _FUNC.finditer(mask_comments(header))}
    masked_main = mask_comments(main)
    return {n for n in names if re.search(rf"\b{n}\s*(<[^;]*?>)?\s*\(", masked_main)}


def _function_at(text: str, offset: int) -> str:
    found = None
    for m in _FUNC.finditer(mask_comments(text)):
        if m.start() < offset:
            found = m.group(1)
    return found or ""


def find_mutant(target: str, op: str, before: str, nth: int = 0, file: str | None = None) -> Mutant:
    """The `nth` mutant of `target` with operator `op` whose source line contains `before` (and in `file`):
    a mutant named by what it changes, not by a line number that moves with every edit."""
    found = [m for m in mutants_of(target) if m.op == op and before in m.before and (file is None or m.file == file)]
    if nth >= len(found):
        raise LookupError(f"{target}: {len(found)} '{op}' mutants of a line containing {before!r}, no #{nth}")
    return found[nth]
