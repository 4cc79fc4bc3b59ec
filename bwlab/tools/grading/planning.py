"""What runs in the sandbox: the submission read as notebook JSON, its cells planned, the graded cells of source/."""
from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path
from .common import HIDDEN_MARKERS, MAX_CELLS, MAX_NOTEBOOK


# ---------------------------------------------------------------------------------------------------
# one submission

def _nbgrader(cell) -> dict:
    meta = cell.get("metadata") if isinstance(cell, dict) else None
    nbg = meta.get("nbgrader") if isinstance(meta, dict) else None
    return nbg if isinstance(nbg, dict) else {}


def _source(cell) -> str:
    src = cell.get("source", "")
    return "".join(map(str, src)) if isinstance(src, list) else str(src)


@dataclass
class GradedCell:
    grade_id: str
    points: float
    code: str              # the instructor's graded cell, hidden tests included
    imports: str           # the visible part's import statements (what the learner's run gets in its place)
    visible: str = ""      # the part before the hidden tests (what the feedback page shows)


def graded_cells(source_nb: Path) -> list[GradedCell]:
    nb = json.loads(Path(source_nb).read_text())
    out = []
    for c in nb["cells"]:
        m = _nbgrader(c)
        if m.get("grade") and c.get("cell_type") == "code":
            code = "\n".join(l for l in _source(c).splitlines() if l.strip() not in HIDDEN_MARKERS)
            # the sandbox runs the visible part's imports only: the hidden part's names (the course data's
            # loader) mean nothing there
            visible = _visible(_source(c))
            out.append(GradedCell(m["grade_id"], float(m.get("points", 0)), code, _imports(visible), visible))
    return out


@dataclass
class Names:
    answers: set          # names that the notebook's answer cells define: the only ones read from the sandbox
    prelude: dict         # imports and literal constants of its other cells, made here


def course_names(source_nb: Path) -> Names:
    nb = json.loads(Path(source_nb).read_text())
    answers, prelude_code = set(), []
    for c in nb["cells"]:
        if c.get("cell_type") != "code":
            continue
        m = _nbgrader(c)
        try:
            tree = ast.parse(_source(c))
        except SyntaxError:
            continue
        if m.get("solution"):
            answers |= _defined(tree.body)
        elif not m.get("grade"):
            for node in tree.body:
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    prelude_code.append(ast.unparse(node))
                elif (isinstance(node, ast.Assign) and _literal(node.value)
                      and all(isinstance(n, (ast.Name, ast.Tuple)) for n in node.targets)):
                    prelude_code.append(ast.unparse(node))
    prelude: dict = {}
    for stmt in prelude_code:           # one that fails here (an import of a GPU-only module) is left out
        try:
            exec(compile(stmt, "<instructor's cells>", "exec"), prelude)
        except Exception:
            continue
    prelude.pop("__builtins__", None)
    return Names(answers, {k: v for k, v in prelude.items() if k not in answers})


def _literal(node) -> bool:
    try:
        ast.literal_eval(node)
        return True
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False


def _defined(body) -> set:
    out = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in node.names}
        else:
            out |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return out


def _imports(code: str) -> str:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return ""
    return "\n".join(ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)))


def read_submission(path: Path) -> dict:
    """The submission as notebook JSON; ValueError saying why it is not one."""
    if Path(path).stat().st_size > MAX_NOTEBOOK:
        raise ValueError(f"the file is {Path(path).stat().st_size >> 20} MiB; a notebook here is under "
                         f"{MAX_NOTEBOOK >> 20} MiB")
    raw = Path(path).read_bytes()
    try:
        nb = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ValueError(f"the file is not a readable notebook (truncated or not JSON: {e})") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise ValueError("the file is JSON but not a notebook (no list of cells)")
    if not all(isinstance(c, dict) for c in nb["cells"]):
        raise ValueError("the notebook's cells are not readable")
    if len(nb["cells"]) > MAX_CELLS:
        raise ValueError(f"the notebook has {len(nb['cells'])} cells; the student version has under 200, "
                         f"and more than {MAX_CELLS} are not graded")
    return nb


def plan(nb: dict, graded: list[GradedCell], solution_ids: list[str]) -> tuple[list[dict], list[str]]:
    """The cells the sandbox runs (the learner's code cells in their order, each graded cell reduced
    to its imports; the learner's text of a graded cell is not run) and notes on what is odd."""
    by_id = {g.grade_id: g for g in graded}
    cells, notes, seen = [], [], {}
    for c in nb["cells"]:
        gid = _nbgrader(c).get("grade_id")
        if isinstance(gid, str):
            seen[gid] = seen.get(gid, 0) + 1
        if c.get("cell_type") != "code":
            cells.append({"type": "markdown", "source": _source(c), "run": None})
            continue
        if isinstance(gid, str) and gid in by_id:
            cells.append({"type": "graded", "grade_id": gid, "source": by_id[gid].visible,
                          "run": by_id[gid].imports})
        else:
            cells.append({"type": "code", "source": _source(c), "run": _source(c)})
    for sid in solution_ids:
        if sid not in seen:
            notes.append(f"the answer cell {sid!r} is not in the notebook (renamed or deleted?); its answer "
                         "is whatever the rest of the notebook defines")
    for gid, n in seen.items():
        if n > 1:
            notes.append(f"the cell id {gid!r} appears {n} times; every copy ran, the graded cell was scored once")
    return cells, notes


def _visible(code: str) -> str:
    return code.split(HIDDEN_MARKERS[0])[0].rstrip() if HIDDEN_MARKERS[0] in code else code


# ---------------------------------------------------------------------------------------------------
# which cells need not run: the student version's own demonstration cells whose results nothing reads

_PURE_BUILTINS = frozenset({"print", "len", "range", "sorted", "zip", "enumerate", "list", "dict", "tuple", "set",
                            "frozenset", "str", "int", "float", "bool", "round", "min", "max", "sum", "abs", "any",
                            "all", "isinstance", "repr", "format", "map", "filter", "reversed", "hex", "bin",
                            "divmod", "type", "chr", "ord"})


_SETTER = re.compile(r"seed|^set|^use|config|enable|disable|force|register|patch|update|reset|^add|^append|"
                     r"^extend|^insert|^pop|^remove|^clear|^sort$|^write|^save|^load|^close|^open")


MAX_PARSED = 100_000     # characters of a learner's cell that the grader parses (to find what it reads)


def _parse(code: str):
    """The cell's syntax tree, or None (then it counts as reading every name): a cell that does not
    parse, or one longer than MAX_PARSED characters, which the grader does not parse in its own process."""
    if len(code) > MAX_PARSED:
        return None
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _targets(t) -> set:
    if isinstance(t, ast.Name):
        return {t.id}
    if isinstance(t, (ast.Tuple, ast.List)):
        return set().union(*(_targets(e) for e in t.elts))
    if isinstance(t, ast.Starred):
        return _targets(t.value)
    return set()


def _loads(node) -> set:
    """The names `node` reads, less those its own inner scopes bind where they read them (comprehension
    variables, lambda and function parameters)."""
    if isinstance(node, ast.Name):
        return set() if isinstance(node.ctx, ast.Store) else {node.id}
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
        out, local = set(), set()
        for g in node.generators:
            out |= _loads(g.iter) - local
            local |= _targets(g.target)
            for cond in g.ifs:
                out |= _loads(cond) - local
        for e in ([node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]):
            out |= _loads(e) - local
        return out
    if isinstance(node, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef)):
        a = node.args
        params = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)} | {p.arg for p in (a.vararg, a.kwarg) if p}
        out = set().union(*(_loads(d) for d in (*a.defaults, *(d for d in a.kw_defaults if d is not None))))
        if not isinstance(node, ast.Lambda):
            out = out.union(*(_loads(d) for d in node.decorator_list))
        body = node.body if isinstance(node.body, list) else [node.body]
        return out | (set().union(*(_loads(st) for st in body)) - params)
    return set().union(*(_loads(c) for c in ast.iter_child_nodes(node)))


def _reads_first(body, bound=frozenset()) -> tuple[set, set]:
    """(the names a statement list may read before it binds them, the names it surely binds)."""
    bound, reads = set(bound), set()
    for st in body:
        if isinstance(st, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in st.names}
        elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            reads |= _loads(st) - bound          # what its body reads counts as read here
            bound.add(st.name)
        elif isinstance(st, ast.Assign):
            reads |= _loads(st.value) - bound
            for t in st.targets:
                reads |= _loads(t) - bound       # a.x = ..., d[k] = ... read a, d and k
                bound |= _targets(t)
        elif isinstance(st, (ast.For, ast.AsyncFor)):
            reads |= (_loads(st.iter) | _loads(st.target)) - bound
            reads |= _reads_first(st.body, bound | _targets(st.target))[0] | _reads_first(st.orelse, bound)[0]
        elif isinstance(st, ast.If):
            reads |= _loads(st.test) - bound
            (r1, b1), (r2, b2) = _reads_first(st.body, bound), _reads_first(st.orelse, bound)
            reads |= r1 | r2
            bound = b1 & b2
        elif isinstance(st, (ast.With, ast.AsyncWith)):
            for it in st.items:
                reads |= _loads(it.context_expr) - bound
                if it.optional_vars is not None:
                    bound |= _targets(it.optional_vars)
            r, bound = _reads_first(st.body, bound)
            reads |= r
        else:                                    # anything else (while, try, del, expressions): all it names
            reads |= _loads(st) - bound
    return reads, bound


def _self_contained(tree, imported: set) -> bool:
    """True when a cell changes nothing but the names it binds: no global, del or augmented assignment,
    no attribute or item stored into an object it did not make, and every call is of a name it made,
    of an imported name (a module, a function of the package) or of a builtin that changes nothing, and
    no call of something else's method that looks like a setting (seed, set_..., update, append...)."""
    own = _defined(tree.body)
    for n in ast.walk(tree):
        if isinstance(n, (ast.Global, ast.Nonlocal, ast.Delete, ast.AugAssign)):
            return False
        if isinstance(n, (ast.Attribute, ast.Subscript)) and isinstance(n.ctx, (ast.Store, ast.Del)):
            root = n
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if not (isinstance(root, ast.Name) and root.id in own):
                return False
        if isinstance(n, ast.Call):
            root = n.func
            while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
                root = root.func if isinstance(root, ast.Call) else root.value
            if not isinstance(root, ast.Name):
                return False
            if root.id not in own and root.id not in imported and root.id not in _PURE_BUILTINS:
                return False
            called = n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
            if root.id not in own and _SETTER.search(called):
                return False            # np.random.seed(...), plt.rcParams.update(...), a module's set_...
    return True


def skippable(cells: list[dict], release_code: set[str], answers: set[str]) -> set[int]:
    """Indices (into `cells`, plan's list) of the learner's code cells that need not run: each is one of
    the student version's own code cells, unchanged (not an answer cell, not graded), changes nothing
    but the names it binds (_self_contained), and no cell that does run after it reads any of those
    names before binding it again, nor is any an answer. They are the notebook's demonstrations
    (an emulated GEMM, a plot): their output is the same for every student, and no answer depends on
    them. A cell that cannot be parsed (a magic) counts as reading every name."""
    code = [(i, c) for i, c in enumerate(cells) if c["run"] is not None]
    trees = [_parse(c["run"]) for _, c in code]
    imported = set()
    for t in trees:
        for n in (ast.walk(t) if t is not None else ()):
            if isinstance(n, (ast.Import, ast.ImportFrom)):
                imported |= {(a.asname or a.name).split(".")[0] for a in n.names}
    skip: set[int] = set()
    for k in reversed(range(len(code))):
        i, c = code[k]
        t = trees[k]
        if c["type"] != "code" or c["run"] not in release_code or t is None or not _self_contained(t, imported):
            continue
        live = _defined(t.body)
        if live & answers:
            continue
        needed = False
        for j in range(k + 1, len(code)):
            if code[j][0] in skip:
                continue
            if trees[j] is None:
                needed = True
                break
            reads, binds = _reads_first(trees[j].body)
            if reads & live:
                needed = True
                break
            live -= binds
            if not live:
                break
        if not needed:
            skip.add(i)
    return skip


