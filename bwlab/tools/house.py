"""The house: bwlab's modules as rooms and their imports as arrows, read from the source.

Every import counts, the ones inside functions too (they run later, but the module still needs the
other one, and a circle of them is a circle of needs). `from pkg import sub` is an arrow to the module
`pkg.sub` when `sub` is one, else to `pkg`; an import of a submodule does not count as an arrow to
the importer's own parent packages (Python has imported them already).

    python -m bwlab.tools.house circles          the import circles (exit 1 if there are any)
    python -m bwlab.tools.house svg OUT.svg      the picture: every module a room on its floor (docs/house.svg)

`imports(root)` -> {module: {modules it imports}}; `circles(graph)` -> the strongly connected
components of more than one module (Tarjan's algorithm), largest first.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def modules(root: Path = ROOT) -> dict[str, Path]:
    """{dotted name: file} for every module under root/bwlab (a package by its __init__.py)."""
    found = {}
    for f in sorted((root / "bwlab").rglob("*.py")):
        parts = list(f.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = f
    return found


def _owner(name: str, mods) -> str | None:
    """The module that `name` (a module, or a name inside one) lives in."""
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def _ancestors(name: str) -> set[str]:
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def imports(root: Path = ROOT) -> dict[str, set[str]]:
    """{module: the bwlab modules it imports, anywhere in its text}."""
    mods = modules(root)
    graph = {}
    for m, f in mods.items():
        is_pkg = f.name == "__init__.py"
        targets = set()
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = m.split(".") if is_pkg else m.split(".")[:-1]
                    base = base[:len(base) - (node.level - 1)]
                    src = ".".join(base + ([node.module] if node.module else []))
                else:
                    src = node.module or ""
                subs = [f"{src}.{a.name}" for a in node.names]
                targets.update(s for s in subs if s in mods)
                if any(s not in mods for s in subs):
                    targets.add(src)
        owners = {_owner(t, mods) for t in targets if t.split(".")[0] == "bwlab"}
        graph[m] = {o for o in owners if o and o != m and o not in _ancestors(m)}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles: strongly connected components of two or more modules, largest first."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
    return sorted(found, key=lambda c: (-len(c), c))


def arrows_within(circle, graph) -> list[tuple[str, str]]:
    """The arrows that hold a circle together."""
    members = set(circle)
    return sorted((a, b) for a in circle for b in graph[a] if b in members)


# -- the picture ---------------------------------------------------------------------------------------

def floors(graph) -> dict[str, int]:
    """The floor of each room: 0 for one that imports nothing of bwlab, else one above the highest room
    it imports. The rooms of a circle share a floor (the circle is condensed first)."""
    comp = {}
    for i, c in enumerate(circles(graph)):
        for m in c:
            comp[m] = i
    key = {m: comp.get(m, m) for m in graph}
    members: dict[object, list[str]] = {}
    for m, k in key.items():
        members.setdefault(k, []).append(m)
    level: dict[object, int] = {}

    def depth(k):
        if k not in level:
            below = {key[b] for m in members[k] for b in graph[m] if key.get(b) is not None} - {k}
            level[k] = 1 + max((depth(b) for b in below), default=-1)
        return level[k]
    return {m: depth(key[m]) for m in graph}


_COLOURS = {"hw": "#e8e0f4", "tma": "#dbe9f6", "multicast": "#dcf0e4", "umma": "#fbe6d3", "tmem": "#f6dde6",
            "epilogue": "#e3f1f7", "flow": "#f1efd6", "gemm": "#efe2d6", "emu": "#ececec", "checks": "#fff6cc",
            "tools": "#e6f4f1", "bridge": "#f4e8f8"}


def svg_text(graph, per_row: int = 14) -> str:
    """The house as an SVG drawing: every module a room on its floor (`floors`; bwlab/hw and the other
    modules that import nothing of bwlab at the bottom), coloured by its package; every import an arrow.
    A floor of more than `per_row` rooms takes several rows."""
    floor = floors(graph)
    by_floor: dict[int, list[str]] = {}
    for m in sorted(graph):
        by_floor.setdefault(floor[m], []).append(m)
    W, H, GX, GY, FLOOR_GAP, PAD, HEAD = 122, 20, 8, 10, 34, 24, 60
    rows = []                                     # (floor, rooms), top floor first
    for f in sorted(by_floor, reverse=True):
        names = by_floor[f]
        for i in range(0, len(names), per_row):
            rows.append((f, names[i:i + per_row]))
    width = PAD * 2 + 40 + per_row * W + (per_row - 1) * GX
    pos, y, last = {}, PAD + HEAD, None
    labels = []
    for f, names in rows:
        if last is not None:
            y += (H + GY) if f == last else (H + FLOOR_GAP)
        if f != last:
            labels.append((f, y))
        x0 = PAD + 40 + (per_row * W + (per_row - 1) * GX - (len(names) * W + (len(names) - 1) * GX)) / 2
        for i, m in enumerate(names):
            pos[m] = (x0 + i * (W + GX), y)
        last = f
    height = y + H + PAD
    in_circle = {m for c in circles(graph) for m in c}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
           f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="Helvetica, Arial, sans-serif" font-size="10">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{PAD}" y="{PAD + 6}" font-size="14">The house of bwlab: {len(graph)} modules (rooms), '
           f'{sum(map(len, graph.values()))} imports (arrows, the ones inside functions too)</text>',
           f'<text x="{PAD}" y="{PAD + 24}" font-size="11">A room stands one floor above the highest room it '
           'imports, so every arrow points down; the rooms of an import circle share a floor and their arrows '
           'are red. Colour: the package.</text>',
           f'<text x="{PAD}" y="{PAD + 40}" font-size="11">Made by `python -m bwlab.tools.house svg '
           'docs/house.svg` from the source.</text>']
    for a in sorted(graph):
        for b in sorted(graph[a]):
            (xa, ya), (xb, yb) = pos[a], pos[b]
            red = a in in_circle and b in in_circle and floor[a] == floor[b]
            out.append(f'<line x1="{xa + W / 2:.1f}" y1="{ya + H:.1f}" x2="{xb + W / 2:.1f}" y2="{yb:.1f}" '
                       f'stroke="{"#c0392b" if red else "#8aa"}" stroke-width="{1.2 if red else 0.5}" '
                       f'opacity="{0.9 if red else 0.35}"/>')
    for f, yl in labels:
        out.append(f'<text x="{PAD}" y="{yl + H / 2 + 4:.1f}" fill="#666">{f}</text>')
    for m, (x, y) in sorted(pos.items()):
        parts = m.split(".")
        pkg = parts[1] if len(parts) > 1 and (ROOT / "bwlab" / parts[1]).is_dir() else ""
        fill = _COLOURS.get(pkg, "#ffffff")
        label = ".".join(parts[1:]) or "bwlab"
        out.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{W}" height="{H}" rx="3" fill="{fill}" '
                   f'stroke="{"#c0392b" if m in in_circle else "#567"}" stroke-width="0.8"/>')
        out.append(f'<text x="{x + W / 2:.1f}" y="{y + H / 2 + 3.5:.1f}" text-anchor="middle">{label}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in ("circles", "svg"):
        print(__doc__)
        return 2
    graph = imports()
    if argv[0] == "circles":
        found = circles(graph)
        print(f"{len(graph)} modules, {sum(map(len, graph.values()))} arrows, {len(found)} circles")
        for c in found:
            print(f"{len(c)}: " + ", ".join(f"{a} -> {b}" for a, b in arrows_within(c, graph)))
        return 1 if found else 0
    if len(argv) != 2:
        print("usage: python -m bwlab.tools.house svg OUT.svg")
        return 2
    Path(argv[1]).write_text(svg_text(graph))
    return 0


if __name__ == "__main__":
    sys.exit(main())
