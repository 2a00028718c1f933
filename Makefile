# Makefile: the front door of treescore (CMake underneath): build, demo, test, bench, fuzz, clean.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all build demo test test-spark bench bench-quick fuzz install clean
PREFIX ?= /usr/local

all: build

# Release build (-O3, no -march=native): the CLI lands at build/treescore, the libraries
# at build/libtreescore.{a,so}. (--no-print-directory: cmake's inner make stays quiet.)
build:
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) --target treescore treescore_static treescore_shared -- --no-print-directory

# Rank the bundled example (LightGBM LambdaMART on the Yahoo LTR sample).
demo: build
	@./scripts/demo.sh $(BUILD)/treescore

# Install what the tests need, build with -Werror, run every test, print a pass/fail count.
test:
	@./scripts/run_tests.sh

# Optional: the Python package scoring a Spark DataFrame with mapInPandas in local mode
# (examples/spark_predict.py); installs pyspark into .venv, needs Java 17+ (Debian:
# openjdk-17-jre-headless).
test-spark:
	@command -v java >/dev/null || { echo "make test-spark: needs Java 17+ (apt-get install openjdk-17-jre-headless)"; exit 1; }
	@./scripts/setup_venv.sh
	@.venv/bin/python -m pip install --quiet --disable-pip-version-check pyspark==4.3.0
	@.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-build-isolation \
		--config-settings=build-dir=build/python .
	@.venv/bin/python examples/spark_predict.py

# treescore against LightGBM, XGBoost, TL2cgen, lleaves, ONNX Runtime, daal4py and YDF on
# the model zoo (bench/README.md): the whole zoo (hours of training), or its small models.
bench:
	@./scripts/bench.sh full

bench-quick:
	@./scripts/bench.sh quick

# Longer fuzzing session (seconds per target).
fuzz:
	@./scripts/run_fuzzers.sh 300

# The CLI, libtreescore.{a,so}, treescore.h and treescore.pc under PREFIX (default /usr/local).
install:
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) --target treescore treescore_static treescore_shared -- --no-print-directory
	@cmake --install $(BUILD)

clean:
	rm -rf build build-asan build-fuzz build-*
