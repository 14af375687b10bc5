# hri_teleop – everything a fresh machine needs, in two commands:
#   make run    set up .venv, build the C++ core, run the simulated teleoperation scenario
#   make test   set up .venv, build the C++ core, run every test (Python and C++)
# Needs: CPython 3.10-3.13, a C++17 compiler (g++), and PyPI access for the first run.

PYTHON ?= python3
# One venv per interpreter: `make test PYTHON=python3.12` builds and tests in .venv-3.12, the
# default python3 in .venv, so versions never clobber each other.
VENV ?= $(if $(filter python3,$(PYTHON)),.venv,.venv-$(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])'))
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
HRI := $(VENV)/bin/hri
PKGS := $(sort $(wildcard src/*/setup.py))
RUN_ARGS ?=
BENCHES := $(sort $(filter-out bench/soak/run.py bench/suite/run.py,$(wildcard bench/*/run.py))) bench/transport/codec.py bench/teleop/bench_latency.py bench/console/stop_latency.py

.PHONY: all run test venv core colcon ros2-test ros2-ci ros2-lock bench soak lock clean help asan

all: help

help:
	@echo "make run      simulated teleoperation scenario (no ROS, no hardware)"
	@echo "make test     all tests"
	@echo "make test-pythons  build + smoke tests on CPython $(PYTHON_VERSIONS) (each in .venv-3.X)"
	@echo "make colcon   colcon build + colcon test of the workspace (as CI does)"
	@echo "make ros2-test  end-to-end tests on a real ROS 2 (rclpy); source ROS 2 + install/setup.bash first"
	@echo "make ros2-ci  tests/ros2 on a real ROS 2 Jazzy from PyPI wheels (own venv .venv-ros2; as CI does)"
	@echo "make bench    all benchmarks (slow; figures go to docs/benchmarks.md by hand)"
	@echo "make soak     each robot's launch file for 30 min with its operator looping (memory, deadlines, drops)"
	@echo "make lock     recompile requirements*.lock from requirements*.in (newest allowed versions), then make test"
	@echo "make params   regenerate the typed parameter classes from the parameters.yaml files"
	@echo "make asan     the C++ core and the runtime's extension under AddressSanitizer + UBSan: their tests and fuzzers"

# Third-party dependencies, exactly as locked (versions and hashes); redone when a lock changes.
# The lock holds every transitive dependency, so nothing is resolved at install time (--no-deps;
# `pip check` then proves the set consistent, except for the model assets, whose own
# dependencies are deliberately absent) -- which also spares the venv's own pip (23.0 on
# CPython 3.10) its hash-mode bug with extras such as mujoco's etils[epath].
# requirements.in / requirements-assets.in hold the ranges; `make lock` recompiles the locks.
# The model assets (requirements-assets.lock) install without their dependencies: the FR3 MJCF +
# meshes ship in franky-sim, the UR5e / iiwa14 MJCFs in robosuite's wheel; we read their files.
ASSET_PKGS := $(subst $() ,|,$(strip $(shell sed -n 's/^\([A-Za-z0-9_.-]*\).*/\1/p' requirements-assets.in)))
$(VENV)/.deps: requirements.lock requirements-assets.lock
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --require-hashes --no-deps -r requirements.lock
	$(PIP) install -q --require-hashes --no-deps -r requirements-assets.lock
	@$(PIP) check | grep -v -i -E '^($(ASSET_PKGS)) ' | grep . && { echo "pip check: the lock is inconsistent (make lock)"; exit 1; } || true
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

# The suite runs on every core (pytest-xdist): each test file on one worker, so a module's fixtures
# (routers, sims) are set up once; PYTEST_JOBS=0 runs it in this one process. One worker more than
# the cores is 26 % faster on 2 cores, but starves the launched-stack tests' nodes into their
# safety latches (docs/benchmarks.md "Test suite"), so the default stays at the cores.
PYTEST_JOBS ?= auto
test: venv
	$(PY) -m pytest -n $(PYTEST_JOBS) --dist loadfile

# The other CPython versions ROS 2 users run (Humble: 3.10, Jazzy: 3.12; 3.13 the newest): each
# gets the full build in its own venv (.venv-3.X) and runs SMOKE, the tests of the compiled
# extensions, the runtime (Zenoh wire incl. Humble's TypeHashNotSupported keys), the config tree
# and the cores. `make test PYTHON=<interpreter>` runs the full suite on one. The interpreter:
# python3.X on PATH, else pyenv's newest 3.X.
PYTHON_VERSIONS ?= 3.10 3.12 3.13
SMOKE ?= cpp/test src/hri_runtime/test tests/runtime/test_runtime_zenoh.py tests/config \
	src/hri_interaction/test src/hri_safety/test src/hri_pulse/test tests/workspace/test_workspace_skips.py
.PHONY: test-pythons $(addprefix test-python-,$(PYTHON_VERSIONS))

test-pythons: $(addprefix test-python-,$(PYTHON_VERSIONS))

$(addprefix test-python-,$(PYTHON_VERSIONS)): test-python-%:
	@py="$$(python$* -c 'import sys; print(sys.executable)' 2>/dev/null || \
	  ls -d "$$(pyenv root 2>/dev/null)"/versions/$*.*/bin/python 2>/dev/null | sort -V | tail -1)"; \
	test -n "$$py" || { echo "test-python-$*: no CPython $* (python$* on PATH or pyenv's $*.x)"; exit 1; }; \
	echo "== CPython $* ($$py): build + smoke tests"; \
	$(MAKE) --no-print-directory venv PYTHON="$$py" VENV=.venv-$* && .venv-$*/bin/python -m pytest -n $(PYTEST_JOBS) --dist loadfile $(SMOKE)

# hri_interfaces is ament_cmake + rosidl: it builds only where ROS 2 is sourced (ament_cmake on
# AMENT_PREFIX_PATH). Without ROS it is skipped; the no-ROS runtime reads its .msg/.srv files from
# src/hri_interfaces (or an installed share/hri_interfaces). docs/ros2-interop.md "Building".
AMENT_CMAKE := $(firstword $(wildcard $(addsuffix /share/ament_cmake/package.xml,$(subst :, ,$(AMENT_PREFIX_PATH)))))
# hri_controllers (ros2_control controller + MuJoCo system, docs/hardware.md) builds only where
# ros2_control is installed (controller_interface and hardware_interface on AMENT_PREFIX_PATH).
ROS2_CONTROL := $(firstword $(wildcard $(addsuffix /share/controller_interface/package.xml,$(subst :, ,$(AMENT_PREFIX_PATH)))))
COLCON_SKIP := $(if $(AMENT_CMAKE),,--packages-ignore hri_interfaces hri_controllers) \
  $(if $(AMENT_CMAKE),$(if $(ROS2_CONTROL),,--packages-ignore hri_controllers))

colcon: venv
	rm -rf build/colcon install log
	@echo "colcon: $(if $(AMENT_CMAKE),ament_cmake found ($(AMENT_CMAKE)): building hri_interfaces,no ament_cmake (ROS 2 not sourced): skipping hri_interfaces)"
	@echo "colcon: $(if $(ROS2_CONTROL),ros2_control found ($(ROS2_CONTROL)): building hri_controllers,no ros2_control (controller_interface not on AMENT_PREFIX_PATH): skipping hri_controllers)"
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
# (and libstdc++, or ASan cannot intercept the C++ throws of the extensions); ASan reports go to
# build/asan/report.<pid> (pytest would swallow them with the aborted process's output), UBSan's to
# stderr (GCC's combined runtime ignores log_path for them: pytest runs with --capture=sys and its
# stderr is kept in build/asan/pytest.stderr); both are counted and any one fails the run, as does
# any failed test. The tests run on every core as `make test` does (xdist workers inherit the
# preload, the options and the stderr that is scanned). Leak checking is off (CPython keeps its interned objects and arenas to the end).
# cpp/test/test_sanitizer_live.py proves the sanitizers are live (instrumented extensions loaded,
# a deliberately faulty canary reported). The extensions are rebuilt (every unit) when a source changes.
ASAN := build/asan
SANITIZE ?= address,undefined
# The simulators' tests drive the MuJoCo bindings (MujocoRobot, mj_step) from Python.
ASAN_TESTS ?= cpp/test src/hri_runtime/test/test_runtime_cdr_cpp.py src/hri_runtime/test/test_runtime_cdr_args_fuzz.py \
  src/hri_runtime/test/test_runtime_wire.py src/hri_runtime/test/test_runtime_delivery.py \
  src/hri_sim/test/test_sim_arm.py src/hri_sim/test/test_sim_tino.py
ASAN_ENV = HRI_SANITIZE=$(SANITIZE) HRI_ASAN_LIB=$(CURDIR)/$(ASAN)/lib PYTHONPATH=$(CURDIR)/cpp/tools/asan \
  LD_PRELOAD=$$($(CXX) -print-file-name=libasan.so):$$($(CXX) -print-file-name=libstdc++.so) PYTHONMALLOC=malloc \
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:check_initialization_order=1:log_path=$(CURDIR)/$(ASAN)/report \
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:log_path=$(CURDIR)/$(ASAN)/report
ASAN_SRC := $(wildcard cpp/setup.py cpp/src/*.cpp cpp/src/*.hpp cpp/include/hri_core/*.hpp \
  src/hri_runtime/setup.py src/hri_runtime/src/*.cpp src/hri_runtime/src/*.hpp)

$(ASAN)/.ext: $(VENV)/.pkgs $(ASAN_SRC)
	cd cpp && HRI_SANITIZE=$(SANITIZE) $(CURDIR)/$(PY) setup.py -q build_ext --force -b $(CURDIR)/$(ASAN)/lib -t $(CURDIR)/$(ASAN)/tmp/core
	cd src/hri_runtime && HRI_SANITIZE=$(SANITIZE) $(CURDIR)/$(PY) setup.py -q build_ext --force -b $(CURDIR)/$(ASAN)/lib -t $(CURDIR)/$(ASAN)/tmp/runtime
	@touch $@

asan: $(ASAN)/.ext
	$(ASAN_ENV) $(PY) -c "import hri_core._hri_core as c, hri_runtime._cdr as r; \
	  assert all('/$(ASAN)/lib/' in m.__file__ for m in (c, r)), (c.__file__, r.__file__); print('asan builds:', c.__file__, r.__file__)"
	@rm -f $(ASAN)/report.* $(ASAN)/pytest.stderr
	@$(ASAN_ENV) $(PY) -m pytest -n $(PYTEST_JOBS) --dist loadfile --capture=sys --durations=15 $(ASAN_TESTS) 2>$(ASAN)/pytest.stderr; rc=$$?; \
	  cat $(ASAN)/pytest.stderr >&2; cat $(ASAN)/report.* 2>/dev/null; \
	  n=$$(cat $(ASAN)/report.* $(ASAN)/pytest.stderr 2>/dev/null | grep -c -e 'ERROR: AddressSanitizer' -e ': runtime error: '); \
	  echo "asan: $$n sanitizer reports, pytest exit status $$rc"; test $$rc = 0 && test $$n = 0

# A real ROS 2 Jazzy for CI, without root or a source build: the ros-jazzy-* wheels of PyPI
# (cp311, pinned with hashes in requirements-ros2.lock, the workspace's own dependencies included)
# in their own venv; their CMake exports fixed to this venv's headers (tools/ros2_wheels_fixup.py);
# src/hri_interfaces built with rosidl against the venv as prefix and installed into it; the
# workspace packages installed into it; then tests/ros2 on rclpy + rmw_fastrtps_cpp with the
# nodes started by `hri launch` (ros2 launch is not a wheel: its tests are deselected, the rest
# must not skip: HRI_REQUIRE_ROS2=1 turns a skip into a failure). docs/ros2-interop.md.
ROS2_PYTHON ?= python3.11
ROS2_VENV := .venv-ros2
ROS2_PY := $(ROS2_VENV)/bin/python
ROS2_PREFIX = $(CURDIR)/$(ROS2_VENV)
ROS2_ENV = AMENT_PREFIX_PATH=$(ROS2_PREFIX) RMW_IMPLEMENTATION=rmw_fastrtps_cpp \
  ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST HRI_TRANSPORT=rclpy HRI_REQUIRE_ROS2=1
ROS2_SRC := $(shell find src cpp -path '*/test' -prune -o -type f \( -name '*.py' -o -name '*.cpp' \
  -o -name '*.hpp' -o -name '*.yaml' -o -name 'package.xml' -o -name 'setup.cfg' \) -print 2>/dev/null)
ROS2_IFACES := $(wildcard src/hri_interfaces/CMakeLists.txt src/hri_interfaces/package.xml \
  src/hri_interfaces/msg/*.msg src/hri_interfaces/srv/*.srv)
ROS2_PYTEST_ARGS ?=

$(ROS2_VENV)/.deps: requirements-ros2.lock requirements-assets.lock tools/ros2_wheels_fixup.py
	@test -x $(ROS2_PY) || $(ROS2_PYTHON) -m venv $(ROS2_VENV)
	$(ROS2_PY) -m pip install -q --require-hashes -r requirements-ros2.lock
	# MJCF assets only (as in .deps above), never imported
	$(ROS2_PY) -m pip install -q --require-hashes --no-deps -r requirements-assets.lock
	$(ROS2_PY) tools/ros2_wheels_fixup.py $(ROS2_VENV)
	@touch $@

$(ROS2_VENV)/.interfaces: $(ROS2_VENV)/.deps $(ROS2_IFACES)
	rm -rf build/ros2/hri_interfaces
	@mkdir -p build/ros2
	@echo "rosidl: building src/hri_interfaces against $(ROS2_VENV) (log: build/ros2/hri_interfaces.log)"
	@( $(ROS2_ENV) PATH=$(ROS2_PREFIX)/bin:$$PATH cmake -S src/hri_interfaces -B build/ros2/hri_interfaces \
	    -DCMAKE_PREFIX_PATH=$(ROS2_PREFIX) -DCMAKE_INSTALL_PREFIX=$(ROS2_PREFIX) \
	    -DPython3_EXECUTABLE=$(ROS2_PREFIX)/bin/python -DBUILD_TESTING=OFF \
	  && cmake --build build/ros2/hri_interfaces -j2 && cmake --install build/ros2/hri_interfaces ) \
	  > build/ros2/hri_interfaces.log 2>&1 || { tail -40 build/ros2/hri_interfaces.log; exit 1; }
	@touch $@

# Installed (not editable): the C++ extensions are built for this venv, apart from .venv's; each
# package's setuptools build directory goes under build/ros2/pkgs (DIST_EXTRA_CONFIG), not into src/.
$(ROS2_VENV)/.pkgs: $(ROS2_VENV)/.deps $(ROS2_SRC)
	@for p in $(dir $(PKGS)) cpp/; do b=$(CURDIR)/build/ros2/pkgs/$$(basename $$p); mkdir -p $$b; \
	  printf '[build]\nbuild_base = %s\n' $$b > $$b.cfg; echo "install $$p into $(ROS2_VENV)"; \
	  DIST_EXTRA_CONFIG=$$b.cfg $(ROS2_PY) -m pip install -q --no-deps --no-build-isolation ./$$p || exit 1; done
	@touch $@

ros2-ci: $(ROS2_VENV)/.interfaces $(ROS2_VENV)/.pkgs
	$(ROS2_ENV) $(ROS2_PY) -m pytest tests/ros2 -rs -p no:cacheprovider -m "not ros2_launch and not ros2_control" $(ROS2_PYTEST_ARGS)

# Refresh requirements-ros2.lock from requirements-ros2.in (the locked uv of .venv), then test.
ros2-lock: $(VENV)/.deps
	$(VENV)/bin/uv pip compile -q --generate-hashes --custom-compile-command "make ros2-lock" --python-version 3.11 \
	  --python-platform x86_64-manylinux_2_28 requirements-ros2.in -o requirements-ros2.lock
	$(MAKE) ros2-ci

bench: venv
	@for b in $(BENCHES); do echo "== $$b"; $(PY) $$b || exit 1; done

# The typed parameter classes (src/<pkg>/<pkg>/parameters_gen.py, cpp/hri_core/parameters_gen.py)
# regenerated from the packages' parameters.yaml; committed, a test compares.
.PHONY: params
params: venv
	$(HRI) config params

# A deliberate refresh of the locks: the newest versions the ranges allow, for every CPython from
# 3.10 up (one universal lock, a marker per version where they differ), then the full test run.
UV_COMPILE = $(VENV)/bin/uv pip compile -q --generate-hashes --custom-compile-command "make lock"
lock: $(VENV)/.deps
	$(UV_COMPILE) --universal --python-version 3.10 --upgrade requirements.in -o requirements.lock
	$(UV_COMPILE) --no-deps --upgrade requirements-assets.in -o requirements-assets.lock
	$(MAKE) test

# The soak benchmark (hours): every robot's launch file, SOAK_ARGS passed on (e.g. --minutes 5).
SOAK_ARGS ?=
soak: venv
	@for r in fr3 ur5e iiwa14 tino; do $(PY) bench/soak/run.py --robot $$r $(SOAK_ARGS) || exit 1; done

clean:
	rm -rf $(VENV) $(ROS2_VENV) build install log
