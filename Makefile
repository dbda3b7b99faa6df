# Quick start: `make run` (demo) and `make test` (every test). Both set up first.
BUILD      ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=
# CI builds our own code with -Werror (third-party headers are -isystem).
ifeq ($(CI),true)
CMAKE_ARGS += -DRUNNEL_WERROR=ON
endif
# Targets to build (all when empty): `make run` needs only the runnel binary.
TARGETS    ?=
BENCH_BINS := $(basename $(notdir $(wildcard bench/*_bench.cc)))
BENCH_ARGS ?=
FUZZ_SECONDS ?= 600
FUZZ_TARGET  ?= both
CHAOS_ROUNDS ?= 5

.PHONY: setup configure build run test format check-format bench conformance chaos fuzz tsan asan clean

setup:
	@bash scripts/setup.sh

configure: setup
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS) $(if $(TARGETS),--target $(TARGETS))

run:
	@$(MAKE) --no-print-directory build BUILD=build-release BUILD_TYPE=Release TARGETS=runnel
	@bash scripts/demo.sh build-release

test: build check-format
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

format:
	@git ls-files '*.h' '*.cc' | xargs clang-format -i

check-format:
	@bash scripts/check_format.sh

# Every benchmark against TensorFlow 2.21 and PyTorch 2.15 (the environment
# build/venv/bench, made once from requirements/bench.txt: about 7 GB), then
# docs/performance.md from the results (bench/report.py).
bench:
	@$(MAKE) --no-print-directory build BUILD=build-release BUILD_TYPE=Release \
	  TARGETS="runnel $(BENCH_BINS)"
	@bash scripts/venv.sh bench >/dev/null
	@bash bench/run_all.sh build-release $(BENCH_ARGS)

# `runnel import` against every node test of ONNX 1.23 (the environment
# build/venv/onnx, made once from requirements/onnx.txt), then docs/onnx.md
# from the results (scripts/onnx_conformance.py).
conformance:
	@$(MAKE) --no-print-directory build TARGETS=runnel
	@"$$(bash scripts/venv.sh onnx)" scripts/onnx_conformance.py \
	  --runnel $(BUILD)/runnel --jobs $(JOBS) --suite all --markdown docs/onnx.md

# Replicated parameter servers under faults (tests/cluster/replica_test.py):
# CHAOS_ROUNDS rounds of kill -9 and SIGSTOP of primaries and backups during
# training, then the table: fault, times injected, runs finished, steps
# lost, worst recovery; the same under synchronous replicas, each run's
# model compared byte for byte with a run without faults; two faults at
# once (the stale replica must not serve: restored from the checkpoint);
# then CHAOS_ROUNDS rounds of every fault over network namespaces
# (tests/cluster/netns_test.py, root only: partitions, pauses, kills of
# replicas, a worker and the chief, latency, packet loss) and its table.
# (`make test` runs one round of each of the first two, the third, and
# four faults of the fourth.)
chaos:
	@$(MAKE) --no-print-directory build TARGETS=runnel
	@/usr/bin/python3 tests/cluster/replica_test.py $(BUILD)/runnel \
	  --rounds $(CHAOS_ROUNDS)
	@/usr/bin/python3 tests/cluster/replica_test.py $(BUILD)/runnel --sync \
	  --rounds $(CHAOS_ROUNDS)
	@/usr/bin/python3 tests/cluster/replica_test.py $(BUILD)/runnel --stale
	@/usr/bin/python3 tests/cluster/netns_test.py $(BUILD)/runnel --faults all \
	  --rounds $(CHAOS_ROUNDS)

# Fuzz the parser and `runnel check` (fuzz/README.md) for FUZZ_SECONDS,
# growing the corpus in $(BUILD)/fuzz/targets/corpus; crashes go to
# $(BUILD)/fuzz/targets/artifacts. FUZZ_TARGET: check_fuzzer, parse_fuzzer or both.
fuzz: build
	@bash fuzz/run_fuzz.sh --seconds $(FUZZ_SECONDS) --target $(FUZZ_TARGET) $(BUILD)/fuzz/targets

# The executor, session, determinism and control-flow tests under ThreadSanitizer.
tsan: setup
	@cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRUNNEL_TSAN=ON >/dev/null
	@cmake --build build-tsan -j $(JOBS) --target runtime_tests
	@TSAN_OPTIONS=halt_on_error=1 build-tsan/runtime_tests --gtest_filter='Executor*:Session*:Determinism*:ControlFlow*'

# Every test, the script tests included, under AddressSanitizer,
# UndefinedBehaviorSanitizer and LeakSanitizer (tests/lsan.supp lists the
# third-party libraries whose process-lifetime allocations are not ours).
# allocator_may_return_null: a refused allocation is Runnel's "out of
# memory" diagnostic, as without the sanitizer, not an abort.
asan:
	@$(MAKE) --no-print-directory build BUILD=build-asan BUILD_TYPE=RelWithDebInfo CMAKE_ARGS=-DRUNNEL_ASAN=ON
	@cd build-asan && ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 \
	  ctest --output-on-failure -j $(JOBS)

clean:
	@rm -rf build build-release build-tsan build-asan
