# reprodiag: the two README commands are `make demo` and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
# the demo needs the package and its `cases` extra; the tests and lint need `dev` (Ray, pytest, ruff, notebooks)
DEMO_STAMP := $(VENV)/.installed-cases
STAMP := $(VENV)/.installed-dev
WORKSPACE ?= reprodiag-workspace
# test processes (pytest-xdist, one test file per worker at a time): the cores, at most 4
JOBS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); [ $$n -gt 4 ] && n=4; echo $$n)

.PHONY: demo test lint sysdeps bench clean gpu-test

$(DEMO_STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[cases]'
	@touch $(DEMO_STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP) $(DEMO_STAMP)

# Debian packages the demo and the tests need (bubblewrap for the sandbox; slirp4netns gives a setup step
# that asks for the network its own, without the host's loopback), installed when root and missing.
sysdeps:
	@if ! command -v bwrap >/dev/null 2>&1 || ! command -v slirp4netns >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq >/dev/null 2>&1 || true; \
	    for pkg in bubblewrap slirp4netns; do \
	      echo "installing $$pkg (if missing)"; \
	      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$pkg >/dev/null 2>&1 \
	        || echo "could not install $$pkg: replays and the tests that need it will be skipped"; \
	    done; \
	  else echo "bubblewrap or slirp4netns is missing and this is not root: install them (sudo apt-get install bubblewrap slirp4netns), else replays are skipped"; fi; \
	fi

demo: $(DEMO_STAMP) sysdeps
	$(VENV)/bin/reprodiag -w $(WORKSPACE) demo

test: $(STAMP) sysdeps
	$(PY) -m pytest -q -p no:cacheprovider -n $(JOBS) --dist loadfile

gpu-test: $(STAMP) sysdeps
	$(PY) -m pytest -q -m gpu

lint: $(STAMP)
	$(VENV)/bin/ruff check .

bench: $(STAMP)
	$(VENV)/bin/reprodiag bench extract
	$(VENV)/bin/reprodiag bench mine
	$(VENV)/bin/reprodiag bench score
	$(VENV)/bin/reprodiag bench extract --engine ray --threads 1200
	$(VENV)/bin/reprodiag bench pipeline --threads 50000
	$(VENV)/bin/reprodiag bench sandbox

clean:
	rm -rf $(WORKSPACE) reprodiag-datasets reprodiag-eval .pytest_cache
