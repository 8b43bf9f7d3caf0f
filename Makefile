# The README's two commands: `make run` (tune the bundled example, print what it achieved) and `make test`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-fast setup clean

$(STAMP): setup.py
	@command -v gcc >/dev/null 2>&1 || { echo "installing gcc"; (apt-get update -qq && apt-get install -y -qq gcc make) >/dev/null; }
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

run: $(STAMP)
	$(BIN)/python -m ansorc.demo

test: $(STAMP)
	$(BIN)/python -m pytest -q tests

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q tests -m "not slow"

clean:
	rm -rf $(VENV) build *.egg-info
