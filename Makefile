# Every target that needs Python creates .venv and installs what it needs when it is missing or stale,
# so on a fresh machine `make test` is the only command a person runs.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

# Python caches each module's bytecode (__pycache__/, in .venv and the checkout) unless PYTHONDONTWRITEBYTECODE is
# set, as some shells and containers do: the tests, the demo and the benchmarks start hundreds of Python processes
# (clusters, controllers, pod containers), and each would compile the project's modules (and MXNet's) anew.
export PYTHONDONTWRITEBYTECODE :=

.PHONY: venv monitoring-tools test-caches test test-unit test-fast lint bench bench-full chaos demo image wheel crd protobuf clean

# pip is only raised when older than 23 (no index query when it is new enough); --no-compile leaves byte-compiling
# to the first import, so only what runs is compiled (SciPy and scikit-learn hold thousands of modules the tests never load).
# On a terminal pip shows its own progress (what it collects, downloads and installs); elsewhere (CI, logs) it is quiet.
$(STAMP): setup.cfg pyproject.toml
	@echo "Installing mxjob-controller (editable) with its dependencies and its test, lint and mxnet extras (MXNet"
	@echo "1.9.1, NumPy, scikit-learn, pytest, ruff...) into $(VENV): once, usually 1-2 minutes on a 2-core machine."
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --no-compile 'pip>=23'
	$(BIN)/python -m pip install $$(test -t 1 || echo --quiet) --no-compile -e '.[test,lint,mxnet]'
	@# The real MXNet example's pods run as nobody and cannot write caches into .venv: import what they import
	@# once here, so that each of them does not compile MXNet, NumPy and SciPy anew (5.3 -> 2.8 CPU s a worker).
	$(BIN)/python -c 'import mxnet.gluon, sklearn.datasets'
	touch $(STAMP)

## venv: create .venv with the package (editable), its test and lint tools, and MXNet for the real example
venv: $(STAMP)

## monitoring-tools: Prometheus and promtool for tests/deploy/test_monitoring.py (Debian's prometheus package), if missing
monitoring-tools:
	@hack/install-prometheus.sh

## test-caches: what some tests install beside the project (the wheel's dependencies, the Kubeflow SDK's venv, the
## JavaScript client; tests/cached_builds.py), built into .mxjob-local/ where missing; the standard library only.
## A failed build does not stop make test: the test that needs it tries again and says what failed.
test-caches:
	-$(PYTHON) -m tests.cached_builds

## test: lint, then the whole test suite (what CI runs) on PYTEST_WORKERS pytest-xdist workers (0: one process),
## with the 25 slowest tests listed; the last line says how long pytest took (pytest's own summary, "N passed in ...",
## stays its last pytest line). pytest's cache is on: after a run, PYTEST_ARGS=--lf re-runs what failed.
PYTEST_WORKERS ?= 4
test:
	@$(MAKE) --no-print-directory -j3 $(STAMP) monitoring-tools test-caches   # the installs side by side
	@$(MAKE) --no-print-directory lint
	@start=$$(date +%s); \
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadgroup --durations=25 $(PYTEST_ARGS); status=$$?; \
	elapsed=$$(( $$(date +%s) - start )); \
	echo "make test: pytest exited $$status after $$((elapsed / 60)) min $$((elapsed % 60)) s"; exit $$status

## test-unit: the inner loop: every test that needs no server and starts no process (marked unit at collection,
## checked as it runs: tests/conftest.py), under a minute on 2 cores
test-unit: $(STAMP)
	$(BIN)/python -m pytest -q -m unit -n 2 $(PYTEST_ARGS)

## test-fast: everything but the slow end-to-end tests (-m "not slow": no wheel, SDK, chaos or real MXNet jobs)
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow" -n $(PYTEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

## lint: ruff over the package, tests and scripts; the import contracts (pyproject.toml's [tool.importlinter]: the
## layers, the frameworks' independence, the operator without the embedded cluster, no import circle)
lint: $(STAMP)
	$(BIN)/ruff check mxjob_controller tests hack
	$(BIN)/lint-imports --no-cache

## bench: the benchmarks (hack/bench/: throughput, large job, idle, idle CPU, latency, memory, ingest, micro, scale,
## scheduler backlog, start-up), each against its floor, in about 8 minutes on 2 cores (scale: 3); BENCH_ARGS picks some, e.g.
## BENCH_ARGS='throughput large_job'
bench: $(STAMP)
	$(BIN)/python -m hack.bench $(BENCH_ARGS)

## bench-full: the same at the full sizes (300 jobs, 10,000 pods, 30 s of latency, both client budgets, 10,000 + 1,000 jobs)
bench-full: $(STAMP)
	$(BIN)/python -m hack.bench --full $(BENCH_ARGS)

## chaos: the long chaos run (100 MXJobs, faults, 3 controller SIGKILLs, a leader takeover, 2,000 malformed
## requests); CHAOS_ARGS adds flags, e.g. CHAOS_ARGS='--seed 7'
chaos: $(STAMP)
	$(BIN)/python hack/chaos.py $(CHAOS_ARGS)

## crd: regenerate the CRDs (MXJob, TFJob) from their API definitions
crd: $(STAMP)
	$(BIN)/python hack/gen_crd.py

## protobuf: regenerate the protobuf field tables from kubernetes/api and kubernetes/apimachinery's generated.proto
## (PROTO_ARGS: --api-git DIR --apimachinery-git DIR, git clones of those repositories)
protobuf: $(STAMP)
	$(BIN)/python hack/gen_protobuf.py $(PROTO_ARGS)

## wheel: build the wheel into dist/
wheel: $(STAMP)
	$(BIN)/python -m pip wheel --quiet --no-deps -w dist .

VERSION := $(shell sed -n 's/^__version__ = "\(.*\)"/\1/p' mxjob_controller/__init__.py)

## image: build the container image (needs a Docker engine), tagged latest and with the version the manifests use
image:
	docker build -t mxjob-controller:latest -t mxjob-controller:$(VERSION) .

## demo: run a real distributed MXNet job (1 scheduler, 1 server, 2 workers) on a local cluster, no cluster needed
demo: $(STAMP)
	@echo "make demo: 1 scheduler, 1 server and 2 workers train on scikit-learn's digits on a local cluster (usually"
	@echo "5-25 s; it ends with 'all 1 job(s) succeeded')."
	$(BIN)/mxjob-controller local run --logs --timeout 15m examples/mxnet-digits/mxjob.yaml

clean:
	rm -rf $(VENV) dist build *.egg-info .mxjob-local
