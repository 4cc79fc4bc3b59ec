"""Reproduce (or show fixed) the headless execution stall after widget cells, and show where it waits.

    python tests/tools/nbclient_stall_probe.py notebooks/04_tmem_load.ipynb --runs 8 [--fixed] [--timeout 30]

Drives the notebook as nbconvert's ExecutePreprocessor does (setup_kernel, then execute_cell per cell)
with stock nbclient, or with bwlab's client (--fixed). Every message a channel hands over is logged (with an excerpt: the time this takes in the IOPub task
widens the race window; without it the stall is rarer);
a run in which a message reached the client more than 5 s after the kernel sent it prints the wait.
Stock nbclient: now and then the execute_reply of the widget cell sits in the shell socket from ~1 s
after the request until the cell timeout, right after nbclient's Output-widget mimic has sent its
comm_msg echoes on that socket (the kernel's status busy/idle for those comm_msg requests follow).
"""
import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def run_once(path: Path, timeout: int, fixed: bool) -> tuple[float, list]:
    import nbformat
    from jupyter_client.channels import AsyncZMQSocketChannel
    from nbclient import NotebookClient
    from bwlab.tools.notebooks import _client_class
    t0 = time.time()
    log = []
    orig = AsyncZMQSocketChannel.get_msg

    async def get_msg(self, timeout=None):
        t = time.time()
        m = await orig(self, timeout=timeout)
        log.append((t - t0, time.time() - t0, "shell" if self.socket.socket_type == 5 else "iopub",
                    m["msg_type"], m["header"]["date"].timestamp() - t0,
                    m["parent_header"].get("msg_type"), str(m["content"])[:60]))
        return m

    AsyncZMQSocketChannel.get_msg = get_msg
    try:
        os.environ["BWLAB_BACKEND"] = "model"
        os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
        nb = nbformat.read(path, as_version=4)
        cls = _client_class() if fixed else NotebookClient
        c = cls(nb, timeout=timeout, kernel_name="python3",
                resources={"metadata": {"path": str(path.parent)}})
        with c.setup_kernel():
            for i, cell in enumerate(nb.cells):
                c.execute_cell(cell, i)
    finally:
        AsyncZMQSocketChannel.get_msg = orig
    return time.time() - t0, log


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("notebook")
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--timeout", type=int, default=30)
    ap.add_argument("--fixed", action="store_true", help="bwlab's client instead of stock nbclient")
    a = ap.parse_args()
    stalls = 0
    for r in range(a.runs):
        took, log = run_once(Path(a.notebook), a.timeout, a.fixed)
        late = [l for l in log if l[1] - l[4] > 5]
        stalls += bool(late)
        print(f"run {r + 1}: {took:.1f} s, {len(late)} messages received > 5 s after sent", flush=True)
        if late:
            k = log.index(late[0])
            for l in log[max(0, k - 6):k + 4]:
                print("   wait from %7.2f got %7.2f  %-5s %-14s sent %7.2f  (reply to %s) %s" % l)
    print(f"{'bwlab client' if a.fixed else 'stock nbclient'}: {stalls} of {a.runs} runs stalled")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
