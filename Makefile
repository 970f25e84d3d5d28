# Two commands on a fresh machine: `make demo` and `make test`. Everything else is a helper.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv test test-fast lint typecheck imports unit demo crds bench bench-full chaos kubectl clean image release

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
	$(BIN)/mypy benchmarks examples/demo.py examples/democluster.py

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
	$(BIN)/python -m grove_api.crdgen deploy/crds

# The package's version (pyproject.toml), which images and release manifests carry.
VERSION = $(shell $(BIN)/python -c 'from importlib.metadata import version; print(version("grove"))')
CONTAINER_ENGINE ?= docker
IMAGE ?= grove:$(VERSION)
KUSTOMIZE ?= kubectl kustomize
DIST ?= dist

# The one image of grove-operator, grove-scheduler and grove-initc (not built in CI here: no container engine).
image: $(STAMP)
	$(CONTAINER_ENGINE) build -t $(IMAGE) .

# dist/grove-{crds,scheduler,operator}.yaml, rendered from deploy/ at the package's version; together they are
# deploy/overlays/production. `kubectl apply -f dist/grove-crds.yaml -f dist/grove-operator.yaml -f ...` installs.
release: $(STAMP) kubectl
	@grep -q 'newTag: "$(VERSION)"' deploy/components/release/kustomization.yaml || \
	  { echo "deploy/components/release: the image tag is not $(VERSION), pyproject's version"; exit 1; }
	mkdir -p $(DIST)
	{ echo "# Grove $(VERSION): CustomResourceDefinitions (make release, from deploy/release/crds)"; \
	  $(KUSTOMIZE) deploy/release/crds; } > $(DIST)/grove-crds.yaml
	{ echo "# Grove $(VERSION): grove-scheduler (make release, from deploy/overlays/scheduler-only)"; \
	  $(KUSTOMIZE) deploy/overlays/scheduler-only; } > $(DIST)/grove-scheduler.yaml
	{ echo "# Grove $(VERSION): grove-operator (make release, from deploy/release/operator)"; \
	  $(KUSTOMIZE) deploy/release/operator; } > $(DIST)/grove-operator.yaml
	@ls -l $(DIST)/grove-crds.yaml $(DIST)/grove-scheduler.yaml $(DIST)/grove-operator.yaml

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
	$(BIN)/python -m benchmarks.chaos --seed 1 --gangs 10000 --budget 2700 $(ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
