# hri_teleop – everything a fresh machine needs, in two commands:
#   make run    set up .venv, build the C++ core, run the simulated teleoperation scenario
#   make test   set up .venv, build the C++ core, run every test (Python and C++)
# Needs: Python 3.11+, a C++17 compiler (g++), and PyPI access for the first run.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
HRI := $(VENV)/bin/hri
PKGS := $(sort $(wildcard src/*/setup.py))
RUN_ARGS ?=
BENCHES := $(sort $(wildcard bench/*/run.py)) bench/transport/codec.py bench/teleop/bench_latency.py bench/console/stop_latency.py

.PHONY: all run test venv core colcon ros2-test bench clean help asan

all: help

help:
	@echo "make run      simulated teleoperation scenario (no ROS, no hardware)"
	@echo "make test     all tests"
	@echo "make colcon   colcon build + colcon test of the workspace (as CI does)"
	@echo "make ros2-test  end-to-end tests on a real ROS 2 (rclpy); source ROS 2 + install/setup.bash first"
	@echo "make bench    all benchmarks (slow; figures go to docs/benchmarks.md by hand)"
	@echo "make asan     the C++ core and the runtime's extension under AddressSanitizer + UBSan: their tests and fuzzers"

# Third-party dependencies; redone when requirements.txt changes.
$(VENV)/.deps: requirements.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -r requirements.txt
	# The FR3 MJCF + meshes ship in franky-sim; we read its assets, never import it.
	$(PIP) install -q --no-deps franky-sim
	# UR5e / iiwa14 MJCFs ship in robosuite's wheel; assets only, never imported.
	$(PIP) install -q --no-deps robosuite
	@touch $@

# The workspace packages (editable) and the C++ core; redone when a package's metadata or
# any C++ source changes. No build isolation: hri_runtime builds its C++ CDR codec
# (src/hri_runtime/src/cdr_codec.cpp) with the venv's pybind11.
$(VENV)/.pkgs: $(VENV)/.deps $(PKGS) $(wildcard cpp/setup.py cpp/src/*.cpp cpp/src/*.hpp cpp/include/hri_core/*.hpp src/*/src/*.cpp src/*/src/*.hpp)
	$(PIP) install -q --no-deps --no-build-isolation $(foreach p,$(PKGS),-e $(dir $(p)))
	@if [ -f cpp/setup.py ]; then $(PIP) install -q --no-deps --no-build-isolation -e cpp; fi
	@touch $@

venv: $(VENV)/.pkgs

run: venv
	$(HRI) config check
	# The main scenario: a scripted VR operator over real UDP drives the simulated FR3 through
	# the clutch teleop and the 1 kHz interaction loop (a 20 cm square in 3 strokes, a person
	# pushing the arm, a jittery reference link), then the social robot's atomic movements.
	$(HRI) teleop-demo $(RUN_ARGS)
	$(HRI) atomic demo

test: venv
	$(PY) -m pytest

# hri_interfaces is ament_cmake + rosidl: it builds only where ROS 2 is sourced (ament_cmake on
# AMENT_PREFIX_PATH). Without ROS it is skipped; the no-ROS runtime reads its .msg/.srv files from
# src/hri_interfaces (or an installed share/hri_interfaces). docs/ros2-interop.md "Building".
AMENT_CMAKE := $(firstword $(wildcard $(addsuffix /share/ament_cmake/package.xml,$(subst :, ,$(AMENT_PREFIX_PATH)))))
COLCON_SKIP := $(if $(AMENT_CMAKE),,--packages-ignore hri_interfaces)

colcon: venv
	rm -rf build/colcon install log
	@echo "colcon: $(if $(AMENT_CMAKE),ament_cmake found ($(AMENT_CMAKE)): building hri_interfaces,no ament_cmake (ROS 2 not sourced): skipping hri_interfaces)"
	. $(VENV)/bin/activate && colcon --log-base log build --build-base build/colcon --install-base install \
	  --base-paths src cpp --event-handlers console_cohesion- summary+ $(COLCON_SKIP)
	. $(VENV)/bin/activate && colcon --log-base log test --build-base build/colcon --install-base install \
	  --base-paths src cpp --event-handlers console_cohesion- summary+ $(COLCON_SKIP) --pytest-args -q -p no:cacheprovider
	. $(VENV)/bin/activate && colcon test-result --test-result-base build/colcon --verbose

# The end-to-end tests on a real ROS 2 (tests/ros2/, rclpy backend). Needs a sourced ROS 2 and
# the workspace built with it (colcon build, then `. install/setup.bash`); without rclpy every test
# is skipped and the reason is printed (-rs).
ros2-test: venv
	$(PY) -m pytest tests/ros2 -rs -p no:cacheprovider

# Memory safety (docs/CONVENTIONS.md "C++ bindings"): hri_core._hri_core and hri_runtime._cdr built with
# -fsanitize=address,undefined (asserts on) into build/asan/lib -- the .venv and its in-place builds
# are untouched -- and imported instead of those by cpp/tools/asan/sitecustomize.py; the C++ unit
# tests built the same way (cpp/test/conftest.py). The uninstrumented python needs libasan preloaded
# (and libstdc++, or ASan cannot intercept the C++ throws of the extensions); reports go to
# build/asan/report.<pid> (pytest would swallow them with the aborted process's output) and fail the run;
# leak checking is off (CPython keeps its interned objects and arenas to the end); any ASan or UBSan
# report aborts the run.
ASAN := build/asan
SANITIZE ?= address,undefined
ASAN_TESTS ?= cpp/test src/hri_runtime/test/test_runtime_cdr_cpp.py src/hri_runtime/test/test_runtime_wire.py \
  src/hri_runtime/test/test_runtime_delivery.py
ASAN_ENV = HRI_SANITIZE=$(SANITIZE) HRI_ASAN_LIB=$(CURDIR)/$(ASAN)/lib PYTHONPATH=$(CURDIR)/cpp/tools/asan \
  LD_PRELOAD=$$($(CXX) -print-file-name=libasan.so):$$($(CXX) -print-file-name=libstdc++.so) PYTHONMALLOC=malloc \
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:check_initialization_order=1:log_path=$(CURDIR)/$(ASAN)/report \
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:log_path=$(CURDIR)/$(ASAN)/report

asan: venv
	cd cpp && HRI_SANITIZE=$(SANITIZE) $(CURDIR)/$(PY) setup.py -q build_ext -b $(CURDIR)/$(ASAN)/lib -t $(CURDIR)/$(ASAN)/tmp/core
	cd src/hri_runtime && HRI_SANITIZE=$(SANITIZE) $(CURDIR)/$(PY) setup.py -q build_ext -b $(CURDIR)/$(ASAN)/lib -t $(CURDIR)/$(ASAN)/tmp/runtime
	$(ASAN_ENV) $(PY) -c "import hri_core._hri_core as c, hri_runtime._cdr as r; \
	  assert all('/$(ASAN)/lib/' in m.__file__ for m in (c, r)), (c.__file__, r.__file__); print('asan builds:', c.__file__, r.__file__)"
	rm -f $(ASAN)/report.*
	$(ASAN_ENV) $(PY) -m pytest $(ASAN_TESTS) || { cat $(ASAN)/report.* 2>/dev/null; exit 1; }
	@if ls $(ASAN)/report.* >/dev/null 2>&1; then cat $(ASAN)/report.*; echo "sanitizer reports above"; exit 1; fi
	@echo "asan: 0 sanitizer reports"

bench: venv
	$(PIP) install -q -r requirements-bench.txt
	@for b in $(BENCHES); do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) build install log
