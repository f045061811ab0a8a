# Every target that needs Python creates .venv and installs what it needs when it is missing or stale,
# so on a fresh machine `make test` is the only command a person runs.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: venv test lint bench demo image wheel crd clean

$(STAMP): setup.cfg pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,lint,mxnet]'
	touch $(STAMP)

## venv: create .venv with the package (editable), its test and lint tools, and MXNet for the real example
venv: $(STAMP)

## test: lint, then the whole test suite (what CI runs)
test: lint
	$(BIN)/python -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)

## lint: ruff over the package, tests and scripts
lint: $(STAMP)
	$(BIN)/ruff check mxjob_controller tests hack

## bench: speed and memory benchmarks (ratios measured in one run)
bench: $(STAMP)
	$(BIN)/python hack/bench.py

## crd: regenerate the MXJob CRD from the API definition
crd: $(STAMP)
	$(BIN)/python hack/gen_crd.py

## wheel: build the wheel into dist/
wheel: $(STAMP)
	$(BIN)/python -m pip wheel --quiet --no-deps -w dist .

VERSION := $(shell sed -n 's/^__version__ = "\(.*\)"/\1/p' mxjob_controller/__init__.py)

## image: build the container image (needs a Docker engine), tagged latest and with the version the manifests use
image:
	docker build -t mxjob-controller:latest -t mxjob-controller:$(VERSION) .

## demo: run a real distributed MXNet job (1 scheduler, 1 server, 2 workers) on a local cluster, no cluster needed
demo: $(STAMP)
	$(BIN)/mxjob-controller local run --logs --timeout 900 examples/mxnet-digits/mxjob.yaml

clean:
	rm -rf $(VENV) dist build *.egg-info .mxjob-local
