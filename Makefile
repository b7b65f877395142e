# make gate  — install missing dependencies, build, run the default gate
# make test  — the same build, then the whole test suite (ctest summary printed)
# make clang — build the tree with clang++-14 (preset "clang")
JOBS    ?= $(shell nproc)
PRESET  ?= default
BUILD   ?= build
RC_CASES ?= 100
GATE_ARGS ?=

.PHONY: all deps build gate test clang clean

all: build

deps:
	@bash scripts/install-deps.sh

build: deps
	@cmake --preset $(PRESET) -DATTNCHECK_RC_CASES=$(RC_CASES) >/dev/null
	@cmake --build --preset $(PRESET) -j $(JOBS)

gate: build
	./$(BUILD)/attncheck gate --report-dir $(BUILD)/gate-report --json $(BUILD)/gate-summary.json $(GATE_ARGS)

test: build
	ctest --test-dir $(BUILD) -j $(JOBS) --output-on-failure --timeout 900

clang: deps
	@cmake --preset clang >/dev/null
	@cmake --build --preset clang -j $(JOBS)

clean:
	rm -rf build build-clang build-debug
