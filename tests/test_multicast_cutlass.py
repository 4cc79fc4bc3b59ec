"""Regenerate the CuTe tables of test_layout.py and test_multicast.py from CUTLASS itself.

The C++ program below uses only CuTe's host-side functions (no GPU, no driver): it prints CuTe's
own layouts, coordinates, slices and create_tma_multicast_mask results as Python literals. With a
CUTLASS checkout and nvcc present,

    CUTLASS_DIR=/path/to/cutlass python -m pytest -q tests/test_multicast_cutlass.py

compiles and runs it and checks that the stored tables are exactly what this CUTLASS prints.
Without them the test is skipped (the stored tables are still checked by the other two files).
"""
import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

import pytest

GENERATOR = r'''// Prints CuTe's own answers (layouts, coordinates, slices, multicast masks) as a Python literal.
#include <cstdio>
#include <cute/tensor.hpp>
#include <cute/atom/copy_traits_sm90_tma.hpp>
using namespace cute;

template <class L>
void layout_case(const char* name, L l) {
  printf("  {'name': '%s', 'str': '", name); print(l); printf("', 'size': %d, 'cosize': %d,\n", int(size(l)), int(cosize(l)));
  printf("   'values': [");
  for (int i = 0; i < size(l); ++i) printf("%d,", int(l(i)));
  printf("],\n   'hier': [");
  for (int i = 0; i < size(l); ++i) { printf("'"); print(l.get_hier_coord(i)); printf("',"); }
  printf("],\n   'flat': [");
  for (int i = 0; i < size(l); ++i) { printf("'"); print(l.get_flat_coord(i)); printf("',"); }
  printf("]},\n");
}

template <class L, class C>
void slice_case(const char* name, const char* coord, L l, C c) {
  auto [s, off] = slice_and_offset(c, l);
  printf("  {'layout': '%s', 'coord': '%s', 'slice': '", name, coord); print(s); printf("', 'offset': %d},\n", int(off));
}

template <class CS, class Thr>
void cluster_case(int peers, CS cs, Thr thr) {
  auto L = tiled_divide(make_layout(cs), make_tile(thr));
  printf("  {'cluster': (%d,%d,%d), 'peers': %d, 'layout': '", int(size<0>(cs)), int(size<1>(cs)), int(size<2>(cs)), peers);
  print(L); printf("', 'masks': [");
  for (int r = 0; r < size(L); ++r) {
    auto c = L.get_flat_coord(r);
    printf("(0x%04x,0x%04x,0x%04x,0x%04x),", create_tma_multicast_mask<2>(L, c), create_tma_multicast_mask<1>(L, c),
           create_tma_multicast_mask<0,1>(L, c), create_tma_multicast_mask<0,2>(L, c));
  }
  printf("]},\n");
}

int main() {
  printf("CUTE_LAYOUTS = [\n");
  layout_case("flat", make_layout(make_shape(_2{},_2{},_4{},_1{}), make_stride(_8{},_4{},_1{},_0{})));
  layout_case("vmnk2", tiled_divide(make_layout(make_shape(_4{},_4{},_1{})), make_tile(Layout<_2,_1>{})));
  layout_case("nested_a", make_layout(make_shape(make_shape(_2{},_4{}),_3{}), make_stride(make_stride(_1{},_6{}),_2{})));
  layout_case("nested_b", make_layout(make_shape(_4{},make_shape(_2{},_3{})), make_stride(_3{},make_stride(_1{},_12{}))));
  layout_case("colmajor", make_layout(make_shape(_3{},_5{},_2{})));
  layout_case("rowmajor", make_layout(make_shape(_3{},_5{},_2{}), LayoutRight{}));
  printf("]\nCUTE_SLICES = [\n");
  auto F = make_layout(make_shape(_2{},_2{},_4{},_1{}), make_stride(_8{},_4{},_1{},_0{}));
  auto V = tiled_divide(make_layout(make_shape(_4{},_4{},_1{})), make_tile(Layout<_2,_1>{}));
  auto N = make_layout(make_shape(make_shape(_2{},_4{}),_3{}), make_stride(make_stride(_1{},_6{}),_2{}));
  slice_case("flat", "(0,1,_,0)", F, make_coord(0,1,_,0));
  slice_case("flat", "(0,_,2,0)", F, make_coord(0,_,2,0));
  slice_case("flat", "(_,_,2,0)", F, make_coord(_,_,2,0));
  slice_case("flat", "(_,1,_,0)", F, make_coord(_,1,_,0));
  slice_case("vmnk2", "(1,0,_,0)", V, make_coord(1,0,_,0));
  slice_case("vmnk2", "(1,_,3,0)", V, make_coord(1,_,3,0));
  slice_case("vmnk2", "(_,1,_,0)", V, make_coord(_,1,_,0));
  slice_case("nested_a", "(_,2)", N, make_coord(_,2));
  slice_case("nested_a", "((1,_),_)", N, make_coord(make_coord(1,_),_));
  slice_case("nested_a", "((_,3),1)", N, make_coord(make_coord(_,3),1));
  printf("]\nCUTE_CLUSTERS = [\n");
  cluster_case(1, make_shape(_1{},_1{},_1{}), Layout<_1,_0>{});
  cluster_case(1, make_shape(_2{},_1{},_1{}), Layout<_1,_0>{});
  cluster_case(1, make_shape(_1{},_2{},_1{}), Layout<_1,_0>{});
  cluster_case(1, make_shape(_2{},_2{},_1{}), Layout<_1,_0>{});
  cluster_case(1, make_shape(_2{},_4{},_1{}), Layout<_1,_0>{});
  cluster_case(1, make_shape(_4{},_2{},_1{}), Layout<_1,_0>{});
  cluster_case(1, make_shape(_8{},_1{},_1{}), Layout<_1,_0>{});
  cluster_case(1, make_shape(_1{},_8{},_1{}), Layout<_1,_0>{});
  cluster_case(1, make_shape(_4{},_4{},_1{}), Layout<_1,_0>{});
  cluster_case(1, make_shape(_2{},_8{},_1{}), Layout<_1,_0>{});
  cluster_case(1, make_shape(_2{},_2{},_2{}), Layout<_1,_0>{});
  cluster_case(2, make_shape(_2{},_1{},_1{}), Layout<_2,_1>{});
  cluster_case(2, make_shape(_2{},_2{},_1{}), Layout<_2,_1>{});
  cluster_case(2, make_shape(_2{},_4{},_1{}), Layout<_2,_1>{});
  cluster_case(2, make_shape(_4{},_2{},_1{}), Layout<_2,_1>{});
  cluster_case(2, make_shape(_4{},_4{},_1{}), Layout<_2,_1>{});
  cluster_case(2, make_shape(_8{},_2{},_1{}), Layout<_2,_1>{});
  cluster_case(2, make_shape(_2{},_8{},_1{}), Layout<_2,_1>{});
  printf("]\n");
}
'''

HERE = Path(__file__).resolve().parent


def _load(name):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.skipif(not os.environ.get("CUTLASS_DIR") or shutil.which("nvcc") is None,
                    reason="set CUTLASS_DIR to a CUTLASS checkout (and have nvcc) to regenerate the CuTe tables")
def test_stored_tables_are_what_cute_prints(tmp_path):
    include = Path(os.environ["CUTLASS_DIR"]) / "include"
    assert (include / "cute" / "layout.hpp").exists(), f"no CuTe headers under {include}"
    (tmp_path / "gen.cu").write_text(GENERATOR)
    r = subprocess.run(["nvcc", "-std=c++17", f"-I{include}", "-o", str(tmp_path / "gen"),
                        str(tmp_path / "gen.cu")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(tmp_path / "gen")], capture_output=True, text=True, check=True).stdout
    printed = {}
    exec(out, printed)
    layout_tests, multicast_tests = _load("test_layout"), _load("test_multicast")
    assert printed["CUTE_LAYOUTS"] == layout_tests.CUTE_LAYOUTS
    assert printed["CUTE_SLICES"] == layout_tests.CUTE_SLICES
    stored = [(c["cluster"], c["peers"], c["layout"], [tuple(m) for m in c["masks"]])
              for c in printed["CUTE_CLUSTERS"]]
    assert stored == [(s, p, l, list(m)) for s, p, l, m in multicast_tests.CUTE_CLUSTERS]


def test_generator_asks_cute_not_bwlab():
    # The tables must come from CuTe's functions: the generator calls them by name.
    for fn in ("tiled_divide", "create_tma_multicast_mask<2>", "create_tma_multicast_mask<1>",
               "create_tma_multicast_mask<0,1>", "create_tma_multicast_mask<0,2>", "slice_and_offset",
               "get_flat_coord", "get_hier_coord"):
        assert fn in GENERATOR
