"""Small helpers used by every stage: integer rounding and the stage packages' lazy names."""
from __future__ import annotations

__all__ = ["ceil_div", "round_up", "names_elsewhere"]


def ceil_div(x: int, m: int) -> int:
    """The smallest integer >= x / m (for m > 0)."""
    return -(-int(x) // int(m))


def round_up(x: int, m: int) -> int:
    """x rounded up to a multiple of m (for m > 0)."""
    return ceil_div(x, m) * int(m)


def names_elsewhere(namespace: dict, elsewhere: dict):
    """`__getattr__` and `__dir__` for a stage package (the one lazy mechanism, after scikit-image's
    `lazy.attach`): `elsewhere` is {module: "name name ..."}, and `bwlab.<stage>.<name>` imports that
    module on first use and returns its `name`. `namespace` is the package's globals(); its `__all__`
    and what it imports plainly make up `dir()`."""
    where = {name: module for module, names in elsewhere.items() for name in names.split()}

    def __getattr__(name):
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
        import importlib
        return getattr(importlib.import_module(module), name)

    def __dir__():
        return sorted(set(namespace.get("__all__", ())) | set(namespace))

    return __getattr__, __dir__
