"""Validation, diagnosis and benchmarks: what checks the models against a GPU and measures it.

Nothing here is teaching code; notebooks do not import it. Each stage has one module
(`checks/tma.py`, `multicast.py`, `umma.py`, `tmem.py`, `store.py`, `foundation.py`) with
`validate_main(argv)` and, where the stage has one, `bench_main(argv)`, built on the stage's case
objects (`model()` / `run()` / `check()`) and on `common`: one command preamble and one random-case
loop. `python -m bwlab.validate STAGE` and `python -m bwlab.bench NAME` dispatch to them.
"""
