"""TMEM on an sm_100-family GPU: every tcgen05.ld and tcgen05.st form (shape x num x pack) through the
round-trip kernels of cuda_src/tmem_sm100.cu, compared with the model (`bwlab.tmem.TmemLoad` /
`TmemStore`).

    python -m bwlab.validate tmem [--seed N] [--out FILE]
"""
from __future__ import annotations

from ..hw.tmem import COLUMNS
from ..tmem import TmemLoad, TmemStore, all_accesses, pattern_image, register_pattern
from .common import Command


def validate_main(argv=None) -> int:
    cmd = Command("validate tmem", "Every tcgen05.ld/st form on the GPU against the model", stage="tmem")
    cmd.add("--seed", type=int, default=0)
    args, say = cmd.start(argv)
    image = pattern_image(args.seed)
    failures = 0
    for acc in all_accesses():
        for col0 in sorted({0, min(96, COLUMNS - acc.width)}):
            ld = TmemLoad(acc, image, col0).check()
            st = TmemStore(acc, image, register_pattern(acc, args.seed + 1), col0).check()
            failures += (not ld.ok) + (not st.ok)
            say(f"{acc.label():28s} col0 {col0:3d}: ld {'exact' if ld.ok else f'{ld.differing} registers differ'}"
                f", st {'exact' if st.ok else f'{st.differing} cells differ'}")
            for res in (ld, st):
                if not res.ok:
                    say("    " + str(res).replace("\n", "\n    "))
    return cmd.finish(failures, "tmem")


if __name__ == "__main__":
    raise SystemExit(validate_main())
