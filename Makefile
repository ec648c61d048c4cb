# strata's entry points. Quick start: `make demo`, `make test`. Every target runs the set-up first (idempotent).
BUILD      ?= build
JOBS       ?= $(shell nproc)
CMAKE_GEN  := -G Ninja
STRATA     := $(BUILD)/bin/strata
FUZZ_SECONDS ?= 20

.PHONY: setup setup-browser build demo test test-browser asan sanitize-ci fuzz fuzz-ci fuzz-run bench bench-report clean

setup:
	@bash scripts/setup

# The headless Chromium the report's browser tests need (they skip without it).
setup-browser:
	@bash scripts/setup --browser

$(BUILD)/build.ninja: CMakeLists.txt | setup
	cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Release

build: setup $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# The main job on a built-in example. It builds only the `strata` CLI: in $(BUILD) when a full build is configured
# there, else in its own folder $(DEMO_BUILD) without the executor, tests, benchmarks and Python module, after
# installing only the packages that needs (scripts/setup --cli); `make build`/`make test` build the rest.
# The demo folder is a unity build (CMake joins 8 sources per translation unit): the heavy headers and their
# template instances are compiled once per batch, which halves the compiler's work (886 -> 448 CPU-s for the CLI,
# measured 2026-11-27); sources keep their helpers distinct across a module for it (docs/ARCHITECTURE.md).
DEMO_BUILD ?= build-demo
DEMO_CMAKE := -DCMAKE_BUILD_TYPE=Release -DSTRATA_WITH_EXEC=OFF -DSTRATA_TESTS=OFF -DSTRATA_BENCH=OFF \
  -DSTRATA_PYTHON=OFF -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=8
demo:
	@set -e; if [ -f $(BUILD)/build.ninja ]; then dir=$(BUILD); else \
	  bash scripts/setup --cli; dir=$(DEMO_BUILD); \
	  [ -f $$dir/build.ninja ] || cmake -S . -B $$dir $(CMAKE_GEN) $(DEMO_CMAKE); fi; \
	cmake --build $$dir -j $(JOBS) --target strata_cli; \
	$$dir/bin/strata plan --model gpt3-175b --cluster dgx-a100:16+dgx-h100:16 --gbs 1536

# Installs the headless Chromium too, so the report's browser tests run (they fail under CI=true without it).
test: setup-browser build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) --timeout 600

# The report tests with the browser installed (tests/report: DOM checks and a screenshot in headless Chromium).
test-browser: setup-browser build
	ctest --test-dir $(BUILD) --output-on-failure -L report --timeout 600

# AddressSanitizer + UndefinedBehaviorSanitizer build of the library and tests (executor tests included).
asan: setup
	cmake -S . -B build-asan $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Release -DSTRATA_SANITIZE=ON -DSTRATA_BENCH=OFF
	cmake --build build-asan -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=0 ctest --test-dir build-asan --output-on-failure -j $(JOBS) --timeout 900

# The CI sanitizer pass (.ci/run): ONE clang build with AddressSanitizer + UndefinedBehaviorSanitizer (UB is fatal)
# and libFuzzer instrumentation serves both the unit tests and the fuzz targets, so the library is compiled under
# sanitizers once, not twice. To fit CI's 30 minutes it builds the library, the `strata` binary, the fuzz targets
# and the tests of the modules that parse input (core, hw, model, cost; cli, which drives every parser through the
# sanitized binary with the bad-input corpus) — `make asan` runs every module's tests under sanitizers. Left out
# here, run in `make test`: PlanTrialsCli (needs the executor), the no-executor-libraries check (this build links
# COIN-OR's shared libraries) and FitFixedPoint (eight grid fits over the public rows: 6.6 s optimised, minutes at
# -O0 under the sanitizers, and no parser in it).
SANITIZE_TARGETS := strata_cli test_core test_hw test_model test_cost test_cli \
  $(patsubst fuzz/%.cpp,%,$(wildcard fuzz/fuzz_*.cpp))
SANITIZE_CI_EXCLUDE := ^PlanTrialsCli\.|^Startup\.StrataNeedsNoExecutorLibraries|^FitFixedPoint\.
# -O0 with line tables only (ASan reports keep file:line): clang compiles a CLI source under the sanitizers in
# 13.0 s this way against 21.6 s at -O1 and more at RelWithDebInfo's -O2 -g (src/cli/cmd_plan.cpp, measured
# 2026-11-26); the parsing modules' tests then take 67-80 s instead of 31 s, and the whole of sanitize-ci
# 480 s instead of 819 s.
FUZZ_CMAKE := -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O0 -gline-tables-only -DNDEBUG" -DSTRATA_TEST_OPT_FLAGS= \
  -DSTRATA_FUZZ=ON -DSTRATA_WITH_EXEC=OFF -DSTRATA_BENCH=OFF -DSTRATA_STATIC_COIN=OFF -DSTRATA_PYTHON=OFF
sanitize-ci: setup
	cmake -S . -B build-fuzz $(FUZZ_CMAKE) -DSTRATA_TESTS=ON
	cmake --build build-fuzz -j $(JOBS) --target $(SANITIZE_TARGETS)
	ASAN_OPTIONS=detect_leaks=0 ctest --test-dir build-fuzz --output-on-failure -j $(JOBS) --timeout 900 \
	  -L '^(core|hw|model|cost|cli)$$' -E '$(SANITIZE_CI_EXCLUDE)'
	$(MAKE) fuzz-run FUZZ_SECONDS=15

# The CI form of `fuzz`: every target for 20 s.
fuzz-ci:
	$(MAKE) fuzz FUZZ_SECONDS=20

# libFuzzer targets for every parser, each run for FUZZ_SECONDS.
fuzz: setup
	cmake -S . -B build-fuzz $(FUZZ_CMAKE) -DSTRATA_TESTS=OFF
	cmake --build build-fuzz -j $(JOBS)
	$(MAKE) fuzz-run

# Runs every built fuzz target for FUZZ_SECONDS over its seed corpus (the build: `fuzz` or `sanitize-ci`).
fuzz-run:
	@set -e; for f in build-fuzz/fuzz/fuzz_*; do \
	  [ -f $$f ] && [ -x $$f ] || continue; \
	  name=$$(basename $$f); mkdir -p build-fuzz/corpus/$$name; \
	  echo "fuzz: $$name for $(FUZZ_SECONDS) s"; \
	  if ! $$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=0 build-fuzz/corpus/$$name fuzz/corpus/$$name \
	       > build-fuzz/$$name.log 2>&1; then tail -n 30 build-fuzz/$$name.log; exit 1; fi; \
	  tail -n 1 build-fuzz/$$name.log; \
	done

bench: build
	@set -e; for b in $(BUILD)/bench/*; do echo "== $$b"; $$b; done

# Size and headless-Chromium render time of the report of a 1024-GPU plan (docs/report.md).
bench-report: setup-browser build
	bash bench/bench_report.sh $(STRATA)

clean:
	rm -rf $(BUILD) $(DEMO_BUILD) build-asan build-fuzz
