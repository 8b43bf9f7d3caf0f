# The README's two commands: `make run` (tune the bundled example, print what it achieved) and `make test`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
MAX_LINES ?= 450

.PHONY: run test test-fast lint setup clean gcc

# ansorc compiles every kernel it generates with gcc (OpenMP included). On a fresh Debian/Ubuntu machine without
# it, set-up installs it with apt-get (as root, or through sudo); anywhere else it stops and says what to run.
gcc:
	@if ! command -v gcc >/dev/null 2>&1; then \
	  if ! command -v apt-get >/dev/null 2>&1; then \
	    echo "gcc not found, and no apt-get here: install gcc with OpenMP (e.g. 'sudo dnf install gcc gcc-c++' or 'brew install gcc'), then rerun make" >&2; exit 1; \
	  fi; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO="sudo"; \
	  if [ -n "$$SUDO" ] && ! command -v sudo >/dev/null 2>&1; then \
	    echo "gcc not found: run 'apt-get update && apt-get install -y gcc' as root, then rerun make" >&2; exit 1; \
	  fi; \
	  echo "gcc not found: installing it with '$$SUDO apt-get install -y gcc' (ansorc compiles every kernel with gcc)"; \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq gcc; \
	fi

$(STAMP): setup.py
	@$(MAKE) --no-print-directory gcc
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

run: $(STAMP)
	$(BIN)/python -m ansorc.demo

# The tests run in parallel processes (pytest-xdist; tests/conftest.py caps how many), a test file to a process:
# a file's tests keep their order and share its fixtures. XDIST=0 runs them in this process, one by one.
XDIST ?= auto
PYTEST := $(BIN)/python -m pytest -q $(if $(filter 0,$(XDIST)),,-n $(XDIST) --dist loadfile)

test: $(STAMP)
	$(PYTEST) --durations=30 tests

test-fast: $(STAMP)
	$(PYTEST) tests -m "not slow"

# ruff (pinned in setup.py's dev extra, rules in ruff.toml) and no tracked .py file over MAX_LINES lines
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python tools/check_lengths.py --max $(MAX_LINES)

clean:
	rm -rf $(VENV) build *.egg-info
