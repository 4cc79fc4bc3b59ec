"""The rule that decides, from `decode_protocol.py probe --msplit --json F`, whether M split across a cluster of
2 (Config.msplit = 2) replaces the table's configuration at M = 128 or 256 before the sustained protocol runs.

    python docs/results/decode_adopt.py probe.json.gz     # verdict lines, then 'table args: ...' (maybe empty)

Per M and per KB (1 or 2), r_plain = table / new (plain launches) and r_pdl = the same launched with PDL
(> 1: the new mode faster). The KB with the larger geometric mean sqrt(r_plain r_pdl) is adopted when that
mean is >= 1.03 and neither ratio is below 1.00; otherwise the table stays. The last line gives the
protocol's --table arguments for the adopted MTs (empty: nothing adopted, the protocol is not run)."""
from __future__ import annotations

import gzip
import json
import math
import sys

TABLE, PDL = "sd_swap_ab", " (PDL)"
GAIN = 1.03


def verdict(times: dict) -> tuple[list[str], list[tuple]]:
    """(lines, adopted (MT, consumers, split, kb, msplit) tuples) from the probe's {shape: {label: ms}}."""
    lines, adopted = [], []
    for shape, here in sorted(times.items(), key=lambda kv: int(kv[0].split("x")[0])):
        m = int(shape.split("x")[0])
        if TABLE not in here or TABLE + PDL not in here:
            lines.append(f"M = {m}: the table's configuration was not timed -> no verdict")
            continue
        best = None
        for kb in (1, 2):
            new = f"sd w2 s1 kb{kb} ms2"
            if new not in here or new + PDL not in here:
                lines.append(f"M = {m}: {new} not timed (both launches needed)")
                continue
            rp, rq = here[TABLE] / here[new], here[TABLE + PDL] / here[new + PDL]
            g = math.sqrt(rp * rq)
            lines.append(f"M = {m}: {new}: plain table/new {here[TABLE] * 1e3:.1f}/{here[new] * 1e3:.1f} us = "
                         f"{rp:.3f}; "
                         f"PDL {here[TABLE + PDL] * 1e3:.1f}/{here[new + PDL] * 1e3:.1f} us = {rq:.3f}; "
                         f"geometric mean {g:.3f}")
            if best is None or g > best[0]:
                best = (g, rp, rq, kb)
        if best and best[0] >= GAIN and min(best[1], best[2]) >= 1.0:
            mt = 128 if m <= 128 else 256
            adopted.append((mt, 2, 1, best[3], 2))
            lines.append(f"M = {m}: adopt w2 s1 kb{best[3]} ms2 at MT = {mt} ({best[0]:.3f} >= {GAIN})")
        else:
            lines.append(f"M = {m}: keep the table" + (f" (best {best[0]:.3f}: under {GAIN} or one launch slower)"
                                                       if best else ""))
    return lines, adopted


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print(__doc__)
        return 2
    with gzip.open(argv[0], "rt") as f:
        times = json.load(f)["probe"]
    lines, adopted = verdict(times)
    for line in lines:
        print(line)
    print("table args: " + " ".join("--table " + " ".join(map(str, t)) for t in adopted))
    return 0


if __name__ == "__main__":
    sys.exit(main())
