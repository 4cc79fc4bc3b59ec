"""The house: bwlab's modules as rooms and their imports as arrows, read from the source.

Every import counts, the ones inside functions too (they run later, but the module still needs the
other one, and a circle of them is a circle of needs). `from pkg import sub` is an arrow to the module
`pkg.sub` when `sub` is one, else to `pkg`; an import of a submodule does not count as an arrow to
the importer's own parent packages (Python has imported them already).

    python -m bwlab.tools.house circles          the import circles (exit 1 if there are any)
    python -m bwlab.tools.house svg OUT.svg      the picture of the packages and their arrows (Graphviz `dot`)

`imports(root)` -> {module: {modules it imports}}; `circles(graph)` -> the strongly connected
components of more than one module (Tarjan's algorithm), largest first.
"""
from __future__ import annotations

import ast
import shutil
import subprocess
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

def package_of(module: str) -> str:
    """The room group a module is drawn in: its subpackage (bwlab.tma), or bwlab itself."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 or module in _PACKAGES else "bwlab"


_PACKAGES: set[str] = set()


def package_graph(graph) -> dict[str, dict[str, int]]:
    """{group: {group it imports: how many module arrows}}: the house one floor up."""
    _PACKAGES.clear()
    _PACKAGES.update(m for m, f in modules().items() if f.name == "__init__.py")
    out: dict[str, dict[str, int]] = {}
    for a, targets in graph.items():
        pa = package_of(a) if a != "bwlab" else "bwlab"
        row = out.setdefault(pa, {})
        for b in targets:
            pb = package_of(b)
            if pb != pa:
                row[pb] = row.get(pb, 0) + 1
    return out


def dot_text(graph) -> str:
    """Graphviz text of the package graph; the foundation modules of bwlab/ are one box."""
    pkgs = package_graph(graph)
    lines = ["digraph house {", '  rankdir=BT; node [shape=box, fontname="Helvetica", fontsize=11];',
             '  edge [color="#555555", arrowsize=0.6];']
    for p in sorted(pkgs):
        label = "bwlab (foundation:\\ncase, runtime, device, ...)" if p == "bwlab" else p.removeprefix("bwlab.")
        lines.append(f'  "{p}" [label="{label}"];')
    for a in sorted(pkgs):
        for b, n in sorted(pkgs[a].items()):
            lines.append(f'  "{a}" -> "{b}" [penwidth={min(0.6 + n / 6, 3):.2f}];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in ("circles", "svg", "dot"):
        print(__doc__)
        return 2
    graph = imports()
    if argv[0] == "circles":
        found = circles(graph)
        print(f"{len(graph)} modules, {sum(map(len, graph.values()))} arrows, {len(found)} circles")
        for c in found:
            print(f"{len(c)}: " + ", ".join(f"{a} -> {b}" for a, b in arrows_within(c, graph)))
        return 1 if found else 0
    text = dot_text(graph)
    if argv[0] == "dot":
        print(text, end="")
        return 0
    if len(argv) != 2:
        print("usage: python -m bwlab.tools.house svg OUT.svg")
        return 2
    if shutil.which("dot") is None:
        print("Graphviz `dot` is not installed; `python -m bwlab.tools.house dot` prints its input")
        return 3
    Path(argv[1]).write_bytes(subprocess.run(["dot", "-Tsvg"], input=text.encode(), check=True,
                                             capture_output=True).stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
