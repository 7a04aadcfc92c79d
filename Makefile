# `make run` starts the whole system on this machine; `make test` runs every test.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# Test processes, each with its own nats-server and Redis: most tests wait on the bus
# more than they compute, so two share two cores well.
TEST_WORKERS ?= 2

.PHONY: run test lint bench clean wheels lock

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "tether needs Python 3.11+")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,embedded]'
	@touch $@

run: $(STAMP)
	$(BIN)/tether up

# The console's test drives Debian's Chromium (Playwright's own browsers are not used).
CHROMIUM := /usr/bin/chromium

$(CHROMIUM):
	apt-get update -q && apt-get install -y -q chromium

# The interop tests' clients: the official NATS C client (Debian's libnats-dev) and its
# JavaScript client (npm, pinned by package-lock.json).
LIBNATS     := /usr/include/nats/nats.h
NODE_CLIENT := tests/interop/js/node_modules/.package-lock.json

$(LIBNATS):
	apt-get update -q && apt-get install -y -q libnats-dev pkg-config

$(NODE_CLIENT): tests/interop/js/package-lock.json
	@command -v npm >/dev/null || (apt-get update -q && apt-get install -y -q nodejs npm)
	cd tests/interop/js && npm ci --no-audit --no-fund --loglevel=error

test: $(STAMP) $(CHROMIUM) $(LIBNATS) $(NODE_CLIENT)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/pytest -n $(TEST_WORKERS) --dist worksteal

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: $(STAMP)
	$(BIN)/pip install --quiet -e '.[dev,embedded,bench]'
	@command -v wrk >/dev/null || (apt-get update -q && apt-get install -y -q wrk)
	$(BIN)/python -m bench.gateway
	$(BIN)/python -m bench.poa_decisions
	$(BIN)/python -m bench.poa_bus
	$(BIN)/python -m bench.poa_lineage
	$(BIN)/python -m bench.rooms
	$(BIN)/python -m bench.ladder
	$(BIN)/python -m bench.mod
	$(BIN)/python -m bench.mod_split
	$(BIN)/python -m bench.chonk
	$(BIN)/python -m bench.exact_reads
	$(BIN)/python -m bench.keyed
	$(BIN)/python -m bench.org_agent

# The image's dependencies, fetched once with their hashes checked; `docker build` then
# installs them with no index.
wheels: $(STAMP)
	$(BIN)/pip download --quiet --require-hashes -r requirements.lock -d wheels

# requirements.lock again, after a change to pyproject.toml's dependencies.
lock: $(STAMP)
	$(BIN)/pip install --quiet pip-tools
	$(BIN)/pip-compile --quiet --generate-hashes --strip-extras --allow-unsafe \
	  --no-emit-index-url --no-emit-find-links -o requirements.lock pyproject.toml

clean:
	rm -rf $(VENV) .tether .pytest_cache .ruff_cache
