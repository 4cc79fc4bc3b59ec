"""Every C struct that a NumPy dtype mirrors states its size and field offsets in static_asserts
(NVRTC checks them when tests/test_compile.py builds the file); here the same numbers are read back
from the source and compared with the dtype, so a change on either side fails a test."""
import re

import pytest

from bwlab.compile import CUDA_SRC
from bwlab.runtime import STATUS_DTYPE
from bwlab.tma.runner import TMA_CASE_DTYPE


def asserted_layout(path, struct):
    """(sizeof, {field: offset}) as the static_asserts of `path` state them for `struct`."""
    text = (CUDA_SRC / path).read_text()
    size = re.findall(rf"static_assert\(\s*sizeof\(\s*{struct}\s*\)\s*==\s*(\d+)", text)
    offs = re.findall(rf"static_assert\(\s*BW_OFFSETOF\(\s*{struct}\s*,\s*(\w+)\s*\)\s*==\s*(\d+)", text)
    assert len(size) == 1, f"{path}: one static_assert(sizeof({struct}) == N) expected, found {len(size)}"
    return int(size[0]), {f: int(o) for f, o in offs}


def struct_fields(path, struct):
    """Field names declared in `struct { ... };` of `path`, in order."""
    text = (CUDA_SRC / path).read_text()
    body = re.search(rf"struct\s+{struct}\s*\{{(.*?)\}};", text, re.S).group(1)
    body = re.sub(r"//[^\n]*", "", body)
    names = []
    for decl in body.split(";"):
        decl = decl.strip()
        if not decl:
            continue
        _, _, rest = decl.partition(" ")
        names += [re.sub(r"\[.*\]", "", n).strip() for n in rest.split(",")]
    return names


MIRRORS = [("tma_load.cu", "TmaCase", TMA_CASE_DTYPE), ("ptx/common.cuh", "BwStatus", STATUS_DTYPE)]


@pytest.mark.parametrize("path,struct,dtype", MIRRORS, ids=[m[1] for m in MIRRORS])
def test_numpy_dtype_matches_the_asserted_c_layout(path, struct, dtype):
    size, offsets = asserted_layout(path, struct)
    assert dtype.itemsize == size
    assert list(offsets) == struct_fields(path, struct), "every field, in order, has its offset asserted"
    assert {f: dtype.fields[f][1] for f in dtype.names} == offsets


def test_the_struct_parser_reads_every_field():
    assert struct_fields("tma_load.cu", "TmaCase") == ["rank", "coords", "smem_offset", "box_bytes",
                                                       "window_bytes", "flags", "out_offset"]
    assert struct_fields("ptx/common.cuh", "BwStatus")[4:7] == ["block_x", "block_y", "block_z"]
