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
mutant records file, line, the text before and after (`bwlab.checks.mutation`). Each is compiled by NVRTC
and run in bwlab.emu in a worker process of its own (a private copy of cuda_src with the one file changed,
BWLAB_CUDA_SRC; a CPU time limit: a hang the emulator does not diagnose costs that mutant, never the run),
at a shape where every pipeline stage, accumulator buffer and barrier phase is reused (`reuse_shape`), and
classified (`bwlab.checks.mutant_runs`):

    named      an emulator error naming the broken rule (ProtocolError, ProxyFenceMissing, DivergenceError ...)
    hang       a hang the emulator diagnosed (EmuHang with its report, MbarrierTimeout, a bounded wait's
               error word)
    wrong      the kernel finished and its result differs from the model: a silent wrong result
    pass       the kernel finished with the right result and no error
    limit      the worker ran past its CPU-time limit (a hang nothing diagnosed)
    error      another exception (UnsupportedInstruction, an emulator budget, a Python error)
    n/a        the mutant does not compile (not applicable)

Some mutants break no rule of the ISA (a fence that something else already orders, a wait made stricter, a
__syncwarp() that only closes an elected lane's branch): `NOT_RULE_BREAKING` below lists them with the reason,
in the ISA's words. This module holds that table and the command. The goal metric counts only the rule-breaking mutants:
the share that ends loudly, `named` or `hang` (not a wrong result, not a pass).
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from dataclasses import asdict
from pathlib import Path

from .mutant_runs import (CPU_LIMIT_S, LOUD, PHASE_REUSE, Outcome, classify, reuse_counts, reuse_shape,  # noqa: F401
                          run_mutant)
from .mutation import TARGETS, Mutant, Target, call_sites, find_mutant, mask_comments, mutants_of  # noqa: F401

__all__ = ["Target", "TARGETS", "Mutant", "Outcome", "mutants_of", "find_mutant", "reuse_shape", "reuse_counts",
           "run_mutant", "classify", "NOT_RULE_BREAKING", "PHASE_REUSE", "validate_main"]


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
_ISA_TC = "PTX ISA 9.7.16.6"
_SETUP_AFTER = (
    "tcgen05.alloc is a synchronous tcgen05 instruction, ordered with every other tcgen05 operation of its own "
    f"thread ({_ISA_TC}.1), and the warp that allocates is the warp whose elected thread issues the MMAs; every "
    "other thread's first asynchronous tcgen05 operation (an epilogue's tcgen05.ld, the pair's MMA into the peer's "
    "columns) comes after a later tcgen05.fence::after_thread_sync (after its mbarrier wait or CTA barrier), and "
    "'an asynchronous tcgen05 operation subsequent to a tcgen05.fence::after_thread_sync is ordered after all "
    f"prior tcgen05 and execution ordering operations' of that thread ({_ISA_TC}.3), the setup barrier included. "
    "The emulator checks that: an asynchronous tcgen05 operation ordered after another warp's by a barrier with "
    "no fence::after_thread_sync between them is TcgenFenceMissing")
_COMMIT_FENCED = (
    "the only asynchronous tcgen05 operations before this barrier are the MMA thread's, and each batch of them "
    "is followed by a tcgen05.commit, which performs tcgen05.fence::before_thread_sync implicitly "
    f"({_ISA_TC}.4.2); the other warps issued none (tcgen05.alloc is synchronous)")
_LOOP_FENCED = (
    "every tcgen05.ld of an epilogue warp is followed in its loop by tcgen05.wait::ld and "
    "tcgen05.fence::before_thread_sync, and 'an asynchronous tcgen05 operation prior to a "
    "tcgen05.fence::before_thread_sync is ordered before all subsequent tcgen05 and execution ordering "
    f"operations' of that thread ({_ISA_TC}.3): this teardown barrier too; the MMA thread's last operation is a "
    "tcgen05.commit (an implicit fence::before_thread_sync)")
_FIRST_CLUSTER_SYNC = (
    "the second cluster barrier (after tcgen05.alloc) comes before anything crosses the pair (the first TMA "
    "completing on the even CTA's barrier, remote arrivals, multicast commits), and every mbarrier.init is "
    "fenced (fence.mbarrier_init.release.cluster) before it, so it alone orders each init before every use from "
    "the peer; between the two only tcgen05.alloc.cta_group::2 runs, collective on its own (the CTAs of a "
    "cluster are launched together)")
_CLOSING_SYNCWARP = (
    "this __syncwarp() only closes a branch some lanes took (an elected lane issuing TMA loads or MMAs, or "
    "waiting for its bulk stores; the threads that saw the barrier copying their share): no lane reads shared "
    "memory another lane of the warp wrote since, and no lane hands tcgen05 work to another through it. "
    "What follows is an instruction every lane executes — a .sync.aligned one, whose "
    ".sync makes each thread wait until all threads of the warp execute it, or a barrier (bar.sync, "
    "barrier.cluster, .aligned) reached with every enclosing condition evaluated identically (PTX ISA: "
    ".aligned; 'in conditionally executed code ... only if all threads evaluate the condition identically'), "
    "or the thread's exit. Where __syncwarp() does order lanes (the epilogue's fence::before_thread_sync "
    "before lane 0's arrive, st.shared before lane 0's TMA store) its removal is named")
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
    ("full_flow_sm100", "remove", "tcgen05_fence_after_thread_sync();", 1): _TIMEOUT_PATH.replace(
        "the wait runs", "this fence (before the dealloc when the TMA load timed out) runs"),
    ("full_flow_sm90", "remove", "__syncthreads();", 4):
        "the bar.sync after the TMA store: what follows only reads the staged tile (a read beside the store's "
        "read is no hazard), and the thread that issued the store waits for its reads (wait_group.read 0) "
        "before it exits, so the CTA's shared memory outlives them",
    # the setup's tcgen05.fence::after_thread_sync (after tcgen05.alloc and the barrier)
    ("sm100/", "remove", "tcgen05_fence_after_thread_sync();", 0): _SETUP_AFTER,
    ("teach_umma", "remove", "tcgen05_fence_after_thread_sync();", 0): _SETUP_AFTER,
    # a tcgen05.fence::before_thread_sync whose work an earlier fence (or a commit) already ordered
    ("sm100/s1_one_stage", "remove", "tcgen05_fence_before_thread_sync();", 1): _COMMIT_FENCED,
    ("sm100/s4_persistent", "remove", "tcgen05_fence_before_thread_sync();", 2): _LOOP_FENCED,
    ("sm100/s5_cta_pair", "remove", "tcgen05_fence_before_thread_sync();", 2): _LOOP_FENCED,
    ("sm100/s6_tma_store", "remove", "tcgen05_fence_before_thread_sync();", 2): _LOOP_FENCED,
    # the first of two cluster barriers before anything crosses the CTA pair
    ("sm100/s5_cta_pair", "remove", "cluster_sync();", 0): _FIRST_CLUSTER_SYNC,
    ("sm100/s6_tma_store", "remove", "cluster_sync();", 0): _FIRST_CLUSTER_SYNC,
    # __syncwarp() closing a branch one lane took, before an instruction every lane executes
    **{(t, "remove", "__syncwarp();", n): _CLOSING_SYNCWARP for t, n in (
        ("sm100/s1_one_stage", 0), ("sm100/s2_ring", 0), ("sm100/s3_warp_roles", 0), ("sm100/s3_warp_roles", 1),
        ("sm100/s4_persistent", 0), ("sm100/s4_persistent", 1), ("sm100/s5_cta_pair", 0), ("sm100/s5_cta_pair", 1),
        ("sm100/s6_tma_store", 0), ("sm100/s6_tma_store", 1), ("sm100/s6_tma_store", 5), ("full_flow_sm90", 0),
        ("teach_multicast", 0), ("teach_umma", 0))},
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
                rec = {k: v for k, v in asdict(o).items() if k != "message"}   # the report's line is enough here
                jf.write(json.dumps({**rec, "file": m.file, "line": m.line, "op": m.op, "kind": m.kind,
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
