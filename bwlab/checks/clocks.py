"""The clocks during a sustained measurement (bwlab.gemm.protocol, step 6): SM clock, power and the clock
event ("throttle") reasons, sampled through NVML, or nvidia-smi where the binding is missing, in a thread
that labels each sample with the block running at the time."""
from __future__ import annotations

import statistics
import threading
import time
from dataclasses import dataclass

__all__ = ["THROTTLE_REASONS", "reasons", "ClockSummary", "ClockLog", "summarize"]


# NVML clock event ("throttle") reasons, nvml.h nvmlClocksEventReason*: bit -> name
THROTTLE_REASONS = {0x1: "GPU idle", 0x2: "applications clocks setting", 0x4: "SW power cap",
                    0x8: "HW slowdown", 0x10: "sync boost", 0x20: "SW thermal slowdown",
                    0x40: "HW thermal slowdown", 0x80: "HW power brake slowdown", 0x100: "display clock setting"}


def reasons(mask: int) -> list:
    """The names of the reasons set in an NVML clock event mask (unknown bits as hex)."""
    out = [name for bit, name in THROTTLE_REASONS.items() if mask & bit]
    rest = mask & ~sum(THROTTLE_REASONS)
    if rest:
        out.append(hex(rest))
    return out


@dataclass
class ClockSummary:
    sm_mhz: float
    sm_min: float
    sm_max: float
    watts: float
    reasons: list
    n: int

    def __str__(self):
        if not self.n:
            return "no clock samples"
        why = ", ".join(self.reasons) or "none"
        return (f"SM {self.sm_mhz:.0f} MHz ({self.sm_min:.0f}-{self.sm_max:.0f}), {self.watts:.0f} W, "
                f"throttle: {why}")


class ClockLog:
    """SM clock, power and clock event reasons, sampled every `period_s` in a thread and labelled with
    the block running at the time (`mark(label)`).

    Reads NVML through the maintained binding (nvidia-ml-py, imported as pynvml) when it is installed,
    else `nvidia-smi --query-gpu ... -lms`; `source` says which, or why none."""

    def __init__(self, pci_bus_id: str | None = None, period_s: float = 0.05):
        self.period_s, self.samples, self.label = period_s, [], None
        self._stop = threading.Event()
        self._thread = self._proc = None
        self.source = "none"
        self._read = self._open(pci_bus_id)

    def _open(self, pci_bus_id):
        try:
            import pynvml
            pynvml.nvmlInit()
            h = (pynvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id) if pci_bus_id
                 else pynvml.nvmlDeviceGetHandleByIndex(0))
            event = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
                pynvml.nvmlDeviceGetCurrentClocksThrottleReasons

            def read():
                return (pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
                        pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0, int(event(h)))
            read()
            self.source = f"NVML (nvidia-ml-py {getattr(pynvml, '__version__', '')})".replace(" )", ")")
            return read
        except Exception as e:  # no binding, no driver: fall back to nvidia-smi
            why = f"{type(e).__name__}: {e}"
        return self._open_smi(pci_bus_id, why)

    def _open_smi(self, pci_bus_id, why):
        import shutil
        import subprocess
        if shutil.which("nvidia-smi") is None:
            self.source = f"none ({why}; no nvidia-smi)"
            return None
        cmd = ["nvidia-smi", "--query-gpu=clocks.sm,power.draw,clocks_event_reasons.active",
               "--format=csv,noheader,nounits", f"-lms={max(20, int(self.period_s * 1000))}"]
        if pci_bus_id:
            cmd.append(f"--id={pci_bus_id}")
        self._proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.source = "nvidia-smi -lms (NVML binding not available: " + why + ")"
        return "smi"

    def mark(self, label):
        self.label = label

    def _loop(self):
        while not self._stop.is_set():
            try:
                clk, w, mask = self._read()
                self.samples.append((time.perf_counter(), self.label, float(clk), float(w), mask))
            except Exception:
                pass
            self._stop.wait(self.period_s)

    def _loop_smi(self):
        for line in self._proc.stdout:
            if self._stop.is_set():
                break
            try:
                clk, w, mask = [p.strip() for p in line.split(",")]
                self.samples.append((time.perf_counter(), self.label, float(clk), float(w), int(mask, 16)))
            except ValueError:
                continue

    def start(self):
        if self._read is None:
            return self
        target = self._loop_smi if self._read == "smi" else self._loop
        self._thread = threading.Thread(target=target, daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._proc is not None:
            self._proc.terminate()
        if self._thread is not None:
            self._thread.join(timeout=2)

    def window(self, since: float) -> list:
        """SM clocks (MHz) sampled since perf_counter() time `since`."""
        return [s[2] for s in self.samples if s[0] >= since]

    def summary(self, label) -> ClockSummary:
        return summarize([s for s in self.samples if s[1] == label])


def summarize(samples: list) -> ClockSummary:
    """(time, label, SM MHz, W, reason mask) samples -> medians, range, and every reason seen."""
    if not samples:
        return ClockSummary(float("nan"), float("nan"), float("nan"), float("nan"), [], 0)
    mhz = [s[2] for s in samples]
    mask = 0
    for s in samples:
        mask |= s[4]
    return ClockSummary(statistics.median(mhz), min(mhz), max(mhz), statistics.median(s[3] for s in samples),
                        reasons(mask), len(samples))
