# make gate  — install missing dependencies, build the program only, run the default gate
#              (its pairs on GATE_JOBS cores, default all; more options in GATE_ARGS)
# make test  — the whole build (every test binary too), then the test suite (ctest summary printed)
# make clang — build the tree with clang++-14 (preset "clang"; the libtorch module
#              with g++); CLANG_TARGETS=attncheck builds the program only,
#              CLANG_TARGETS=attncheck_with_modules the program and its modules
# make fuzz  — libFuzzer targets with ASan+UBSan (preset "fuzz"), seeds, then each
#              target for FUZZ_SECONDS (FUZZ_PRESET=fuzz-fast: no sanitizer)
JOBS    ?= $(shell nproc)
PRESET  ?= default
BUILD   ?= build
RC_CASES ?= 100
GATE_ARGS ?=
GATE_JOBS ?= $(JOBS)
FUZZ_PRESET ?= fuzz
FUZZ_SECONDS ?= 30
CLANG_TARGETS ?=

.PHONY: all deps configure build build-program gate test clang fuzz clean

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake --preset $(PRESET) -DATTNCHECK_RC_CASES=$(RC_CASES) >/dev/null

# Everything: the program, its modules, the examples and every test binary.
build: configure
	@cmake --build --preset $(PRESET) -j $(JOBS)

# What the gate runs: the program alone; no test binaries, no libtorch module (its
# adapters are not in the default gate; `make build` builds the module).
build-program: configure
	@cmake --build --preset $(PRESET) -j $(JOBS) --target attncheck

# The gate's law × adapter pairs run on every core, as the build did (GATE_JOBS).
gate: build-program
	./$(BUILD)/attncheck gate -j $(GATE_JOBS) --report-dir $(BUILD)/gate-report --json $(BUILD)/gate-summary.json $(GATE_ARGS)

# ctest's summary names skipped tests only; skipped-tests.py adds each one's reason.
test: build
	@status=0; ctest --test-dir $(BUILD) -j $(JOBS) --output-on-failure --timeout 900 || status=$$?; \
	  python3 scripts/skipped-tests.py $(BUILD); exit $$status

clang: deps
	@cmake --preset clang >/dev/null
	@cmake --build --preset clang -j $(JOBS) $(if $(CLANG_TARGETS),--target $(CLANG_TARGETS))

fuzz: deps
	@cmake --preset $(FUZZ_PRESET) >/dev/null
	@cmake --build --preset $(FUZZ_PRESET) -j $(JOBS)
	bash scripts/fuzz-smoke.sh build-$(FUZZ_PRESET) $(FUZZ_SECONDS)

clean:
	rm -rf build build-clang build-debug build-fuzz build-fuzz-fast
