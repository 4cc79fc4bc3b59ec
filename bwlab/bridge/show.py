"""Two kernels' sources next to each other: bwlab's CUDA on the left, its twin (Gluon, CuTe DSL) on the right.

In a notebook the pair renders as two scrollable columns (HTML); as text (`str`) it is one listing after the
other, and its repr (what a notebook stores as plain text) the first lines of each."""
from __future__ import annotations

import html

from .kernels import TOOLS, bridge_kernel, twin_stem, practitioner_source

__all__ = ["SideBySide", "side_by_side"]


class SideBySide:
    def __init__(self, left: str, right: str, left_title: str, right_title: str):
        self.left, self.right = left, right
        self.left_title, self.right_title = left_title, right_title

    def _repr_html_(self) -> str:
        def column(title, text):
            return ('<div style="flex:1;min-width:0">'
                    f'<div style="font-weight:bold;margin-bottom:4px">{html.escape(title)}</div>'
                    '<pre style="font-size:11px;line-height:1.3;max-height:560px;overflow:auto;margin:0;'
                    f'padding:6px;border:1px solid #ccc">{html.escape(text)}</pre></div>')
        return ('<div style="display:flex;gap:12px;align-items:flex-start">'
                + column(self.left_title, self.left) + column(self.right_title, self.right) + "</div>")

    def __str__(self) -> str:
        bar = "-" * 40
        return f"{self.left_title}\n{bar}\n{self.left}\n\n{self.right_title}\n{bar}\n{self.right}"

    def __repr__(self) -> str:
        """The plain-text form a notebook stores beside the HTML: each listing's first lines (the HTML
        columns scroll; str() holds both listings whole)."""
        def head(title, text, n=16):
            lines = text.splitlines()
            more = f"\n[... {len(lines) - n} more lines: str(x) shows them]" if len(lines) > n else ""
            return f"{title}\n{'-' * 40}\n" + "\n".join(lines[:n]) + more
        return head(self.left_title, self.left) + "\n\n" + head(self.right_title, self.right)


def side_by_side(name: str, tool: str = "gluon", replace: dict | None = None) -> SideBySide:
    """bwlab's kernel (cuda_src/...) beside its twin written with `tool` (bwlab/bridge/<tool>_*.py).
    `replace`: text of bwlab's listing to show otherwise ({old: new}), e.g. a value an exercise asks for."""
    from ..source import function_source, source_text
    k = bridge_kernel(name)
    left = function_source(source_text(k.bwlab_source), k.bwlab_kernel)
    for old, new in (replace or {}).items():
        if old not in left:
            raise ValueError(f"{old!r} does not occur in {k.bwlab_source}'s {k.bwlab_kernel}")
        left = left.replace(old, new)
    return SideBySide(left, practitioner_source(name, tool), f"bwlab: cuda_src/{k.bwlab_source}",
                      f"{TOOLS[tool].label}: bwlab/bridge/{twin_stem(name, tool)}.py")
