"""One model per hardware mechanism, shared by every stage.

* `mbarrier` — phases, arrival count, transaction count (`Mbarrier`)
* `banks`    — shared-memory banks and wavefronts (`wavefronts`, `BankReport`)
* `swizzle`  — the swizzle modes and CuTe's `Swizzle<B,M,S>` on byte addresses
* `tmem`     — TMEM addresses and images
* `dtypes`   — element types in one vocabulary (bits, NumPy dtype, tensor-map enumerator, PTX name)
* `exercises` — the checks of notebook 00's graded exercises (imported on demand, not here)

A stage imports these; it never keeps its own copy of a mechanism.
"""
from . import banks, dtypes, mbarrier, swizzle, tmem  # noqa: F401
from .dtypes import ElementType, element_type  # noqa: F401
from .mbarrier import Mbarrier  # noqa: F401
