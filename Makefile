# s2r: one-command set-up. Every target installs what is missing and nothing more:
# the virtualenv is rebuilt only when requirements*.txt change (stamp file), the project is
# installed into it (editable) only when its packaging changes or it points elsewhere.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.s2r-installed
EDITABLE := $(VENV)/.s2r-editable
PORT   ?= 8501
# MuJoCo (Meta-World) renders off-screen with EGL unless you chose another backend.
MUJOCO_GL ?= egl
export MUJOCO_GL

.PHONY: setup egl-deps browser-deps run test test-fast lint docs docs-build bench clean-cache

$(STAMP): requirements.txt requirements-dev.txt requirements-ray.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install -r requirements.txt -r requirements-dev.txt -r requirements-ray.txt
	@touch $@

# The project itself, editable (this checkout's files, no copy): `s2r ...`, `python -m s2r`
# and `s2r app` then work from any folder once the venv is active (or as $(BIN)/s2r).
# Installed again when the packaging changes or the venv's install points at another
# checkout (the stamp holds the checkout's path: a venv shared by several clones follows the
# one that ran make last). No dependency is resolved here (requirements*.txt did that) and
# nothing is downloaded (the venv's own setuptools builds it).
setup: $(STAMP) egl-deps
	@if [ "$$(cat $(EDITABLE) 2>/dev/null)" != "$(CURDIR)" ] || [ pyproject.toml -nt $(EDITABLE) ] \
	    || [ setup.py -nt $(EDITABLE) ]; then \
	  echo "$(BIN)/python -m pip install --no-deps --no-build-isolation --editable ."; \
	  $(BIN)/python -m pip install --quiet --no-deps --no-build-isolation --editable . \
	    && echo "$(CURDIR)" > $(EDITABLE); \
	fi

# Debian's EGL libraries for Meta-World's off-screen renderer (Mesa's llvmpipe on a CPU),
# installed where missing, as the browser test's Chromium is.
egl-deps:
	@{ ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null; } | grep -q -e libEGL_mesa -e libEGL_nvidia \
	  || { echo "installing Debian's EGL libraries for Meta-World's renderer"; \
	       apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	         libegl1 libgl1-mesa-dri >/dev/null; }

# Debian's Chromium for the real-browser test (Playwright drives it; no browser download).
browser-deps:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the browser test"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# Start the dashboard on the built-in demo dataset.
run: setup
	$(BIN)/streamlit run app.py --server.port $(PORT)

# The whole test suite: unit, app (AppTest) and real-browser tests, then the documentation
# site built with --strict (a broken link fails).
test: setup browser-deps lint
	$(BIN)/python -m pytest
	$(MAKE) docs-build

# ruff with the project's configuration (pyproject.toml) and the architecture rules
# (tests/tools/import_graph.py: layers, no cycle, no private import, one settings module).
lint: setup
	$(BIN)/ruff check .
	$(BIN)/python -m tests.tools.import_graph

# The documentation site (docs/, mkdocs.yml) on http://localhost:8000, rebuilt on edits.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

# Build the site into a temporary folder with --strict (what `make test` checks).
docs-build: setup
	@site=$$(mktemp -d) && NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet \
	  --site-dir $$site && rm -rf $$site && echo "docs: mkdocs build --strict ok"

# Everything but the browser test (no Chromium needed).
test-fast: setup
	$(BIN)/python -m pytest -m "not browser"

bench: setup
	for f in bench/bench_*.py; do $(BIN)/python $$f || exit 1; done

clean-cache:
	$(BIN)/s2r cache clear
