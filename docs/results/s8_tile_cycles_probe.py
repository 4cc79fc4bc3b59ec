"""Where step 8's overlap goes, in CTA 0's own clock: steps 6 and 8 built with -DGEMM_STAMPS, one launch
each at M = N = K = 4096 and 8192 (after a warm-up launch; the stamps hold 512 slices). From consumer 1's stamps
(clock64 when a k-slice's bytes had landed, per slice) this prints, per step and shape, the median SM
cycles of one k-slice inside a tile (the main loop's pace), of one whole tile (first slice of a tile to
first slice of the next) and of the tile boundary (the slice that starts a tile, measured from the
slice before it), beside the 1,024 cycles of one slice at the tensor cores' peak:

    python3 docs/results/s8_tile_cycles_probe.py
"""
import numpy as np

from bwlab.gemm import runner

for m, n, k in ((4096, 4096, 4096), (8192, 8192, 8192)):
    kt = k // 64
    a, b = runner.random_operands(m, n, k, seed=5)
    ref = runner.reference(a, b)
    for name in ("s6_tma_store", "s8_epilogue_overlap"):
        runner.run_stamps(name, a, b)                  # warm-up: compile, first touch
        c, st = runner.run_stamps(name, a, b)
        ok = runner.check(a, b, c, name, ref=ref).ok
        begin = st[1, :, 0, 1].astype(np.int64)         # consumer 1, every slice's begin, clock64
        used = int(np.count_nonzero(begin))
        begin = begin[:used]
        tiles = used // kt
        step = np.diff(begin)
        inside = np.array([step[i] for i in range(len(step)) if (i + 1) % kt != 0])
        boundary = np.array([step[i] for i in range(len(step)) if (i + 1) % kt == 0])
        whole = np.diff(begin[::kt])
        print(f"{name:<20s} {m}x{n}x{k}: C ok {ok}; CTA 0 stamped {used} slices = {tiles} tiles of {kt}; "
              f"cycles per slice inside a tile: median {np.median(inside):.0f}; per whole tile: "
              f"{', '.join(str(int(x)) for x in whole)} (median {np.median(whole) if len(whole) else float('nan'):.0f}, "
              f"{kt} x 1024 = {kt * 1024} at peak); at the tile boundary: "
              f"{', '.join(str(int(x)) for x in boundary)}")
