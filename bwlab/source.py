"""Show CUDA source from `cuda_src/`: a whole file, or one function with the comment above it.

    from bwlab.source import show_source
    show_source("tma_load.cu", kernel="tma_load_dump")
    show_source("ptx/mbarrier.cuh", kernel="mbarrier_arrive_expect_tx")

A function is found by its name followed by `(` on a line that is not a call (the definition: the line
ends in `{`, or the `{` follows on the next lines); the text runs from the comment block and template
line above it to the brace that closes its body.
"""
from __future__ import annotations

import re
from pathlib import Path

__all__ = ["source_text", "function_source", "show_source"]


def _path(file) -> Path:
    from .compile import CUDA_SRC
    p = Path(file)
    return p if p.is_absolute() else CUDA_SRC / p


def source_text(file) -> str:
    """The text of a file under cuda_src/ (or an absolute path)."""
    p = _path(file)
    if not p.exists():
        raise FileNotFoundError(f"no CUDA source {p.name!r} under cuda_src/")
    return p.read_text()


def function_source(text: str, name: str) -> str:
    """The definition of function `name` in `text`, with the comment lines directly above it."""
    lines = text.splitlines()
    pat = re.compile(r"(^|[\s*&])" + re.escape(name) + r"\s*\(")
    for i, line in enumerate(lines):
        if not pat.search(line) or line.lstrip().startswith("//"):
            continue
        # A definition: a '{' before any ';' from here on.
        rest = "\n".join(lines[i:])
        brace, semi = rest.find("{"), rest.find(";")
        if brace < 0 or (0 <= semi < brace):
            continue
        if re.match(r"\s*(return|if|for|while)\b", line) or "=" in line.split(name)[0]:
            continue
        start = i
        while start > 0 and (lines[start - 1].lstrip().startswith(("//", "template", "__device__",
                                                                   "extern", "static"))
                             or lines[start - 1].rstrip().endswith(",")):
            start -= 1
        depth, end = 0, None
        for j in range(i, len(lines)):
            for ch in lines[j]:
                if ch == "{":
                    depth += 1
                elif ch == "}":
                    depth -= 1
                    if depth == 0:
                        end = j
                        break
            if end is not None:
                break
        if end is None:
            raise ValueError(f"the body of {name} does not close")
        return "\n".join(lines[start:end + 1])
    raise ValueError(f"no definition of {name!r} found")


def show_source(file, kernel: str | None = None, print_it: bool = True):
    """Print a source file from cuda_src/, or only the function `kernel` in it. With print_it=False,
    return the text instead (printing returns None, so a notebook cell shows the code once)."""
    text = source_text(file)
    out = function_source(text, kernel) if kernel else text.rstrip("\n")
    if not print_it:
        return out
    print(out)
