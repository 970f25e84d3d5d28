# Two commands on a fresh machine: `make demo` and `make test`. Everything else is a helper.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv test test-fast lint typecheck imports unit demo crds bench bench-full chaos kubectl clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test,bench]"
	touch $(STAMP)

venv: $(STAMP)

# The real kubectl drives the end-to-end tests; install Debian's client where the machine has none.
kubectl:
	@command -v kubectl >/dev/null 2>&1 || { \
	  echo "kubectl missing: installing kubernetes-client"; \
	  (apt-get update -qq && apt-get install -y -qq kubernetes-client) >/dev/null; }

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples

typecheck: $(STAMP)
	$(BIN)/mypy
	$(BIN)/mypy benchmarks examples/demo.py

imports: $(STAMP)
	$(BIN)/lint-imports

unit: $(STAMP) kubectl
	$(BIN)/pytest -q

test: lint typecheck imports unit

# The edit-test loop: everything but the tests marked slow (end-to-end, kubectl, programs and demo, heavy
# properties), properties with fewer examples. `make test` still runs everything.
test-fast: $(STAMP)
	$(BIN)/pytest -q -m "not slow" --hypothesis-profile=fast

crds: $(STAMP)
	$(BIN)/python -m grove_api.crdgen crds

demo: $(STAMP) kubectl
	$(BIN)/python examples/demo.py $(ARGS)

bench: $(STAMP)
	$(BIN)/python -m benchmarks quick
	$(BIN)/python -m benchmarks e2e quick

bench-full: $(STAMP)
	$(BIN)/python -m benchmarks full
	$(BIN)/python -m benchmarks e2e full

# The chaos suite (not part of `make test`; a short seeded version is): faults, kills, freezes, an observer, fuzzing.
chaos: $(STAMP)
	$(BIN)/python -m benchmarks.chaos --seed 1 --budget 540 $(ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
