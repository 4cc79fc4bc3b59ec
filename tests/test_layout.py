"""bwlab.layout against CuTe itself.

The tables below are what CuTe's host-side functions (NVIDIA/cutlass include/cute, commit 7107b0553)
printed for these layouts, recorded once as facts; CuTe prints static integers with a leading `_`.
"""
import pytest

from bwlab.layout import Layout, format_tuple, make_layout, tiled_divide

CUTE_LAYOUTS = [{'cosize': 16,
  'flat': ['(0,0,0,_0)', '(0,0,1,_0)', '(0,0,2,_0)', '(0,0,3,_0)', '(0,1,0,_0)', '(0,1,1,_0)', '(0,1,2,_0)',
           '(0,1,3,_0)', '(1,0,0,_0)', '(1,0,1,_0)', '(1,0,2,_0)', '(1,0,3,_0)', '(1,1,0,_0)', '(1,1,1,_0)',
           '(1,1,2,_0)', '(1,1,3,_0)'],
  'hier': ['(0,0,0,_0)', '(0,0,1,_0)', '(0,0,2,_0)', '(0,0,3,_0)', '(0,1,0,_0)', '(0,1,1,_0)', '(0,1,2,_0)',
           '(0,1,3,_0)', '(1,0,0,_0)', '(1,0,1,_0)', '(1,0,2,_0)', '(1,0,3,_0)', '(1,1,0,_0)', '(1,1,1,_0)',
           '(1,1,2,_0)', '(1,1,3,_0)'],
  'name': 'flat',
  'size': 16,
  'str': '(_2,_2,_4,_1):(_8,_4,_1,_0)',
  'values': [0, 8, 4, 12, 1, 9, 5, 13, 2, 10, 6, 14, 3, 11, 7, 15]},
 {'cosize': 16,
  'flat': ['(0,0,0,_0)', '(1,0,0,_0)', '(0,1,0,_0)', '(1,1,0,_0)', '(0,0,1,_0)', '(1,0,1,_0)', '(0,1,1,_0)',
           '(1,1,1,_0)', '(0,0,2,_0)', '(1,0,2,_0)', '(0,1,2,_0)', '(1,1,2,_0)', '(0,0,3,_0)', '(1,0,3,_0)',
           '(0,1,3,_0)', '(1,1,3,_0)'],
  'hier': ['((0),0,0,_0)', '((1),0,0,_0)', '((0),1,0,_0)', '((1),1,0,_0)', '((0),0,1,_0)', '((1),0,1,_0)',
           '((0),1,1,_0)', '((1),1,1,_0)', '((0),0,2,_0)', '((1),0,2,_0)', '((0),1,2,_0)', '((1),1,2,_0)',
           '((0),0,3,_0)', '((1),0,3,_0)', '((0),1,3,_0)', '((1),1,3,_0)'],
  'name': 'vmnk2',
  'size': 16,
  'str': '((_2),_2,_4,_1):((_1),_2,_4,_0)',
  'values': [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]},
 {'cosize': 24,
  'flat': ['(0,0)', '(1,0)', '(0,1)', '(1,1)', '(0,2)', '(1,2)', '(2,0)', '(3,0)', '(2,1)', '(3,1)', '(2,2)',
           '(3,2)', '(4,0)', '(5,0)', '(4,1)', '(5,1)', '(4,2)', '(5,2)', '(6,0)', '(7,0)', '(6,1)', '(7,1)',
           '(6,2)', '(7,2)'],
  'hier': ['((0,0),0)', '((1,0),0)', '((0,0),1)', '((1,0),1)', '((0,0),2)', '((1,0),2)', '((0,1),0)',
           '((1,1),0)', '((0,1),1)', '((1,1),1)', '((0,1),2)', '((1,1),2)', '((0,2),0)', '((1,2),0)',
           '((0,2),1)', '((1,2),1)', '((0,2),2)', '((1,2),2)', '((0,3),0)', '((1,3),0)', '((0,3),1)',
           '((1,3),1)', '((0,3),2)', '((1,3),2)'],
  'name': 'nested_a',
  'size': 24,
  'str': '((_2,_4),_3):((_1,_6),_2)',
  'values': [0, 1, 6, 7, 12, 13, 18, 19, 2, 3, 8, 9, 14, 15, 20, 21, 4, 5, 10, 11, 16, 17, 22, 23]},
 {'cosize': 35,
  'flat': ['(0,0)', '(0,1)', '(0,0)', '(1,1)', '(1,0)', '(1,1)', '(2,0)', '(2,1)', '(2,0)', '(3,1)', '(3,0)',
           '(3,1)', '(0,2)', '(0,3)', '(0,2)', '(1,3)', '(1,2)', '(1,3)', '(2,2)', '(2,3)', '(2,2)', '(3,3)',
           '(3,2)', '(3,3)'],
  'hier': ['(0,(0,0))', '(0,(1,0))', '(0,(0,0))', '(1,(1,0))', '(1,(0,0))', '(1,(1,0))', '(2,(0,0))',
           '(2,(1,0))', '(2,(0,0))', '(3,(1,0))', '(3,(0,0))', '(3,(1,0))', '(0,(0,1))', '(0,(1,1))',
           '(0,(0,1))', '(1,(1,1))', '(1,(0,1))', '(1,(1,1))', '(2,(0,1))', '(2,(1,1))', '(2,(0,1))',
           '(3,(1,1))', '(3,(0,1))', '(3,(1,1))'],
  'name': 'nested_b',
  'size': 24,
  'str': '(_4,(_2,_3)):(_3,(_1,_12))',
  'values': [0, 3, 6, 9, 1, 4, 7, 10, 12, 15, 18, 21, 13, 16, 19, 22, 24, 27, 30, 33, 25, 28, 31, 34]},
 {'cosize': 30,
  'flat': ['(0,0,0)', '(1,0,0)', '(2,0,0)', '(0,1,0)', '(1,1,0)', '(2,1,0)', '(0,2,0)', '(1,2,0)', '(2,2,0)',
           '(0,3,0)', '(1,3,0)', '(2,3,0)', '(0,4,0)', '(1,4,0)', '(2,4,0)', '(0,0,1)', '(1,0,1)', '(2,0,1)',
           '(0,1,1)', '(1,1,1)', '(2,1,1)', '(0,2,1)', '(1,2,1)', '(2,2,1)', '(0,3,1)', '(1,3,1)', '(2,3,1)',
           '(0,4,1)', '(1,4,1)', '(2,4,1)'],
  'hier': ['(0,0,0)', '(1,0,0)', '(2,0,0)', '(0,1,0)', '(1,1,0)', '(2,1,0)', '(0,2,0)', '(1,2,0)', '(2,2,0)',
           '(0,3,0)', '(1,3,0)', '(2,3,0)', '(0,4,0)', '(1,4,0)', '(2,4,0)', '(0,0,1)', '(1,0,1)', '(2,0,1)',
           '(0,1,1)', '(1,1,1)', '(2,1,1)', '(0,2,1)', '(1,2,1)', '(2,2,1)', '(0,3,1)', '(1,3,1)', '(2,3,1)',
           '(0,4,1)', '(1,4,1)', '(2,4,1)'],
  'name': 'colmajor',
  'size': 30,
  'str': '(_3,_5,_2):(_1,_3,_15)',
  'values': [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26,
             27, 28, 29]},
 {'cosize': 30,
  'flat': ['(0,0,0)', '(0,0,1)', '(0,1,0)', '(0,1,1)', '(0,2,0)', '(0,2,1)', '(0,3,0)', '(0,3,1)', '(0,4,0)',
           '(0,4,1)', '(1,0,0)', '(1,0,1)', '(1,1,0)', '(1,1,1)', '(1,2,0)', '(1,2,1)', '(1,3,0)', '(1,3,1)',
           '(1,4,0)', '(1,4,1)', '(2,0,0)', '(2,0,1)', '(2,1,0)', '(2,1,1)', '(2,2,0)', '(2,2,1)', '(2,3,0)',
           '(2,3,1)', '(2,4,0)', '(2,4,1)'],
  'hier': ['(0,0,0)', '(0,0,1)', '(0,1,0)', '(0,1,1)', '(0,2,0)', '(0,2,1)', '(0,3,0)', '(0,3,1)', '(0,4,0)',
           '(0,4,1)', '(1,0,0)', '(1,0,1)', '(1,1,0)', '(1,1,1)', '(1,2,0)', '(1,2,1)', '(1,3,0)', '(1,3,1)',
           '(1,4,0)', '(1,4,1)', '(2,0,0)', '(2,0,1)', '(2,1,0)', '(2,1,1)', '(2,2,0)', '(2,2,1)', '(2,3,0)',
           '(2,3,1)', '(2,4,0)', '(2,4,1)'],
  'name': 'rowmajor',
  'size': 30,
  'str': '(_3,_5,_2):(_10,_2,_1)',
  'values': [0, 10, 20, 2, 12, 22, 4, 14, 24, 6, 16, 26, 8, 18, 28, 1, 11, 21, 3, 13, 23, 5, 15, 25, 7, 17,
             27, 9, 19, 29]}]

CUTE_SLICES = [{'coord': '(0,1,_,0)', 'layout': 'flat', 'offset': 4, 'slice': '(_4):(_1)'},
 {'coord': '(0,_,2,0)', 'layout': 'flat', 'offset': 2, 'slice': '(_2):(_4)'},
 {'coord': '(_,_,2,0)', 'layout': 'flat', 'offset': 2, 'slice': '(_2,_2):(_8,_4)'},
 {'coord': '(_,1,_,0)', 'layout': 'flat', 'offset': 4, 'slice': '(_2,_4):(_8,_1)'},
 {'coord': '(1,0,_,0)', 'layout': 'vmnk2', 'offset': 1, 'slice': '(_4):(_4)'},
 {'coord': '(1,_,3,0)', 'layout': 'vmnk2', 'offset': 13, 'slice': '(_2):(_2)'},
 {'coord': '(_,1,_,0)', 'layout': 'vmnk2', 'offset': 2, 'slice': '((_2),_4):((_1),_4)'},
 {'coord': '(_,2)', 'layout': 'nested_a', 'offset': 4, 'slice': '((_2,_4)):((_1,_6))'},
 {'coord': '((1,_),_)', 'layout': 'nested_a', 'offset': 1, 'slice': '(_4,_3):(_6,_2)'},
 {'coord': '((_,3),1)', 'layout': 'nested_a', 'offset': 20, 'slice': '(_2):(_1)'}]


def build(name):
    return {
        "flat": Layout((2, 2, 4, 1), (8, 4, 1, 0)),
        "vmnk2": tiled_divide(make_layout((4, 4, 1)), (Layout(2, 1),)),
        "nested_a": Layout(((2, 4), 3), ((1, 6), 2)),
        "nested_b": Layout((4, (2, 3)), (3, (1, 12))),
        "colmajor": make_layout((3, 5, 2)),
        "rowmajor": make_layout((3, 5, 2), major="right"),
    }[name]


def plain(cute_text):
    """CuTe's print with the static-integer marks removed: how bwlab prints by default."""
    return cute_text.replace("_", "")


@pytest.mark.parametrize("case", CUTE_LAYOUTS, ids=[c["name"] for c in CUTE_LAYOUTS])
def test_layout_matches_cute(case):
    L = build(case["name"])
    assert L.cute_str(static=True) == case["str"]
    assert str(L) == plain(case["str"])
    assert L.size() == case["size"]
    assert L.cosize() == case["cosize"]
    assert L.values() == case["values"]
    assert [format_tuple(L.get_hier_coord(i)) for i in range(L.size())] == [plain(h) for h in case["hier"]]
    assert [format_tuple(L.get_flat_coord(i)) for i in range(L.size())] == [plain(h) for h in case["flat"]]


def parse_coord(text):
    """'((1,_),_)' -> ((1, None), None)."""
    return eval(text.replace("_", "None").replace(")", ",)").replace(",,", ","))


@pytest.mark.parametrize("case", CUTE_SLICES, ids=[f"{c['layout']}{c['coord']}" for c in CUTE_SLICES])
def test_slice_and_offset_match_cute(case):
    L = build(case["layout"])
    coord = parse_coord(case["coord"])
    sub, offset = L.slice_and_offset(coord)
    assert sub.cute_str(static=True) == case["slice"]
    assert offset == case["offset"]
    # calling the layout with wildcards gives the same slice; '_' and None are the same wildcard
    assert L(coord) == sub
    assert L(eval(repr(coord).replace("None", "'_'"))) == sub


def test_flat_index_is_colexicographic():
    L = Layout(((2, 4), 3), ((1, 6), 2))
    # colex over the top modes (8, 3): 11 -> (3, 1); then 3 inside (2, 4) -> (1, 1)
    assert L(11) == L((3, 1)) == L(((1, 1), 1)) == 1 * 1 + 1 * 6 + 1 * 2
    assert [L(i) for i in range(L.size())] == [L(((i % 2, (i // 2) % 4), i // 8)) for i in range(24)]


def test_reference_example():
    L = Layout((2, 2, 4, 1), (8, 4, 1, 0))
    assert str(L) == "(2,2,4,1):(8,4,1,0)"
    assert L(0, 1, 2, 0) == 6
    assert L[2] == Layout(4, 1)
    assert str(L(0, 1, None, 0)) == "(4):(1)"


def test_default_strides_follow_cute_compact_rule():
    # CuTe gives a static size-1 mode stride 0 (stride.hpp, compact_major)
    assert make_layout((4, 4, 1)).stride == (1, 4, 0)
    assert make_layout((1, 2, 1)).stride == (0, 1, 0)
    assert make_layout(((2, 3), 4)).stride == ((1, 2), 6)
    assert make_layout((3, 5, 2), major="right").stride == (10, 2, 1)


def test_tiled_divide_cluster_layouts():
    assert str(tiled_divide(make_layout((4, 4, 1)), (Layout(1, 0),))) == "((1),4,4,1):((0),1,4,0)"
    assert str(tiled_divide(make_layout((4, 4, 1)), (2,))) == "((2),2,4,1):((1),2,4,0)"
    assert str(tiled_divide(make_layout((2, 1, 1)), (2,))) == "((2),1,1,1):((1),0,0,0)"


@pytest.mark.parametrize("bad,match", [
    (lambda: Layout((2, 2), (1,)), "same nesting"),
    (lambda: Layout((2, 0), (1, 2)), "size >= 1"),
    (lambda: Layout((2, 2), (1, 2))(2, 0), "outside a mode of size 2"),
    (lambda: Layout((2, 2), (1, 2))(4), "outside layout"),
    (lambda: Layout((2, 2), (1, 2))(0, 0, 0), "3 modes"),
    (lambda: Layout((2, 2.5), (1, 2)), "integers"),
    (lambda: tiled_divide(make_layout((3, 4, 1)), (2,)), "does not divide"),
    (lambda: tiled_divide(make_layout((4, 4, 1)), (Layout(2, 2),)), "contiguous tiles"),
    (lambda: make_layout((2, 2), major="diagonal"), "major"),
])
def test_bad_input_raises_value_error(bad, match):
    with pytest.raises(ValueError, match=match):
        bad()


def test_layout_is_immutable_and_hashable():
    L = Layout((2, 2), (1, 2))
    with pytest.raises(AttributeError):
        L.shape = (4,)
    assert {L: 1}[Layout((2, 2), (1, 2))] == 1
