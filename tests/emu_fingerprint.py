"""What a launch did, in a few numbers: to show that an emulator speed change left every launch as it was.

    PYTHONPATH=. python tests/emu_fingerprint.py [--seeds 0,1,7] [KERNEL ...] > before.txt   (on the old tree)
    PYTHONPATH=. python tests/emu_fingerprint.py [--seeds 0,1,7] [KERNEL ...] > after.txt    (on the new one)
    diff before.txt after.txt

For each kernel of `bench emu` (and an sm_100a ladder step) and each scheduler seed (BWLAB_EMU_SEED), one line:
warp-instructions, the virtual clock at the end, the scheduler
generator's final state (it draws once per scheduling decision and per latency: the same state after the same
count means the same draws), a hash of every byte of device memory after the launch and of what the run
returned, or the error it raised (type and message, hashed). Equal lines: the same interleaving, the same bytes.
(The memory hash covers every allocation the process made so far: compare it between runs of the same kernels.)
"""
from __future__ import annotations

import hashlib
import os
import sys

import numpy as np


def _h(*parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        if isinstance(p, np.ndarray):
            h.update(np.ascontiguousarray(p).view(np.uint8).tobytes())
        elif isinstance(p, (tuple, list)):
            h.update(_h(*p).encode())
        elif isinstance(p, dict):
            h.update(_h(*sorted((str(k), v) for k, v in p.items())).encode())
        else:
            h.update(repr(p).encode())
    return h.hexdigest()[:16]


def kernels():
    """[(name, run)]: the kernels of `bench emu` and an sm_100a step, each a callable returning what it made."""
    from bwlab.checks.emu import ordinary_benches
    from bwlab.epilogue.case import run_teach as st_teach
    from bwlab.epilogue.problem import teach_problem
    from bwlab.flow import FlowProblem
    from bwlab.flow.runner import run_hopper
    from bwlab.gemm import runner as gr
    from bwlab.gemm import sm100
    from bwlab.gemm.ladder import STEPS
    from bwlab.hw.dtypes import from_float
    from bwlab.multicast import MulticastLoad, teach_config
    from bwlab.multicast.case import run_teach as mc_teach
    from bwlab.tma import TensorMap, run_teach
    from bwlab import umma
    out = []
    g = np.arange(96 * 80, dtype=np.uint16).reshape(96, 80)
    out.append(("teach_tma", lambda: run_teach(g, TensorMap("uint16", (80, 96), (64, 24), swizzle="128B"), (16, 8))))
    cfg = teach_config(cluster=(2, 2))
    case = MulticastLoad(cfg, seed=5)
    out.append(("teach_multicast", lambda: mc_teach(cfg, case.operands)))
    p = teach_problem(150, 70)
    acc = np.random.default_rng(2).standard_normal(p.acc_shape).astype(np.float32)
    out.append(("teach_store", lambda: st_teach(p, acc)))
    tc = umma.WgmmaCase("f16", 64, 32, "K", "none", "K", "none", seed=1)
    out.append(("teach_wgmma", lambda: umma.run_teach_wgmma(tc)))
    fp = FlowProblem(0)
    out.append(("full_flow_sm90", lambda: run_hopper(fp, repeat=1)))
    rng = np.random.default_rng(0)
    a = from_float(rng.random((256, 192), dtype=np.float32) * 2 - 1, "bf16")
    b = from_float(rng.random((512, 192), dtype=np.float32) * 2 - 1, "bf16")
    for s in STEPS:
        out.append((s.name, lambda s=s: gr.run_step_emulated(s.name, a, b)[0]))
    A, B = sm100.example_inputs(256, 256, 128, seed=3)
    out.append(("sm100_s2_ring", lambda: sm100.run_sm100_emulated("s2", A, B)[0]))
    out.append(("sm100_s5_cta_pair", lambda: sm100.run_sm100_emulated("s5", A, B)[0]))
    for name, _, fn in ordinary_benches():
        out.append((name.split()[0], fn))
    return out


def _result_arrays(x):
    if isinstance(x, np.ndarray):
        return [x]
    if isinstance(x, (tuple, list)):
        return [y for z in x for y in _result_arrays(z)]
    if isinstance(x, dict):
        return [y for k in sorted(x, key=str) for y in _result_arrays(x[k])]
    if hasattr(x, "__dict__"):
        return [y for k in sorted(vars(x)) for y in _result_arrays(vars(x)[k])]
    return []


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    seeds = [0]
    if "--seeds" in argv:
        i = argv.index("--seeds")
        seeds = [int(s) for s in argv[i + 1].split(",")]
        del argv[i:i + 2]
    from bwlab import emu
    from bwlab.device import using_backend
    with using_backend("emulated"):
        ks = kernels()
        for name, fn in ks:
            if argv and not any(name.startswith(x) for x in argv):
                continue
            for seed in seeds:
                os.environ["BWLAB_EMU_SEED"] = str(seed)
                try:
                    got = ("ok", _h(*_result_arrays(fn())))
                except Exception as e:   # noqa: BLE001 - a raised error is part of what a launch did
                    got = (type(e).__name__, _h(str(e)))
                L = emu.last_launch()
                mem = [a.buf for a in L.memory.allocs]
                print(f"{name:<22} seed {seed}: {L.steps:>8} warp-instr  clock {L.clock:>12}  "
                      f"rng {_h(L.rng.bit_generator.state)}  memory {_h(*mem)}  result {got[0]} {got[1]}", flush=True)
    os.environ.pop("BWLAB_EMU_SEED", None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
