"""Build and execute the notebooks.

Each notebook has a source, notebooks/src/NN_name.py, in jupytext's percent format (jupytext.toml at the
top of the repository pairs them, so `jupytext --sync notebooks/NN_name.ipynb` works too):

    # %% [markdown]
    # # Title
    # text ...

    # %% tags=["nbval-ignore-output"]
    cell whose output depends on the machine

    # %% nbgrader={"grade": false, "grade_id": "tma_tx_bytes", "locked": false, "schema_version": 3, "solution": true}
    my_tx_bytes = ...     # the learner's answer, between ### BEGIN SOLUTION / ### END SOLUTION

    # %% nbgrader={"grade": true, "grade_id": "tma_tx_bytes_check", "locked": true, "points": 2, "schema_version": 3, "solution": false} tags=["raises-exception"]
    check(...)            # the graded check (### BEGIN HIDDEN TESTS / ### END HIDDEN TESTS for the hidden part)

The source holds the cells, their tags and their nbgrader metadata and nothing else; it is exactly what
jupytext writes for the stored notebook (`source_text`), and `check-sync` (a test in `make test`) fails
where a source and its notebook disagree. `build` executes a source into its notebook; `sync` writes the
source of a notebook edited in JupyterLab.

`python -m bwlab.tools.notebooks build notebooks/src/01_tma_load.py` writes `notebooks/01_tma_load.ipynb`
and executes it in the emulated tier (BWLAB_BACKEND=emulated: the kernels run in bwlab's PTX emulator,
which is deterministic), so the stored outputs are what strict nbval compares on a CPU-only CI machine.
`execute` re-runs existing .ipynb files in place.

`python -m bwlab.tools.notebooks run notebooks/src/01_tma_load.py` executes the code cells in order in one
namespace with plain Python, in whatever tier this machine gives (no Jupyter needed: this is how the
notebooks are run on the GPU machines, whose image has no IPython). Figures are drawn with the Agg
backend and closed; a cell that needs IPython/ipywidgets where they are missing is reported as skipped.

`python -m bwlab.tools.notebooks lab [jupyter lab options]` (what `make lab` runs) starts JupyterLab on
notebooks/ with the settings below: widget state saved with the notebook (an override in this
environment's `share/jupyter/lab/settings/overrides.d/`, nothing in the home directory) and `src/` hidden.

`python -m bwlab.tools.notebooks lab --student [--work DIR]` (`make lab STUDENT=1`) copies the student
versions (nbgrader's release, made again where a notebook is newer; a notebook without exercises as it is)
into DIR (default work/), never overwriting a notebook the learner changed (`fill_work_folder`), and starts
JupyterLab there with nbgrader's instructor UI turned off for that launch (`student_lab_config`).

`python -m bwlab.tools.notebooks soak [--runs N] [--timeout S] notebooks/*.ipynb` executes each notebook N
times headless (a temporary copy; nothing is written) and reports how many runs finished.

What is stored, and why:
* no widget views: each is replaced by one line naming the setting of its controls and saying that they
  need a running kernel; above it stays what the widget drew as built (the picture of the default
  setting). Stored views do not survive in JupyterLab 4 + jupyterlab_widgets 3, checked in a
  real browser (tests/browser/check_lab.py): a notebook that is not trusted (a fresh clone) shows only
  their text repr; and with "save widget state" on (needed so that a learner's save does not leave
  "model not found" behind) restoring stored models marks the notebook modified on open
  (`register_model` -> `setDirty`), and a save rewrites the state without defaults. The metadata
  holds the empty widget state that JupyterLab itself writes, so a save without running changes nothing;
* the kernelspec, language_info and nbformat version exactly as JupyterLab writes them with the kernel
  `make venv` registers, so opening a notebook does not mark it modified.

Headless execution plays no front end for widgets (`headless`). nbclient's default mimics the Output
widget: it keeps the widget's outputs and, from the task that reads IOPub, echoes them to the kernel with a
`comm_msg` on the shell socket while another task awaits the `execute_reply` on that same socket; now and
then the asyncio wake-up of that await was lost and the run stalled until the cell timeout. Without the
double, nothing is sent, and a widget's drawing is an ordinary output of its cell.

The package, by concern: `sources` (a notebook and its source, the cell checks, sync), `building` (build,
execute, what is stored), `lab` (JupyterLab and the learner's work folder), `running` (stored outputs
compared, soak, the plain-Python run) and `command` (the command line).
"""
from .building import (KERNELSPEC, NBFORMAT_MINOR, STATE_MIME, STORED_BACKEND, VIEW_MIME, build, execute_notebook,
                       widget_fallbacks)
from .building import _client_class, _scrub  # noqa: F401 - the tests' and the stall harness's handles
from .command import main
from .lab import (HIDE_GLOBS, LAB_OVERRIDES, NBGRADER_LABEXTENSION, NBGRADER_SERVER_EXTENSIONS, UPDATES, WORK_DIR,
                  fill_work_folder, install_lab_settings, lab_args, student_editions, student_lab_config,
                  student_lab_env)
from .running import NBVAL_SKIP_KEYS, SANITIZE_CFG, run_cells, soak, stored_output_differences
from .sources import (GRADE_KEYS, JUPYTEXT_CONFIG, JUPYTEXT_FORMAT, NB_DIR, RAISES, ROOT, SOLUTION_KEYS, notebook_of,
                      out_of_sync, parse_cells, parse_percent, read_source, source_of, source_text, sync_back,
                      validate_cells)
from .sources import _HEADING_IN_CODE  # noqa: F401 - the tests' handle
