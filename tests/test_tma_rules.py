"""Walk the table of cuTensorMapEncodeTiled's rules (bwlab.tma.rules.RULES): every rule has a legal
example that TensorMap accepts and an illegal one that it refuses with a TensorMapError naming that
rule and its limit; every row names its source."""
import pytest

from bwlab.tma import TensorMap, TensorMapError
from bwlab.tma.rules import ADDRESS_RULE, BASE_EXAMPLE, RULES, RULES_BY_NAME

ALL = list(RULES) + [ADDRESS_RULE]


def build(changes):
    kw = dict(BASE_EXAMPLE)
    kw.update({k: v for k, v in changes.items() if not k.startswith("_")})
    t = TensorMap(**kw)
    if "_address" in changes:
        t.encode_args(changes["_address"])
    return t


def test_the_table_is_complete_and_sourced():
    assert len(RULES_BY_NAME) == len(RULES)  # one row per rule name
    for r in ALL:
        assert r.limit and r.legal and r.illegal, r.name
        assert "cuTensorMapEncodeTiled" in r.source or "PTX ISA" in r.source, r.name


@pytest.mark.parametrize("rule", ALL, ids=[r.name for r in ALL])
def test_legal_example_is_accepted(rule):
    build(rule.legal)


@pytest.mark.parametrize("rule", ALL, ids=[r.name for r in ALL])
def test_illegal_example_is_refused_naming_the_rule_and_its_limit(rule):
    with pytest.raises(TensorMapError) as e:
        build(rule.illegal)
    assert e.value.rule == rule.name
    assert e.value.limit == rule.limit and rule.limit in str(e.value)
    assert str(e.value).startswith(f"[{rule.name}] ")


def test_every_rule_that_tensor_map_raises_is_in_the_table():
    # The construction rules raised by TensorMap are exactly the table's (the load's own rules, e.g.
    # coords-inner-alignment and smem-alignment, are the instruction's and live in bwlab.tma.model).
    import inspect

    from bwlab.tma import tensor_map
    src = inspect.getsource(tensor_map)
    assert "TensorMapError(" not in src
