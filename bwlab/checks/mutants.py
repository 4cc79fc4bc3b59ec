"""Mutation testing of the emulator's strictness: break one synchronisation point of a kernel, see what it says.

    python -m bwlab.validate mutants [--kernel NAME ...] [--sample N --seed S] [--jobs J] [--out FILE]

Every sm_90a and sm_100a kernel of the suite that runs an asynchronous protocol (the two GEMM ladders,
the two full flows, the teaching kernels) is mutated one point at a time, on its source text:

    remove     each fence (fence.proxy.async, tcgen05 fences, fence.mbarrier_init, __threadfence), each wait
               (mbarrier waits, wgmma.wait_group, cp.async.bulk.wait_group(.read), tcgen05.wait::ld/st,
               the teardown's wait for the last tcgen05.commit), each commit (tcgen05.commit, wgmma
               commit_group, cp.async.bulk.commit_group), each arrive, each CTA/cluster/warp barrier
    count+-    each mbarrier.init arrival count one more and one less
    tx+-       each expect_tx byte count 16 more and 16 less (one TMA granule)
    early      a release (arrive, commit, cluster arrive) moved before the statement of its block that
               waits (the nearest earlier sibling statement holding a wait)
    depth+1    each wait_group depth grown by one (wgmma.wait_group 1 -> 2, bulk wait_group.read 1 -> 2 ...)

A small C-aware locator finds the call sites (comments and strings masked; definitions skipped); each
mutant records file, line, the text before and after. Each is compiled by NVRTC and run in bwlab.emu in a
worker process of its own (a private copy of cuda_src with the one file changed, BWLAB_CUDA_SRC; a CPU
time limit: a hang the emulator does not diagnose costs that mutant, never the run), at a shape where
every pipeline stage, accumulator buffer and barrier phase is reused (`reuse_shape`), and classified:

    named      an emulator error naming the broken rule (ProtocolError, ProxyFenceMissing, DivergenceError ...)
    hang       a hang the emulator diagnosed (EmuHang with its report, MbarrierTimeout, a bounded wait's
               error word)
    wrong      the kernel finished and its result differs from the model: a silent wrong result
    pass       the kernel finished with the right result and no error
    limit      the worker ran past its CPU-time limit (a hang nothing diagnosed)
    error      another exception (UnsupportedInstruction, an emulator budget, a Python error)
    n/a        the mutant does not compile (not applicable)

Some mutants break no rule of the ISA (a fence that something else already orders, a wait made stricter):
`NOT_RULE_BREAKING` lists them with the reason. The goal metric counts only the rule-breaking mutants:
the share that ends loudly, `named` or `hang` (not a wrong result, not a pass).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

__all__ = ["Target", "TARGETS", "Mutant", "Outcome", "mutants_of", "find_mutant", "reuse_shape", "reuse_counts",
           "run_mutant",
           "classify", "NOT_RULE_BREAKING", "PHASE_REUSE", "validate_main"]

CPU_LIMIT_S = 60           # per mutant (worker process, imports and NVRTC included)
PHASE_REUSE = 2            # every barrier phase parity completes at least this often: each stage and each
                           # accumulator buffer is used 2 * PHASE_REUSE times per CTA (its ring wraps twice)
LOUD = ("named", "hang")

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


# ---- shapes that reuse every stage, accumulator buffer and barrier phase -----------------------------
def reuse_counts(target: Target | str, M: int, N: int, K: int, sms: int | None = None) -> dict:
    """At (M, N, K) with the emulator's SM count: the fewest uses any pipeline stage, accumulator buffer
    (sm_100a: a TMEM accumulator; sm_90a: the CTA's registers, one tile at a time) gets in one CTA,
    the fewest tiles (work units) one CTA walks, and the CTAs launched. Computed from the kernel's stages,
    tile counts and launch grid."""
    t = TARGETS[target] if isinstance(target, str) else target
    if t.arch == "sm_90a":
        from ..gemm import runner
        from ..gemm.ladder import BK, split_count, step
        s = step(t.step)
        sms = runner.EMULATED_SMS if sms is None else sms
        tiles = (M // s.bm) * (N // s.bn)
        kb = K // BK
        splits = split_count(M, N, K, sms) if s.split_k else 1
        if not s.persistent:
            units, kb_unit, ctas = 1, kb, tiles
        elif s.split_k:
            ctas = s.grid(M, N, sms, K)[0]
            units, kb_unit = (tiles * splits) // ctas, kb // splits
        else:
            ctas = s.grid(M, N, sms * s.cluster, K)[0]
            units, kb_unit = (tiles // s.cluster) // (ctas // s.cluster), kb
        stages, bufs = s.stages, 1
    else:
        from ..gemm import sm100
        info, k = sm100.step_info(int(t.step)), sm100.kernel_constants(int(t.step))
        sms = sm100.EMULATED_SMS if sms is None else sms
        tiles = (M // (k["CLUSTER"] * k["BM"])) * (N // k["BN"])
        kb_unit = K // k["BK"]
        if info["persistent"]:
            ctas = sm100.launch_grid(int(t.step), M, N, sms * k["CLUSTER"])[0]
            units = tiles // (ctas // k["CLUSTER"])
        else:
            units, ctas = 1, tiles * k["CLUSTER"]
        splits = 1
        stages, bufs = k["STAGES"], k.get("ACC_BUFS", 1)
    return {"stage_uses": (units * kb_unit) // stages, "buffer_uses": units // bufs, "tiles_per_cta": units,
            "stages": stages, "buffers": bufs, "ctas": ctas, "splits": splits}


def reuse_shape(target: Target | str, reuse: int = PHASE_REUSE) -> tuple:
    """The smallest (M, N, K) (fewest multiply-adds) at which, with the emulator's SM count, every
    pipeline stage and accumulator buffer of a pipelined or persistent step is used 2 * `reuse` times in
    each CTA (each barrier phase parity completes `reuse` times), a persistent CTA walks at least two
    tiles, and split-K cuts K in at least two pieces (both the 'not last' and the 'last adds' paths run)."""
    t = TARGETS[target] if isinstance(target, str) else target
    need = 2 * reuse
    if t.arch == "sm_90a":
        from ..gemm.ladder import step
        s = step(t.step)
        m0, n0, persistent, split_k = s.m_multiple, s.bn, s.persistent, s.split_k
    else:
        from ..gemm import sm100
        k = sm100.kernel_constants(int(t.step))
        m0, n0, persistent = k["CLUSTER"] * k["BM"], k["BN"], sm100.step_info(int(t.step))["persistent"]
        split_k = False
    best = None
    for mi in range(1, 9):
        for ni in range(1, 9):
            for ki in range(1, 33):
                M, N, K = m0 * mi, n0 * ni, 64 * ki
                if best is not None and M * N * K >= best[0]:
                    continue
                c = reuse_counts(t, M, N, K)
                if c["stage_uses"] < need or (c["buffers"] > 1 and c["buffer_uses"] < need) or \
                        (persistent and c["tiles_per_cta"] < 2) or (split_k and c["splits"] < 2):
                    continue
                best = (M * N * K, (M, N, K))
    if best is None:
        raise ValueError(f"{t.name}: no shape up to 8 x 8 tiles and K = 2048 reuses every stage {need} times")
    return best[1]


# ---- running one target (in the worker) ------------------------------------------------------------------
def _exact_inputs(M, N, K, seed):
    from ..gemm import sm100
    return sm100.example_inputs(M, N, K, seed=seed)


def _run_sm90_step(t: Target, shape=None):
    import numpy as np
    from ..gemm import runner, sm100
    M, N, K = shape or reuse_shape(t)
    a, b = _exact_inputs(M, N, K, 11)
    c, run = runner.run_step_emulated(t.step, a, b)
    return np.array_equal(c, sm100.reference(a, b)), run


def _run_sm100_step(t: Target, shape=None):
    import numpy as np
    from ..gemm import sm100
    M, N, K = shape or reuse_shape(t)
    a, b = _exact_inputs(M, N, K, 12)
    c, run = sm100.run_step_emulated(int(t.step), a, b)
    return np.array_equal(c, sm100.reference(a, b)), run


def _run_flow_sm90(t: Target, shape=None):
    """Every kernel of full_flow_sm90.cu: full_flow_hopper, and the hybrid tier's flow_load_dump and
    flow_store_registers (the model's MMA between them)."""
    import numpy as np
    from ..flow import FlowProblem
    from ..flow.case import GPU_SOURCES
    from ..flow.model import flow_model
    from ..flow.runner import run_hopper, run_hybrid
    from ..flow.trace import Trace
    p = FlowProblem(0)
    d, _ = run_hopper(p, repeat=1)
    hybrid = Trace("hybrid", p, run_hybrid(p), GPU_SOURCES["hybrid"])
    return np.array_equal(d[:p.M], p.reference()) and not d[p.M:].any() and \
        flow_model(p).compare(hybrid, "emulator").ok, None


def _run_flow_sm100(t: Target, shape=None):
    from ..flow import runner
    from ..flow.case import GPU_SOURCES
    from ..flow.model import flow_model
    from ..flow.problem import FlowProblem
    from ..flow.trace import Trace
    p = FlowProblem(3)
    got = Trace("hardware", p, runner.run_hardware(p, emulated=True), GPU_SOURCES["hardware"])
    return flow_model(p).compare(got, "emulator").ok, None


def _run_teach_tma(t: Target, shape=None):
    import numpy as np
    from ..tma import TensorMap, run_teach, tma_load_model
    g = np.random.default_rng(7).integers(0, 2 ** 16, (96, 80), dtype=np.uint16)
    tm = TensorMap("uint16", (80, 96), (64, 24), swizzle="128B")
    return np.array_equal(run_teach(g, tm, (8, 5)), tma_load_model(g, tm, (8, 5))), None


def _run_teach_multicast(t: Target, shape=None):
    from .. import multicast as mc
    case = mc.MulticastLoad(mc.teach_config(), kernel="teach_multicast.cu")
    return case.check(case.run()).ok, None


def _run_teach_wgmma(t: Target, shape=None):
    from .. import umma
    case = umma.WgmmaCase("f16", 64, 32, "K", "none", "K", "none", seed=1)
    return case.check(umma.run_teach_wgmma(case)).ok, None


def _run_teach_store(t: Target, shape=None):
    import numpy as np
    from ..epilogue.case import Epilogue
    from ..epilogue.problem import teach_problem
    p = teach_problem(256, 64)
    acc = np.random.default_rng(0).standard_normal(p.acc_shape).astype(np.float32)
    case = Epilogue(p, acc, None, None, kernel="teach_store.cu")
    return case.check(case.run()).ok, None


def _run_teach_umma(t: Target, shape=None):
    from .. import umma
    case = umma.UmmaCase("f16", "f32", 128, 64, 64, b_base=16384)
    return case.check(umma.run_teach_umma(case)).ok, None


def _run_teach_tmem(t: Target, shape=None):
    import numpy as np
    from ..tmem import case, teach
    return np.array_equal(case.run_teach(), teach.teach_model()), None


# ---- classification ----------------------------------------------------------------------------------------
@dataclass
class Outcome:
    mutant: str
    result: str        # named | hang | wrong | pass | limit | error | n/a
    detail: str        # the exception's class and first line, or what differed
    cpu_s: float = 0.0
    rule_breaking: bool = True
    why_not: str = ""


def classify(exc: BaseException | None, ok: bool | None) -> tuple:
    """(result, detail) of a run that raised `exc` or finished with `ok` (its result equals the model)."""
    if exc is None:
        return ("pass", "") if ok else ("wrong", "finished without an error; the result differs from the model")
    from .. import emu as E
    from ..compile import CompileError
    from ..runtime import MbarrierTimeout
    name = type(exc).__name__
    first = (str(exc).strip().splitlines() or [""])[0][:300]
    if isinstance(exc, CompileError):
        return "n/a", f"{name}: {first}"
    if isinstance(exc, (E.EmuHang, E.TmemAllocHang, MbarrierTimeout)):
        return "hang", f"{name}: {first}"
    if isinstance(exc, RuntimeError) and "bounded wait" in str(exc) and "gave up" in str(exc):
        return "hang", f"{name}: {first}"
    if isinstance(exc, (E.EmuTimeout, E.UnsupportedInstruction)):
        return "error", f"{name}: {first}"
    if isinstance(exc, E.EmuError):
        return "named", f"{name}: {first}"
    return "error", f"{name}: {first}"


def _worker(target: str, shape) -> None:
    """In the worker process (BWLAB_CUDA_SRC: the mutated copy): run, classify, print one JSON line."""
    t0 = time.process_time()
    t = TARGETS[target]
    try:
        ok, run = globals()[t.run](t, tuple(shape) if shape else None)
        warnings = list(getattr(run, "warnings", None) or [])
        res, detail = classify(None, ok)
        if res == "pass" and warnings:
            detail = "warnings: " + "; ".join(str(w).splitlines()[0][:200] for w in warnings[:2])
        elif res == "wrong" and warnings:
            detail += "; warnings: " + "; ".join(str(w).splitlines()[0][:200] for w in warnings[:2])
    except BaseException as e:  # noqa: BLE001 - every exception is a result of the mutant
        res, detail = classify(e, None)
    print("\nMUTANT-RESULT " + json.dumps({"result": res, "detail": detail, "cpu_s": time.process_time() - t0}),
          flush=True)


def run_mutant(m: Mutant | None, target: str | None = None, cpu_limit: float = CPU_LIMIT_S, shape=None) -> Outcome:
    """Run one mutant (None: the target unmutated) in a worker process with a CPU-time limit."""
    from ..compile import CUDA_SRC
    import resource
    target = m.target if m is not None else target
    with tempfile.TemporaryDirectory(prefix="bwmut-") as tmp:
        src = Path(tmp) / "cuda_src"
        shutil.copytree(CUDA_SRC, src, ignore=shutil.ignore_patterns("__pycache__"))
        if m is not None:
            (src / m.file).write_text(m.new_text)
        env = dict(os.environ, BWLAB_CUDA_SRC=str(src), BWLAB_BACKEND="emulated")
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")

        def limit():
            resource.setrlimit(resource.RLIMIT_CPU, (int(cpu_limit), int(cpu_limit) + 5))
        code = f"from bwlab.checks.mutants import _worker; _worker({target!r}, {list(shape) if shape else None!r})"
        t0 = time.perf_counter()
        try:
            p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                               preexec_fn=limit, timeout=3 * cpu_limit + 60)
            out, err, rc = p.stdout, p.stderr, p.returncode
        except subprocess.TimeoutExpired:
            out, err, rc = "", "", -9
        line = next((x for x in reversed(out.splitlines()) if x.startswith("MUTANT-RESULT ")), None)
        mid = m.id if m is not None else f"{target}:unmutated"
        if line is None:
            why = "CPU-time limit" if rc in (-9, -24, 137, 152) else f"worker exit {rc}"
            tail = err.strip().splitlines()[-1:]
            return Outcome(mid, "limit" if "CPU" in why else "error",
                           f"{why} ({cpu_limit:g} s){': ' + tail[0][:200] if tail else ''}",
                           time.perf_counter() - t0)
        r = json.loads(line[len("MUTANT-RESULT "):])
        return Outcome(mid, r["result"], r["detail"], r["cpu_s"])


def find_mutant(target: str, op: str, before: str, nth: int = 0, file: str | None = None) -> Mutant:
    """The `nth` mutant of `target` with operator `op` whose source line contains `before` (and in `file`):
    a mutant named by what it changes, not by a line number that moves with every edit."""
    found = [m for m in mutants_of(target) if m.op == op and before in m.before and (file is None or m.file == file)]
    if nth >= len(found):
        raise LookupError(f"{target}: {len(found)} '{op}' mutants of a line containing {before!r}, no #{nth}")
    return found[nth]


# ---- mutants that break no rule ------------------------------------------------------------------------------
# (target prefix, op, text of the line before, which of the equal lines (None: each)) -> why the kernel
# the mutant makes still keeps every rule of the ISA on the path these runs take.
_TIMEOUT_PATH = ("the wait runs only after a bounded wait gave up (the timeout path); a normal run never "
                 "reaches it, so here the mutant is the same program (the forced-timeout tests cover that path)")
_DRAINED = ("the epilogue (or, in step 1, the MMA thread) has already waited for a commit issued after the "
            "last MMA, so every MMA has completed before the teardown; without the `drained` commit, with it "
            "issued early or with its count one higher, tcgen05_wait_drained only runs out its bounded budget "
            "before freeing TMEM: slower, no rule broken on this path")
_DRAINED_WAIT = ("on the normal path the epilogue waited for the commit issued after the last MMA, and the "
                 "teardown's barrier (__syncthreads / pair_sync) orders the dealloc after that wait, so the "
                 "freeing warp has observed every MMA's completion without `drained` (the emulator checks exactly "
                 "that: a dealloc before the MMAs' completion is observed is a TmemAllocError); the wait matters "
                 "only when a bounded wait gave up")
NOT_RULE_BREAKING = {
    ("sm100/", "remove", "tcgen05_wait_drained", None): _DRAINED_WAIT,
    ("sm100/", "remove", "tcgen05_commit(&drained)", None): _DRAINED,
    ("sm100/", "early", "tcgen05_commit(&drained)", None): _DRAINED,
    ("sm100/", "remove", "tcgen05_commit_multicast_cta_group2(&drained", None): _DRAINED,
    ("sm100/", "early", "tcgen05_commit_multicast_cta_group2(&drained", None): _DRAINED,
    ("sm100/", "count+1", "mbarrier_init(&drained", None): _DRAINED,
    ("teach_umma", "remove", "if (!mma_complete) tcgen05_wait_drained", None): _TIMEOUT_PATH,
    ("full_flow_sm100", "remove", "if (!mma_complete) tcgen05_wait_drained", None): _TIMEOUT_PATH,
    ("full_flow_sm100", "remove", "__syncthreads();", 2):
        "the bar.sync after the TMA store: what follows only reads SMEM (the taps) and the elected thread "
        "has waited for the store's reads (wait_group.read 0); the TMEM reads were ordered before the "
        "dealloc by the fence::before_thread_sync / bar.sync pair above it",
}


def _not_rule_breaking(m: Mutant):
    for (tprefix, op, before, nth), why in NOT_RULE_BREAKING.items():
        if m.target.startswith(tprefix) and m.op == op and before in m.before:
            if nth is None or find_mutant(m.target, op, before, nth).id == m.id:
                return why
    return None


# ---- the command ------------------------------------------------------------------------------------------
def _summary(targets, outcomes_by_target, mutants_by_target) -> list:
    lines = [f"{'kernel':28s} {'run/all':>7s} {'rule-br':>7s} {'named':>6s} {'hang':>5s} {'wrong':>5s} "
             f"{'pass':>5s} {'limit':>5s} {'error':>5s} {'n/a':>4s}  loud share of rule-breaking"]
    tot = {}
    for t in targets:
        outs = outcomes_by_target.get(t, [])
        rb = [o for o in outs if o.rule_breaking and o.result != "n/a"]
        cnt = {k: sum(o.result == k for o in rb) for k in ("named", "hang", "wrong", "pass", "limit", "error")}
        na = sum(o.result == "n/a" for o in outs)
        loud = cnt["named"] + cnt["hang"]
        for k, v in cnt.items():
            tot[k] = tot.get(k, 0) + v
        tot["rb"] = tot.get("rb", 0) + len(rb)
        tot["all"] = tot.get("all", 0) + len(outs)
        tot["total"] = tot.get("total", 0) + mutants_by_target[t][0]
        tot["n/a"] = tot.get("n/a", 0) + na
        share = f"{100 * loud / len(rb):5.1f} % ({loud}/{len(rb)}; named alone {cnt['named']})" if rb else "-"
        ran = f"{len(outs)}/{mutants_by_target[t][0]}"
        lines.append(f"{t:28s} {ran:>7s} {len(rb):7d} {cnt['named']:6d} {cnt['hang']:5d} {cnt['wrong']:5d} "
                     f"{cnt['pass']:5d} {cnt['limit']:5d} {cnt['error']:5d} {na:4d}  {share}")
    loud = tot.get("named", 0) + tot.get("hang", 0)
    rb = tot.get("rb", 0)
    ran = f"{tot.get('all', 0)}/{tot.get('total', 0)}"
    lines.append(f"{'all':28s} {ran:>7s} {rb:7d} {tot.get('named', 0):6d} {tot.get('hang', 0):5d} "
                 f"{tot.get('wrong', 0):5d} {tot.get('pass', 0):5d} {tot.get('limit', 0):5d} {tot.get('error', 0):5d} "
                 f"{tot.get('n/a', 0):4d}  " + (f"{100 * loud / rb:5.1f} % ({loud}/{rb})" if rb else "-"))
    return lines


def validate_main(argv=None) -> int:
    from .common import EXIT_USAGE
    ap = argparse.ArgumentParser(prog="python -m bwlab.validate mutants", description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernel", action="append", default=[],
                    help="a kernel (repeatable; a prefix such as sm100/ picks several); default: all (--list)")
    ap.add_argument("--list", action="store_true", help="list the kernels and their mutant counts, run nothing")
    ap.add_argument("--sample", type=int, default=0, help="run N mutants per kernel, drawn with --seed (0: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1, help="worker processes at once (the emulator is CPU-bound)")
    ap.add_argument("--cpu-limit", type=float, default=CPU_LIMIT_S, help="CPU seconds per mutant")
    ap.add_argument("--out", default=None, help="also write the report here")
    ap.add_argument("--json", default=None, help="every outcome as JSON lines here (appended to)")
    ap.add_argument("--report", nargs="+", metavar="JSON",
                    help="run nothing: report the outcomes these --json files recorded (a later line wins), "
                         "counted with today's NOT_RULE_BREAKING table")
    ap.add_argument("--resume", action="store_true",
                    help="take the outcomes already in --json as done (a long run stopped and started again)")
    args = ap.parse_args(argv)
    names = [n for n in TARGETS if not args.kernel or any(n == k or n.startswith(k) for k in args.kernel)]
    if not names:
        print(f"no kernel matches {args.kernel}; kernels: {', '.join(TARGETS)}", file=sys.stderr)
        return EXIT_USAGE
    rng = random.Random(args.seed)
    chosen, recorded = {}, {}
    for f in args.report or ():
        for line in Path(f).read_text().splitlines():
            r = json.loads(line)
            recorded[r["mutant"]] = Outcome(r["mutant"], r["result"], r["detail"], r["cpu_s"])
    for n in names:
        ms = mutants_of(n)
        if args.report:
            chosen[n] = (len(ms), [m for m in ms if m.id in recorded])
            continue
        chosen[n] = (len(ms), sorted(rng.sample(ms, args.sample), key=lambda m: (m.file, m.line, m.op))
                     if args.sample and len(ms) > args.sample else ms)
    if args.list:
        for n in names:
            print(f"{n:28s} {chosen[n][0]:4d} mutants")
        return 0
    report = []

    def say(s=""):
        print(s, flush=True)
        report.append(s)
    say("python -m bwlab.validate mutants " + " ".join(argv if argv is not None else sys.argv[1:]))
    say(f"each mutant in a worker (CPU limit {args.cpu_limit:g} s), shapes: " + ", ".join(
        f"{n} {'x'.join(map(str, reuse_shape(n)))}" for n in names if "/" in n))
    todo = [(n, m) for n in names for m in chosen[n][1]]
    what = "\n" if args.report else f"; --sample {args.sample} --seed {args.seed}\n"
    say(f"{len(todo)} {'recorded outcomes' if args.report else 'mutants'} of {sum(chosen[n][0] for n in names)} "
        f"mutants over {len(names)} kernels" + what)
    outcomes = {n: [] for n in names}
    from concurrent.futures import ThreadPoolExecutor
    t0 = time.time()
    done = dict(recorded)
    if args.report:
        say(f"--report: the outcomes recorded in {', '.join(args.report)}; nothing run")
    elif args.resume and args.json and Path(args.json).exists():
        for line in Path(args.json).read_text().splitlines():
            r = json.loads(line)
            done[r["mutant"]] = Outcome(r["mutant"], r["result"], r["detail"], r["cpu_s"])
        say(f"--resume: {sum(m.id in done for _, m in todo)} outcomes taken from {args.json}")
    jf = open(args.json, "a" if args.resume else "w") if args.json and not args.report else None
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        futs = [(n, m, None if m.id in done else pool.submit(run_mutant, m, None, args.cpu_limit)) for n, m in todo]
        for n, m, f in futs:
            if f is None:
                o = done[m.id]
                outcomes[n].append(o)
                why = _not_rule_breaking(m)
                o.rule_breaking, o.why_not = why is None, why or ""
                continue
            o = f.result()
            why = _not_rule_breaking(m)
            o.rule_breaking, o.why_not = why is None, why or ""
            outcomes[n].append(o)
            flag = "" if o.rule_breaking else "  [not rule-breaking]"
            say(f"{o.result:6s} {o.cpu_s:6.1f}s  {m.target} {m.describe()}{flag}\n         {o.detail}")
            if jf:
                jf.write(json.dumps({**asdict(o), "file": m.file, "line": m.line, "op": m.op, "kind": m.kind,
                                     "before": m.before, "after": m.after, "target": m.target}) + "\n")
                jf.flush()
    if jf:
        jf.close()
    say(f"\n{time.time() - t0:.0f} s wall\n")
    for line in _summary(names, outcomes, chosen):
        say(line)
    quiet = [(n, o, m) for n in names for o, m in zip(outcomes[n], chosen[n][1])
             if o.rule_breaking and o.result in ("pass", "wrong", "limit", "error")]
    say("\nrule-breaking mutants that did not end in a named error or a diagnosed hang:")
    for n, o, m in quiet:
        say(f"  {o.result:6s} {n} {m.describe()}")
    nrb = [(n, o, m) for n in names for o, m in zip(outcomes[n], chosen[n][1]) if not o.rule_breaking]
    if nrb:
        say("\nnot rule-breaking (not counted):")
        for n, o, m in nrb:
            say(f"  {o.result:6s} {n} {m.describe()}: {o.why_not}")
    if args.out:
        Path(args.out).write_text("\n".join(report) + "\n")
    return 0 if not quiet else 1


if __name__ == "__main__":
    raise SystemExit(validate_main())
