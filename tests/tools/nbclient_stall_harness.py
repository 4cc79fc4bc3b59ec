# Reproduces the headless stall after widget cells (stock nbclient; FIXED=1: bwlab's client), see
# docs/results/notebooks_soak.txt:  python tests/tools/nbclient_stall_harness.py NOTEBOOK CELL_TIMEOUT percell|execute
# Logs every message a channel hands over (the per-message work in the IOPub task widens the race window;
# a leaner logger reproduced it in 0 of 30 runs) and prints the last 40 of a run with one > 5 s late.
"""Run a notebook like the builder (NotebookClient.execute), log every get_msg that took > 1 s."""
import sys, time, os, nbformat, datetime
from nbclient import NotebookClient
os.environ["BWLAB_BACKEND"]="model"
os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
path=sys.argv[1]; timeout=int(sys.argv[2])
nb=nbformat.read(path, as_version=4)
T0=time.time()
LOG=[]
from jupyter_client.channels import AsyncZMQSocketChannel
_orig=AsyncZMQSocketChannel.get_msg
async def get_msg(self, timeout=None):
    t=time.time()
    name=self.socket.getsockopt_string(__import__("zmq").LAST_ENDPOINT) if False else type(self.socket).__name__+str(self.socket.socket_type)
    try:
        m = await _orig(self, timeout=timeout)
    except Exception as e:
        if time.time()-t>1: print(f"  {t-T0:7.2f} sock{self.socket.socket_type} get_msg(timeout={timeout}) -> {type(e).__name__} after {time.time()-t:.2f}s", flush=True)
        raise
    dt=time.time()-t
    lag=time.time()-m['header']['date'].timestamp()
    LOG.append((t-T0, time.time()-T0, self.socket.socket_type, m['msg_type'], m['header']['date'].timestamp()-T0, m['parent_header'].get('msg_type'), m['parent_header'].get('msg_id','')[-6:], str(m['content'])[:80]))
    if lag>0.5:
        print(f"  {t-T0:7.2f} sock{self.socket.socket_type} {m['msg_type']} waited {dt:.2f}s, received {lag:.2f}s after the kernel sent it (timeout={timeout})", flush=True)
    return m
AsyncZMQSocketChannel.get_msg=get_msg
C=NotebookClient
if os.environ.get("FIXED"):
    from bwlab.tools.notebooks import _client_class; C = _client_class()
def start(cell, cell_index, **kw): cell.metadata["_t"]=time.time()
def done(cell, cell_index, **kw):
    dt=time.time()-cell.metadata.pop("_t")
    if dt>2: print(f"cell {cell_index} {dt:.1f}s", flush=True)
c=C(nb, timeout=timeout, kernel_name="python3", resources={"metadata":{"path":os.path.dirname(path)}}, on_cell_start=start, on_cell_executed=done)
mode=sys.argv[3] if len(sys.argv)>3 else "execute"
try:
    if mode=="execute":
        c.execute()
    else:
        with c.setup_kernel():
            for i,cell in enumerate(nb.cells):
                c.execute_cell(cell, i)
    print(f"total {time.time()-T0:.1f}s", flush=True)
except Exception as e:
    print(f"EXC {type(e).__name__} {str(e)[:300]} after {time.time()-T0:.1f}s", flush=True)

if any(l[1]-l[4]>5 for l in LOG):
    for l in LOG[-40:]:
        print("   call %7.2f got %7.2f sock%d %-14s sent %7.2f parent %s %s %s" % l)
