"""The command: record on a GPU, or compare the emulator with the recordings."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from .kernels import BY_NAME, KNOWN_DIFFERENCES
from .manifest import AnyOf, CHAPTERS, Check, KERNELS, RECORDINGS, ROOT
from .recordings import emulator_result, load_recording
from .running import run_kernel


def _record_chapter(chapter: str, names: list, out_dir: Path, backend: str = "gpu") -> None:
    """Worker (one process per chapter): record each kernel into out_dir/<name>.npz as it goes;
    a CUDA error leaves the context unusable, so the worker then exits and the parent restarts it."""
    for name in names:
        k = BY_NAME[name]
        (out_dir / f"{name}.started").write_text("")
        meta = {"digest": k.inputs_digest()}
        try:
            res = run_kernel(k, backend)
            if isinstance(k.cmp, AnyOf):
                again = [run_kernel(k, backend, seed=s) for s in range(1, k.cmp.gpu_runs)]
                runs = [int(r["outputs"][0].ravel()[0]) for r in [res] + again]
                meta["runs"] = runs
                bad = [v for v in runs if v not in k.cmp.outcomes]
                if bad:
                    meta["error"] = f"the GPU gave {bad[0]}, not among the allowed outcomes {k.cmp.outcomes}"
            if isinstance(k.cmp, Check):
                err = k.cmp.fn(res["outputs"], k)
                if err:
                    meta["error"] = f"the GPU's own result fails the check: {err}"
        except Exception as e:  # noqa: BLE001
            meta["error"] = f"{type(e).__name__}: {str(e)[:300]}"
            res = {"outputs": [], "printf": ""}
            np.savez(out_dir / f"{name}.npz", __meta__=np.frombuffer(json.dumps(
                dict(meta, n_outputs=0, printf="")).encode(), np.uint8))
            (out_dir / f"{name}.started").unlink()
            if "cuda" in type(e).__module__.lower() or "CUDA" in str(e):
                sys.exit(4)
            continue
        meta.update(n_outputs=len(res["outputs"]), printf=res["printf"])
        np.savez(out_dir / f"{name}.npz", __meta__=np.frombuffer(json.dumps(meta).encode(), np.uint8),
                 **{f"o{j}": o for j, o in enumerate(res["outputs"])})
        (out_dir / f"{name}.started").unlink()


def _gpu_header(backend: str) -> dict:
    if backend == "emu":
        from ...compile import nvrtc_version
        return {"gpu": "bwlab.emu (dry run: checks the recorder, not the emulator)", "cc": "-", "nvidia_smi": "",
                "cupy": "-", "nvrtc": list(nvrtc_version()), "arch": "sm_90a",
                "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "numpy": np.__version__}
    import cupy as cp
    props = cp.cuda.runtime.getDeviceProperties(0)
    drv = cp.cuda.runtime.driverGetVersion()
    rt = cp.cuda.runtime.runtimeGetVersion()
    from ...compile import nvrtc_version
    smi = ""
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return {"gpu": props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"]),
            "cc": f"{props['major']}.{props['minor']}", "nvidia_smi": smi,
            "driver_api": drv, "cuda_runtime": rt, "cupy": cp.__version__, "nvrtc": list(nvrtc_version()),
            "arch": "sm_90a", "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "numpy": np.__version__}


def record(out_dir: Path, names: list | None, say, backend: str = "gpu") -> int:
    """Record every kernel (or `names`) on this GPU into out_dir, one worker process per chapter.
    backend="emu" runs the same path through the emulator: a dry run of the recorder."""
    out_dir.mkdir(parents=True, exist_ok=True)
    header = _gpu_header(backend)
    say(f"recording on {header['gpu']} (cc {header['cc']}, {header['nvidia_smi']}), cupy {header['cupy']}, "
        f"NVRTC {header['nvrtc']}")
    wanted = [k for k in KERNELS if names is None or k.name in names or k.chapter in names]
    failures = 0
    for chapter in CHAPTERS:
        todo = [k.name for k in wanted if k.chapter == chapter]
        if not todo:
            continue
        t0 = time.time()
        with tempfile.TemporaryDirectory() as td:
            tdp = Path(td)
            while todo:
                code = ("import sys; from pathlib import Path; "
                        "from bwlab.checks.emu_corpus.command import _record_chapter as r; "
                        "r(sys.argv[1], sys.argv[4:], Path(sys.argv[2]), sys.argv[3])")
                p = subprocess.Popen([sys.executable, "-c", code, chapter, td, backend, *todo],
                                     cwd=str(ROOT), env=dict(os.environ, PYTHONPATH=str(ROOT)))
                try:
                    p.wait(timeout=90 if backend == "gpu" else 1200)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
                started = [n for n in todo if (tdp / f"{n}.started").exists()]
                for n in started:  # a hang or a crash: that kernel failed on the GPU
                    np.savez(tdp / f"{n}.npz", __meta__=np.frombuffer(json.dumps(
                        {"digest": BY_NAME[n].inputs_digest(), "n_outputs": 0, "printf": "",
                         "error": f"the worker died or hung (exit {p.returncode})"}).encode(), np.uint8))
                    (tdp / f"{n}.started").unlink()
                todo = [n for n in todo if not (tdp / f"{n}.npz").exists()]
            merged, meta = {}, {}
            for k in wanted:
                if k.chapter != chapter:
                    continue
                z = np.load(tdp / f"{k.name}.npz")
                m = json.loads(bytes(z["__meta__"]).decode())
                meta[k.name] = m
                for j in range(m["n_outputs"]):
                    merged[f"{k.name}.{j}"] = z[f"o{j}"]
                if m.get("error"):
                    failures += 1
                    say(f"  GPU FAILED {k.name}: {m['error']}")
            old = {}
            if names is not None and (out_dir / f"{chapter}.npz").exists():  # keep the others' recordings
                z = np.load(out_dir / f"{chapter}.npz")
                old_meta = json.loads(bytes(z["__meta__"]).decode())
                for n, m in old_meta.items():
                    if n not in meta and n in BY_NAME:
                        meta[n] = m
                        for j in range(m["n_outputs"]):
                            old[f"{n}.{j}"] = z[f"{n}.{j}"]
            np.savez_compressed(out_dir / f"{chapter}.npz", __meta__=np.frombuffer(json.dumps(meta).encode(), np.uint8),
                                **old, **merged)
        say(f"  {chapter:<11} {len([k for k in wanted if k.chapter == chapter]):>3} kernels recorded "
            f"in {time.time() - t0:.1f} s")
    header["kernels"] = len(KERNELS)
    (out_dir / "header.json").write_text(json.dumps(header, indent=1) + "\n")
    say(f"{len(wanted)} kernels, {failures} failed on the GPU; recordings in {out_dir}")
    return failures


def _nvrtc() -> tuple:
    from ...compile import nvrtc_version
    return nvrtc_version()


def compare_all(where: Path, names: list | None, say) -> dict:
    """Run every recorded kernel in the emulator; print a table per chapter; {kernel: (status, detail)}."""
    header = json.loads((Path(where) / "header.json").read_text()) if (Path(where) / "header.json").exists() else {}
    say(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: bwlab.emu vs the recordings made on "
        f"{header.get('gpu', '?')} (driver {header.get('nvidia_smi', '?').split(', ')[-1]}, CUDA runtime "
        f"{header.get('cuda_runtime', '?')}, cupy {header.get('cupy', '?')}, NVRTC {header.get('nvrtc', '?')}) on "
        f"{header.get('date', '?')}; emulator side: NVRTC {'.'.join(map(str, _nvrtc()))}, numpy {np.__version__}")
    results = {}
    for chapter in CHAPTERS:
        ks = [k for k in KERNELS if k.chapter == chapter and (names is None or k.name in names or chapter in names)]
        if not ks:
            continue
        rec = load_recording(chapter, where)
        say(f"\n== {chapter}")
        for k in ks:
            t0 = time.perf_counter()
            if k.name not in rec:
                st, detail = "stale", "not recorded: re-record on a GPU"
            else:
                st, detail = emulator_result(k, rec[k.name])
            results[k.name] = (st, detail)
            label = {"match": "match", "differ": "DIFFER", "unsupported": "not modelled", "error": "GPU error",
                     "stale": "stale"}[st]
            known = " (known)" if k.name in KNOWN_DIFFERENCES else ""
            say(f"  {k.name:<30} {label:<12}{known} {time.perf_counter() - t0:5.2f}s  {detail}")
    say("\nper chapter: match / differ / not modelled / other")
    tot = [0, 0, 0, 0]
    for chapter in CHAPTERS:
        sts = [results[k.name][0] for k in KERNELS if k.name in results and k.chapter == chapter]
        if not sts:
            continue
        row = [sts.count("match"), sts.count("differ"), sts.count("unsupported"),
               len(sts) - sts.count("match") - sts.count("differ") - sts.count("unsupported")]
        tot = [a + b for a, b in zip(tot, row)]
        say(f"  {chapter:<11} {row[0]:>4} {row[1]:>4} {row[2]:>4} {row[3]:>4}")
    say(f"  {'total':<11} {tot[0]:>4} {tot[1]:>4} {tot[2]:>4} {tot[3]:>4}   ({len(results)} kernels)")
    return results


def validate_main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bwlab.validate emu-corpus",
                                 description=sys.modules[__package__].__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--compare", action="store_true", help="run the emulator against the recordings (no GPU)")
    ap.add_argument("--out-dir", default=str(RECORDINGS), help="where recordings are written (recording)")
    ap.add_argument("--against", default=str(RECORDINGS), help="recordings to compare with (--compare)")
    ap.add_argument("--only", nargs="*", help="kernel or chapter names")
    ap.add_argument("--out", help="also write the report to this file")
    ap.add_argument("--dry-run-emulator", action="store_true",
                    help="record through bwlab.emu instead of a GPU (checks the recorder itself, anywhere)")
    args = ap.parse_args(argv)
    from ..common import EXIT_MISMATCH, EXIT_NO_GPU, EXIT_PASS, Report
    say = Report()
    unknown = [n for n in (args.only or []) if n not in BY_NAME and n not in CHAPTERS]
    if unknown:
        ap.error(f"--only: {', '.join(unknown)} is neither a corpus kernel nor a chapter")
    if args.compare:
        res = compare_all(Path(args.against), args.only, say)
        unexpected = [n for n, (st, _) in res.items() if (st == "match") == (n in KNOWN_DIFFERENCES)]
        say(f"\n{len(unexpected)} kernels disagree with KNOWN_DIFFERENCES" +
            (": " + ", ".join(unexpected) if unexpected else ""))
        say("command: python -m bwlab.validate emu-corpus " + " ".join(argv if argv is not None else sys.argv[2:]))
        say.save(args.out)
        return EXIT_MISMATCH if unexpected else EXIT_PASS
    if args.dry_run_emulator:
        if Path(args.out_dir).resolve() == RECORDINGS.resolve():
            ap.error("--dry-run-emulator needs --out-dir elsewhere: it must not overwrite the GPU recordings")
        failed = record(Path(args.out_dir), args.only, say, backend="emu")
        say.save(args.out)
        return EXIT_MISMATCH if failed else EXIT_PASS
    from ... import device
    if not device.has_gpu():
        say("emu-corpus records on a GPU; none here (use --compare to run the emulator against the recordings)")
        return EXIT_NO_GPU
    failed = record(Path(args.out_dir), args.only, say)
    say.save(args.out)
    return EXIT_MISMATCH if failed else EXIT_PASS
