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

.PHONY: all run test venv core colcon bench clean help

all: help

help:
	@echo "make run      simulated teleoperation scenario (no ROS, no hardware)"
	@echo "make test     all tests"
	@echo "make colcon   colcon build + colcon test of the workspace (as CI does)"
	@echo "make bench    all benchmarks (slow; figures go to docs/benchmarks.md by hand)"

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
# any C++ source changes.
$(VENV)/.pkgs: $(VENV)/.deps $(PKGS) $(wildcard cpp/setup.py cpp/src/*.cpp cpp/src/*.hpp cpp/include/hri_core/*.hpp)
	$(PIP) install -q --no-deps $(foreach p,$(PKGS),-e $(dir $(p)))
	@if [ -f cpp/setup.py ]; then $(PIP) install -q --no-deps --no-build-isolation -e cpp; fi
	@touch $@

venv: $(VENV)/.pkgs

run: venv
	$(HRI) config check
	# The main scenario: a scripted VR operator over real UDP drives the simulated FR3 through
	# the clutch teleop (a 20 cm square in 3 strokes), then the social robot's atomic movements.
	$(HRI) teleop-demo $(RUN_ARGS)
	$(HRI) atomic demo

test: venv
	$(PY) -m pytest

colcon: venv
	rm -rf build/colcon install log
	. $(VENV)/bin/activate && colcon --log-base log build --build-base build/colcon --install-base install \
	  --base-paths src cpp --event-handlers console_cohesion- summary+
	. $(VENV)/bin/activate && colcon --log-base log test --build-base build/colcon --install-base install \
	  --base-paths src cpp --event-handlers console_cohesion- summary+ --pytest-args -q -p no:cacheprovider
	. $(VENV)/bin/activate && colcon test-result --test-result-base build/colcon --verbose

bench: venv
	$(PIP) install -q -r requirements-bench.txt
	@for b in $(BENCHES); do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) build install log
