"""Plain data across the sandbox wall: a learner's answers as JSON of exact types, nothing else.

The grader (bwlab.tools.grading) never touches an object that a learner's code made. The sandboxed
process (bwlab.tools.answer_runner) turns each answer into plain data with `encode`; the grader turns
that back with `decode`, into objects of its own making. Only these travel:

    None, bool, int, float, str, ...          exactly these types (a subclass travels as its base
                                              type's value: an always-equal int is a plain int)
    list, tuple, dict (plain keys), set       of plain data
    NumPy arrays and scalars                  numeric or bool dtypes, by dtype, shape and bytes

Anything else (a class the learner wrote, a generator, a function's return value that is an object)
is refused with `NotPlain` naming its type, so the check sees "not an answer" and never runs learner
code. Numbers compare by value: `decode` gives an integral float (768.0) as the int 768 and a NumPy
scalar as the Python number, since the checks compare a prediction with what the rule gives.
"""
from __future__ import annotations

import base64
import math

MAX_DEPTH = 32
MAX_ITEMS = 1_000_000       # list/dict/array elements in one answer, all levels together
_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float16", "float32", "float64")


class NotPlain(TypeError):
    """The value is not plain data (see the module's docstring); the message names what is not."""


def encode(value, _depth: int = 0, _count: list | None = None):
    """`value` as JSON-able data tagged with its exact type; NotPlain for anything else."""
    count = _count if _count is not None else [0]
    count[0] += 1
    if count[0] > MAX_ITEMS or _depth > MAX_DEPTH:
        raise NotPlain("the answer is too large or too deeply nested to grade")
    t = type(value)
    if value is None or t is bool or t is str:
        return value
    if value is Ellipsis:             # a placeholder the student versions use: "no answer yet"
        return {"ellipsis": True}
    if t is int:
        return value if abs(value) < 2 ** 53 else {"int": str(value)}
    if t is float:
        return {"float": repr(value)} if not math.isfinite(value) else value
    if t in (list, tuple, set, frozenset):
        items = sorted(value, key=repr) if t in (set, frozenset) else value
        enc = [encode(v, _depth + 1, count) for v in items]
        return enc if t is list else {{tuple: "tuple", set: "set", frozenset: "set"}[t]: enc}
    if t is dict:
        return {"dict": [[encode(k, _depth + 1, count), encode(v, _depth + 1, count)] for k, v in value.items()]}
    np = _numpy()
    if np is not None and t is np.ndarray:
        if value.dtype.name not in _DTYPES:
            raise NotPlain(f"a NumPy array of dtype {value.dtype.name} is not an answer this grader reads")
        count[0] += value.size
        if count[0] > MAX_ITEMS:
            raise NotPlain("the answer is too large to grade")
        data = np.ascontiguousarray(value).tobytes()
        return {"ndarray": value.dtype.name, "shape": list(value.shape), "b64": base64.b64encode(data).decode()}
    if np is not None and isinstance(value, np.generic) and t.__module__ == "numpy":
        if value.dtype.name not in _DTYPES:
            raise NotPlain(f"a NumPy {value.dtype.name} is not an answer this grader reads")
        return {"npscalar": value.dtype.name, "value": encode(value.item(), _depth + 1, count)}
    # A subclass of a plain type (an IntEnum, a namedtuple, an OrderedDict, or an int whose __eq__
    # always says yes) travels as its base type's own value, read with the base type's methods, so
    # nothing the subclass overrides takes part.
    for base, read in ((int, int.__int__), (float, float.__float__), (str, str.__str__),
                       (list, lambda v: list(list.__iter__(v))), (tuple, lambda v: tuple(tuple.__iter__(v))),
                       (dict, lambda v: dict(dict.items(v))), (frozenset, lambda v: set(frozenset.__iter__(v))),
                       (set, lambda v: set(set.__iter__(v)))):
        if isinstance(value, base):
            return encode(read(value), _depth + 1, count)
    raise NotPlain(f"{_type_name(t)} is not plain data (give an int, float, str, bool, None, a list, tuple "
                   "or dict of them, or a NumPy array)")


def decode(data, by_value: bool = True, _depth: int = 0, _count: list | None = None):
    """The value `encode` described, built here from JSON: only the types listed in the module's
    docstring, NumPy scalars as Python numbers and, `by_value`, integral floats as ints. ValueError
    for anything `encode` cannot have written (more than MAX_ITEMS elements or MAX_DEPTH levels
    included: the reply may come from a sender that never ran `encode`)."""
    if _depth > MAX_DEPTH:
        raise ValueError("nested too deeply")
    count = _count if _count is not None else [0]
    count[0] += 1
    if count[0] > MAX_ITEMS:
        raise ValueError(f"more than {MAX_ITEMS} elements")
    if data is None or type(data) in (bool, str, int):
        return data
    if type(data) is float:
        return _number(data) if by_value else data
    if type(data) is list:
        return [decode(v, by_value, _depth + 1, count) for v in data]
    if type(data) is not dict or len(data) not in (1, 2, 3):
        raise ValueError(f"not an encoded value: {str(data)[:80]}")
    if data == {"ellipsis": True}:
        return Ellipsis
    if "int" in data and len(data) == 1:
        return int(str(data["int"]))
    if "float" in data and len(data) == 1:
        return float(str(data["float"]))
    if "tuple" in data and len(data) == 1:
        return tuple(decode(v, by_value, _depth + 1, count) for v in _list(data["tuple"]))
    if "set" in data and len(data) == 1:
        return {decode(v, by_value, _depth + 1, count) for v in _list(data["set"])}
    if "dict" in data and len(data) == 1:
        out = {}
        for pair in _list(data["dict"]):
            k, v = _list(pair)
            out[decode(k, by_value, _depth + 1, count)] = decode(v, by_value, _depth + 1, count)
        return out
    if "npscalar" in data:
        return decode(data.get("value"), by_value, _depth + 1, count)
    if "ndarray" in data:
        np = _numpy()
        dtype = str(data["ndarray"])
        if dtype not in _DTYPES:
            raise ValueError(f"dtype {dtype!r}")
        shape = tuple(int(n) for n in _list(data["shape"]))
        arr = np.frombuffer(base64.b64decode(str(data["b64"])), dtype=dtype)
        count[0] += arr.size
        if count[0] > MAX_ITEMS:
            raise ValueError(f"more than {MAX_ITEMS} elements")
        return arr.reshape(shape).copy()
    raise ValueError(f"not an encoded value: {str(data)[:80]}")


def _number(x: float):
    return int(x) if math.isfinite(x) and x.is_integer() and abs(x) < 2 ** 63 else x


def _list(v) -> list:
    if type(v) is not list:
        raise ValueError("expected a list")
    return v


def _type_name(t) -> str:
    try:
        return f"{t.__module__}.{t.__qualname__}" if t.__module__ != "builtins" else t.__qualname__
    except Exception:
        return "an object of an unknown type"


def _numpy():
    try:
        import numpy
        return numpy
    except ImportError:         # pragma: no cover - numpy is a dependency of bwlab
        return None
