"""What the emulator reports when a kernel breaks a rule, faults or can never finish."""
from __future__ import annotations

from .memory import EmuFault

__all__ = ["EmuError", "EmuFault", "DivergenceError", "ProtocolError", "ProxyFenceMissing", "EmuHang",
           "UnsupportedInstruction", "EmuTimeout"]


class EmuError(RuntimeError):
    """A kernel did something the PTX ISA does not allow; the message names the thread(s), the
    instruction and the rule."""


class DivergenceError(EmuError):
    """A `.sync`/`.aligned` instruction reached by a warp whose lanes are not together."""


class ProtocolError(EmuError):
    """An asynchronous-unit rule broken (mbarrier use before init, registers read before the wait,
    a CTA that exits while its cluster peers still write into it, ...)."""


class ProxyFenceMissing(ProtocolError):
    """Shared memory written by generic-proxy stores and then read by the async proxy (TMA store,
    wgmma operands) with no `fence.proxy.async` by the writing thread in between."""


class EmuHang(EmuError):
    """Every live thread waits and nothing can ever wake it; `.report` names each waiting warp."""

    def __init__(self, message: str, report: str = ""):
        self.report = report
        super().__init__(message + ("\n" + report if report else ""))


class EmuTimeout(EmuError):
    """The kernel ran past the emulator's instruction budget without finishing."""


class UnsupportedInstruction(EmuError):
    """An instruction the emulator does not execute (yet); the message names it and its line."""
