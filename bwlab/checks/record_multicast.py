"""The recordings notebook 02 (clusters and TMA multicast) shows on machines without a GPU with
clusters.

    python -m bwlab.checks.record multicast --out DIR

* `multicast_every_cta` — the harness kernel (tma_multicast_tile) on a 2x2 cluster loading A and B
                          tiles with 128B swizzle: every CTA's tile area, its %cluster_ctarank and
                          %cluster_ctaid, and where its tile area sat in SMEM.
* `multicast_teach`     — the teaching kernel (cuda_src/teach_multicast.cu) on its 2x2 cluster: every
                          CTA's tile area as it copied it out.
* `multicast_bad_mask`  — the teaching kernel with CTA 0 left out of every A mask: the MbarrierTimeout
                          (which CTA, which barrier, the bytes it expected, how long it waited).

`record(out_dir, meta)` makes them on this GPU; `replay(rec)` recomputes each with the model now and
compares (tests/test_recordings.py). `provisional(out_dir)` writes model-made stand-ins for a machine
that has never recorded them; they say so in their device field.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..case import CheckResult, compare
from ..multicast import (MulticastConfig, MulticastLoad, barrier_outcome, launch_multicast,
                         make_operands, multicast_model, plan, teach_config)
from ..multicast.recorded import (BAD_MASK_EDIT, EVERY_CTA, SEED, bad_mask_kernel, bad_masks, every_cta_case,
                                  every_cta_config, teach_case)
from ..results import save_recording

__all__ = ["record", "replay", "provisional", "EVERY_CTA", "SEED", "BAD_MASK_EDIT", "bad_mask_kernel",
           "bad_masks", "every_cta_config"]


def _save(out_dir, name, arrays, meta, params):
    return save_recording(out_dir, name, arrays, **{**meta, "stage": "multicast", "params": params})


def _params(cfg, **more):
    return {"cluster": list(cfg.cluster), "tile_m": cfg.tile_m, "tile_n": cfg.tile_n, "tile_k": cfg.tile_k,
            "operands": cfg.operands, "swizzle": cfg.swizzle, "seed": SEED, **more}


def _make(out_dir, meta, every_cta, teach, bad) -> list[Path]:
    cfg, tcfg = every_cta_config(), teach_config()
    return [
        _save(out_dir, "multicast_every_cta", every_cta, meta, _params(cfg, kind="every_cta")),
        _save(out_dir, "multicast_teach", {"smem": teach}, meta, _params(tcfg, kind="teach")),
        _save(out_dir, "multicast_bad_mask", bad, meta,
              _params(tcfg, kind="bad_mask", edit=list(BAD_MASK_EDIT))),
    ]


def record(out_dir, meta) -> list[Path]:
    """Run notebook 02's GPU cells on this GPU and save what they produced."""
    from ..runtime import MbarrierTimeout
    case = every_cta_case()
    run = launch_multicast(case.cfg, case.operands)
    every = {"smem": run.smem, "ranks": run.ranks, "cluster_ctaid": run.cluster_ctaid,
             "smem_address": run.smem_address}
    teach = teach_case().run()
    try:
        teach_case(bad_mask_kernel()).run()
        raise RuntimeError("the teaching kernel with CTA 0 left out of the A masks did not time out")
    except MbarrierTimeout as e:
        bad = {"cta_rank": np.array(e.cta_rank), "block": np.array(e.block), "expected_tx": np.array(e.expected_tx),
               "waited_ms": np.array(e.waited_ns / 1e6), "message": np.array(str(e))}
    return _make(out_dir, meta, every, teach, bad)


def provisional(out_dir) -> list[Path]:
    """Model-made stand-ins (replace them by running `record` on an H100)."""
    cfg, tcfg = every_cta_config(), teach_config()
    p = plan(cfg)
    every = {"smem": multicast_model(cfg, make_operands(cfg, SEED)), "ranks": np.array([q.rank for q in p], np.uint32),
             "cluster_ctaid": np.array([q.block for q in p], np.uint32) % np.array(cfg.cluster, np.uint32),
             "smem_address": np.full(cfg.n_ctas, 0x400, np.uint32)}
    teach = multicast_model(tcfg, make_operands(tcfg, SEED))
    stuck = [o for o in barrier_outcome(tcfg, bad_masks(tcfg)) if not o["completes"]][0]
    bad = {"cta_rank": np.array(stuck["rank"]), "block": np.array([stuck["rank"] % 2, stuck["rank"] // 2, 0]),
           "expected_tx": np.array(stuck["expect_tx"]), "waited_ms": np.array(200.0),
           "message": np.array("(provisional: the model's prediction, no GPU ran this)")}
    meta = {"device": "MODEL (replace by the H100 recording)", "date": "provisional",
            "command": "python -m bwlab.checks.record multicast --out DIR"}
    return _make(out_dir, meta, every, teach, bad)


def replay(rec) -> CheckResult:
    """Recompute the recording with the model now and compare."""
    kind, pr = rec.params["kind"], rec.params
    if kind == "every_cta":
        cfg = MulticastConfig(cluster=tuple(pr["cluster"]), tile_m=pr["tile_m"], tile_n=pr["tile_n"],
                              tile_k=pr["tile_k"], operands=pr["operands"], swizzle=pr["swizzle"])
        case = MulticastLoad(cfg, seed=pr["seed"])
        base = int(rec["smem_address"][0])
        result = case.compare(multicast_model(cfg, case.operands, smem_address=base), rec["smem"], rec.label)
        if result.ok:  # the CTAs must also say who they are, as the cluster layout does
            ranks = np.array([q.rank for q in case.plans])
            result = compare(ranks, rec["ranks"].astype(int), stage="multicast", what="%cluster_ctarank of every CTA",
                             source=rec.label) if not np.array_equal(ranks, rec["ranks"]) else result
        return result
    cfg = teach_config(cluster=tuple(pr["cluster"]), tile_m=pr["tile_m"], tile_n=pr["tile_n"])
    if kind == "teach":
        return MulticastLoad(cfg, seed=pr["seed"]).check(rec["smem"], source=rec.label)
    if kind == "bad_mask":
        # The model: which CTA's barrier never completes, and what it expected. The GPU names the first
        # CTA whose bounded wait gave up; it must be one of those.
        stuck = {o["rank"]: o["expect_tx"] for o in barrier_outcome(cfg, bad_masks(cfg)) if not o["completes"]}
        r = int(rec["cta_rank"])
        want = np.array([r if r in stuck else min(stuck), stuck.get(r, stuck[min(stuck)])])
        return compare(want, np.array([r, int(rec["expected_tx"])]), stage="multicast",
                       what="the CTA whose mbarrier never completes [rank, expected tx bytes]", source=rec.label,
                       hint="the model says which CTAs receive fewer bytes than they expect")
    raise ValueError(f"unknown multicast recording kind {kind!r}")
