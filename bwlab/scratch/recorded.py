"""The from-scratch cases a GPU recorded (`bwlab.results`): each step on the emulator's problem."""
from __future__ import annotations

from ..results import Recorded
from .case import ScratchGemm
from .steps import EMU_SHAPE, STEPS

__all__ = ["RECORDED", "RECORDING"]

RECORDING = "scratch_steps"

RECORDED = tuple(Recorded(RECORDING, f"c_{s.name}", (lambda s=s: ScratchGemm(s, *EMU_SHAPE))) for s in STEPS)
