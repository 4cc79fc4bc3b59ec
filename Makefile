# Two commands for a newcomer: `make lab` and `make test`.
# CUDA=12 (default) installs cupy-cuda12x; CUDA=13 installs cupy-cuda13x.
PYTHON ?= python3
CUDA   ?= 12
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.bwlab-installed-cuda$(CUDA)

.PHONY: lab test unit nbval wheel-test venv notebooks sync notebooks-soak student grade grade-check sandbox-deps browser-deps browser-test browser-test-student clean

venv: $(STAMP)

$(STAMP): pyproject.toml setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[dev,cuda$(CUDA)]"
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	rm -f $(VENV)/.bwlab-installed-*
	touch $@

# JupyterLab refuses to run as root unless told; containers often are root.
ROOTFLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)
LABFLAGS ?=

# JupyterLab on notebooks/ (src/ hidden), widget state saved with the notebook (see bwlab/tools/notebooks/lab.py).
# make lab STUDENT=1: the student versions (answers removed) copied into $(WORK)/, yours to change; a later
# run never overwrites a notebook you changed (a newer edition goes to $(WORK)/updates/); no nbgrader UI.
STUDENT ?=
WORK    ?= work
lab: venv
	$(PY) -m bwlab.tools.notebooks lab $(if $(STUDENT),--student --work $(WORK)) $(ROOTFLAG) $(LABFLAGS)

# The whole suite: unit tests, compile checks of every cuda_src file, and every notebook executed once and
# compared with its stored outputs (strict nbval: notebooks/sanitize.cfg). Notebooks are stored from an
# emulated-tier run (the TMA-family kernels in bwlab.emu, deterministic), so they execute in that tier.
# Each pytest runs on every core (pytest-xdist): a test file, or a notebook's cells, stay on one worker (module
# fixtures run once). One worker more than cores: the files that grade in the sandbox mostly wait on the
# sandboxes' wall-clock limits.
# make test BROWSER=1 (what .ci/run runs): each notebook's one execution is the browser test's Run All
# (make browser-test: JupyterLab under headless Chromium, the saved Run All compared with the stored outputs by
# nbval's rules, then every widget moved) instead of headless nbval; it runs alongside the unit tests (it mostly
# waits on the browser and the kernel), its log printed after them.
XDIST ?= -n $(shell echo $$(( $$(nproc) + 1 )))
BROWSER ?=
test: venv sandbox-deps $(if $(BROWSER),browser-deps)
ifeq ($(BROWSER),)
	$(PY) -m pytest -q $(XDIST) --dist loadfile --no-loadscope-reorder tests --ignore=tests/test_wheel.py
	$(MAKE) --no-print-directory nbval
else
	@mkdir -p build
	@echo "browser test started alongside the unit tests; its log: build/browser-test.log"
	@$(MAKE) --no-print-directory browser-test > build/browser-test.log 2>&1 & browser=$$!; \
	  $(PY) -m pytest -q $(XDIST) --dist loadfile --no-loadscope-reorder tests --ignore=tests/test_wheel.py; unit=$$?; \
	  wait $$browser; rc=$$?; cat build/browser-test.log; \
	  echo "make test BROWSER=1: unit tests exit $$unit, browser test (Run All against the stored outputs) exit $$rc"; \
	  test $$unit = 0 && test $$rc = 0
endif

unit: venv sandbox-deps
	$(PY) -m pytest -q $(XDIST) --dist loadfile --no-loadscope-reorder tests --ignore=tests/test_wheel.py

# bwlab as a user installs it (tests/test_wheel.py): a wheel built from this repository, installed with its
# cuda12 extra into a fresh venv outside the checkout, compiles a teaching kernel for sm_90a, replays a
# recording through a stage's model and executes notebooks/00_orientation.ipynb headless. Needs the
# package index (pip's cache is reused); about half a minute with a warm cache.
wheel-test: venv sandbox-deps
	$(PY) -m pytest -q tests/test_wheel.py -p no:cacheprovider --durations=3

nbval: venv
	BWLAB_BACKEND=emulated $(PY) -m pytest -q $(XDIST) --dist loadfile --nbval notebooks --nbval-sanitize-with notebooks/sanitize.cfg -p no:cacheprovider

# Build every notebook from its source (notebooks/src/NN_name.py, jupytext's percent format) and execute
# it in the emulated tier: the stored outputs are what nbval compares against.
notebooks: venv
	$(PY) -m bwlab.tools.notebooks build notebooks/src/*.py

# Write the sources of notebooks edited in JupyterLab. `make lab` does this on every save (jupytext's
# contents manager reads jupytext.toml); `make test` fails while a source and its notebook disagree.
sync: venv
	$(PY) -m bwlab.tools.notebooks sync notebooks/*.ipynb

# Execute every notebook N times headless (nothing is written) and report how many runs finished.
N ?= 10
notebooks-soak: venv
	$(PY) -m bwlab.tools.notebooks soak --runs $(N) notebooks/*.ipynb

# Teaching (docs/teaching.md): the nbgrader course lives in $(COURSE).
# make student                      student versions of the notebooks -> $(COURSE)/release/<notebook>/
# make grade SUBMISSIONS=DIR        DIR/<student>/NN_name.ipynb -> submitted/, grade each in a sandbox, scores
#      [ID_MAP=ids.csv] [JOBS=N]    learning-platform folder names -> student ids; N graded at a time
# make grade-check                  the answer key scores full points (under three students' numbers) and an
#                                   untouched notebook none; BWLAB_COURSE_DATA=DIR grades against your hidden cases
COURSE        ?= build/classroom
SUBMISSIONS   ?=
ID_MAP        ?=
JOBS          ?= 2
GRADE_BACKEND ?= model
student: venv
	$(PY) -m bwlab.tools.classroom --course $(COURSE) student

grade: venv sandbox-deps
	$(PY) -m bwlab.tools.classroom --course $(COURSE) grade --backend $(GRADE_BACKEND) -j $(JOBS) \
	  $(if $(SUBMISSIONS),--collect $(SUBMISSIONS)) $(if $(ID_MAP),--id-map $(ID_MAP))

grade-check: venv sandbox-deps
	$(PY) -m bwlab.tools.classroom selfcheck --backend $(GRADE_BACKEND)

# Submissions run in a bubblewrap sandbox (docs/teaching.md, "The sandbox"), dropped to a user id of its own
# with setpriv (util-linux); its seccomp filter and cgroups need no package. As root with apt-get this
# installs them; elsewhere it says so: `make grade` then refuses to run learners' code, and the tests of
# hostile submissions are skipped with that reason.
sandbox-deps:
	@if ! command -v bwrap >/dev/null || ! command -v setpriv >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap util-linux; \
	  else \
	    echo "sandbox-deps: no bubblewrap (bwrap) or setpriv. Install them as root (Debian/Ubuntu: apt-get install -y" \
	         "bubblewrap util-linux), or grade in the container of docs/teaching.md. Grading refuses to run without them." >&2; \
	  fi; \
	fi

# The notebooks in a real browser: JupyterLab headless, the system's Chromium driven by Playwright (every
# notebook run in the emulated tier and its outputs compared with the stored ones as nbval compares, every
# widget control moved, screenshots and summary.txt in build/browser/). See
# tests/browser/check_lab.py. Chromium comes from the system's packages (apt-get as root, where missing),
# Playwright from pip (the `browser` extra); `playwright install` is never used.
CHROMIUM     ?= /usr/lib/chromium/chromium
BROWSERFLAGS ?=
BROWSER_STAMP := $(VENV)/.bwlab-browser-extra

$(BROWSER_STAMP): $(STAMP) pyproject.toml
	$(PY) -m pip install -q -e ".[browser]"
	touch $@

browser-deps: $(BROWSER_STAMP)
	@if [ ! -x "$(CHROMIUM)" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium fonts-liberation fonts-dejavu-core; \
	  else \
	    echo "browser-deps: no Chromium at $(CHROMIUM). Install it as root (Debian: apt-get install -y chromium" \
	         "fonts-liberation fonts-dejavu-core) or name yours: make browser-test CHROMIUM=/path/to/chromium" >&2; \
	    exit 1; \
	  fi; \
	  test -x "$(CHROMIUM)" || { echo "browser-deps: still no Chromium at $(CHROMIUM) after apt-get;" \
	    "name yours: make browser-test CHROMIUM=/path/to/chromium" >&2; exit 1; }; \
	fi

browser-test: browser-deps
	$(PY) tests/browser/check_lab.py --chromium $(CHROMIUM) --out build/browser $(BROWSERFLAGS)

# The student editions as `make lab STUDENT=1` serves them: Run All runs every cell, unanswered checks show a
# short NotYet message, no nbgrader UI; a screenshot of every figure at ~1000 px of notebook width (1440-px
# window); screenshots and summary.txt in build/browser-student/.
browser-test-student: browser-deps
	BWLAB_BACKEND=model $(PY) tests/browser/check_lab.py --student --width 1440 --budget 1800 --chromium $(CHROMIUM) --out build/browser-student $(BROWSERFLAGS)

clean:
	rm -rf $(VENV) .pytest_cache
