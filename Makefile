# reprodiag: the two README commands are `make demo` and `make test` (CI also runs `make test-train`).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
# the demo needs the package and its `cases` extra; the tests and lint need `dev` (Ray, pytest, ruff, notebooks)
DEMO_STAMP := $(VENV)/.installed-cases
STAMP := $(VENV)/.installed-dev
# `make test-train` adds the `train` extra (torch CPU wheel, transformers, trl: about 700 MB) to the same venv
TRAIN_STAMP := $(VENV)/.installed-train
WORKSPACE ?= reprodiag-workspace
# test processes (pytest-xdist, one test file per worker at a time): the cores, at most 4
JOBS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); [ $$n -gt 4 ] && n=4; echo $$n)

.PHONY: demo test test-train lint sysdeps sysdeps-sandbox bench clean gpu-test

$(DEMO_STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[cases]'
	@touch $(DEMO_STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP) $(DEMO_STAMP)

$(TRAIN_STAMP): pyproject.toml $(STAMP)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[dev,train]'
	@touch $(TRAIN_STAMP)

# Debian packages, installed with apt-get when root and missing (name:package, the command looked for first):
# bubblewrap for the sandbox and slirp4netns (a setup step that asks for the network gets one of its own, without
# the host's loopback) are what the demo needs (`sysdeps-sandbox`); the tests also drive chromium headless for the
# review page (`sysdeps`: all three).
SANDBOX_PKGS := bwrap:bubblewrap slirp4netns:slirp4netns
TEST_PKGS := $(SANDBOX_PKGS) chromium:chromium
define install_missing
	@missing=""; for pair in $(1); do command -v $${pair%%:*} >/dev/null 2>&1 || missing="$$missing $${pair#*:}"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq >/dev/null 2>&1 || true; \
	    for pkg in $$missing; do \
	      echo "installing $$pkg (if missing)"; \
	      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$pkg >/dev/null 2>&1 \
	        || echo "could not install $$pkg: replays or the browser tests that need it will be skipped"; \
	    done; \
	  else echo "missing:$$missing and this is not root: install them (sudo apt-get install$$missing), else replays or the browser tests that need them are skipped"; fi; \
	fi
endef

sysdeps-sandbox:
	$(call install_missing,$(SANDBOX_PKGS))

sysdeps:
	$(call install_missing,$(TEST_PKGS))

demo: $(DEMO_STAMP) sysdeps-sandbox
	$(VENV)/bin/reprodiag -w $(WORKSPACE) demo

# the `train` tests (TRL on the demo build, `eval --model hf:`, notebooks/train_and_eval.ipynb) run in test-train
test: $(STAMP) sysdeps
	$(PY) -m pytest -q -p no:cacheprovider -n $(JOBS) --dist loadfile -m 'not gpu and not slow and not train'

test-train: $(TRAIN_STAMP)
	$(PY) -m pytest -q -p no:cacheprovider -n $(JOBS) --dist loadfile -m train

gpu-test: $(STAMP) sysdeps
	$(PY) -m pytest -q -m gpu

lint: $(STAMP)
	$(VENV)/bin/ruff check .

bench: $(STAMP)
	$(VENV)/bin/reprodiag bench extract
	$(VENV)/bin/reprodiag bench mine
	$(VENV)/bin/reprodiag bench resume
	$(VENV)/bin/reprodiag bench score
	$(VENV)/bin/reprodiag bench extract --engine ray --threads 1200
	$(VENV)/bin/reprodiag bench pipeline --threads 50000
	$(VENV)/bin/reprodiag bench sandbox

clean:
	rm -rf $(WORKSPACE) reprodiag-datasets reprodiag-eval .pytest_cache
