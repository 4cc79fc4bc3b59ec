"""The C expression a learner writes for the A mask inside teach_multicast.cu (exercise 2.4), evaluated
the way the kernel evaluates it: 32-bit unsigned arithmetic on mn.x, mn.y, rank, CLUSTER_X, CLUSTER_Y
and C's casts to the kernel's unsigned types, the low 16 bits kept. No GPU, no compiler: the check runs
it for every rank of every cluster shape before any kernel does."""
from __future__ import annotations

import ast
import re

__all__ = ["eval_mask_expr", "EXPR_RULE"]

_NAMES = {"CLUSTER_X", "CLUSTER_Y", "rank"}
_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
        ast.Mod: None, ast.Div: None, ast.LShift: None, ast.RShift: None,
        ast.BitOr: lambda a, b: a | b, ast.BitAnd: lambda a, b: a & b, ast.BitXor: lambda a, b: a ^ b}
EXPR_RULE = ("an integer expression of mn.x (m), mn.y (n), rank, CLUSTER_X and CLUSTER_Y with + - * / % << >> "
             "& | ^ ~, parentheses and the casts (u16), (u32), (unsigned); the kernel evaluates it in 32-bit unsigned arithmetic (m and n are u32) "
             "and keeps the low 16 bits")


# The casts a mask expression may use (those teach_multicast.cu compiles), and the bits each keeps.
_CAST_BITS = {"u16": 16, "unsigned short": 16, "u32": 32, "unsigned": 32,
              "unsigned int": 32}
_CAST = r"\(\s*(" + "|".join(re.escape(t).replace(r"\ ", r"\s+") for t in
                            sorted(_CAST_BITS, key=len, reverse=True)) + r")\s*\)"


def _cast_name(ctype: str) -> str:
    return "__cast_" + "_".join(ctype.split())


def eval_mask_expr(expr: str, cluster, rank: int) -> int:
    """What the kernel's `(u16)(expr)` gives CTA `rank` of a cluster (M, N): 32-bit unsigned
    arithmetic, as the kernel's u32 m, n and rank; the low 16 bits. ValueError for what the
    evaluator does not take (C's undefined shifts included)."""
    cm, cn = cluster
    env = {"CLUSTER_X": cm, "CLUSTER_Y": cn, "rank": rank, "mn.x": rank % cm, "mn.y": rank // cm, "mn.z": 0}
    text = re.sub(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]+\b", r"\1", expr)   # 1u, 0xFFu: C's suffixes
    # C casts to the kernel's unsigned types, `(u16)(x)` or `(u32)x`: a call Python can parse
    text = re.sub(_CAST + r"\s*([A-Za-z_][\w.]*|\d\w*)", lambda m: f"{_cast_name(m.group(1))}({m.group(2)})", text)
    text = re.sub(_CAST + r"\s*(?=\()", lambda m: _cast_name(m.group(1)), text)
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        raise ValueError(f"cannot read {expr!r} as an expression; {EXPR_RULE}") from None
    u32 = 0xFFFFFFFF

    def ev(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return node.value & u32
        if isinstance(node, ast.Name) and node.id in _NAMES:
            return env[node.id]
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            field = f"{node.value.id}.{node.attr}"
            if field in env:
                return env[field]
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id.startswith("__cast_")
                and len(node.args) == 1 and not node.keywords):
            bits = {_cast_name(t): b for t, b in _CAST_BITS.items()}[node.func.id]
            return ev(node.args[0]) & ((1 << bits) - 1)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Invert, ast.USub, ast.UAdd)):
            v = ev(node.operand)
            return (~v if isinstance(node.op, ast.Invert) else -v if isinstance(node.op, ast.USub) else v) & u32
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            a, b = ev(node.left), ev(node.right)
            if isinstance(node.op, (ast.Div, ast.Mod)):
                if b == 0:
                    raise ValueError(f"{expr!r} divides by zero for rank {rank}")
                return a // b if isinstance(node.op, ast.Div) else a % b
            if isinstance(node.op, (ast.LShift, ast.RShift)):
                if b >= 32:
                    raise ValueError(f"{expr!r} shifts a 32-bit value by {b} for rank {rank} (undefined in C)")
                return (a << b) & u32 if isinstance(node.op, ast.LShift) else a >> b
            return _OPS[type(node.op)](a, b) & u32
        raise ValueError(f"{ast.unparse(node)!r} in {expr!r} is not something the exercise evaluates; {EXPR_RULE}")
    return ev(tree.body) & 0xFFFF
