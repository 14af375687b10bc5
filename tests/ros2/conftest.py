"""tests/ros2: the backend-independent end-to-end tests on a real ROS 2 (rclpy backend).

They run when rclpy is importable (a sourced ROS 2, plus the workspace's install/setup.bash for
hri_interfaces; or `make ros2-ci`: the ROS 2 Jazzy wheels of PyPI in .venv-ros2) and are skipped
otherwise, with the reason on every skipped test (`make ros2-test` shows it: pytest -rs), so
`make test` stays free of ROS. Nothing here fakes rclpy.

HRI_REQUIRE_ROS2=1 (set by `make ros2-ci`, i.e. in CI): a test here that would be skipped for
any reason fails instead, with that reason. Tests of `ros2 launch` (not a wheel) carry the marker
``ros2_launch`` and are deselected there, not skipped.
"""
from __future__ import annotations

import importlib
import os

import pytest

ROS2_SKIP_REASON = ""
try:
    importlib.import_module("rclpy")
except Exception as e:  # noqa: BLE001 - any import failure means: no usable ROS 2 here
    ROS2_SKIP_REASON = (f"ROS 2 NOT TESTED: rclpy is not importable ({type(e).__name__}: {e}). "
                        "Source a ROS 2 install and the workspace's install/setup.bash, then `make ros2-test`.")
else:
    try:
        importlib.import_module("hri_interfaces.msg")
    except Exception as e:  # noqa: BLE001
        ROS2_SKIP_REASON = (f"ROS 2 NOT TESTED: rclpy found but hri_interfaces is not built ({e}): "
                            "colcon build the workspace with ROS 2 sourced and source install/setup.bash.")


REQUIRED = os.environ.get("HRI_REQUIRE_ROS2") == "1"


def pytest_collection_modifyitems(config, items):
    if not ROS2_SKIP_REASON:
        return
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.skip(reason=ROS2_SKIP_REASON))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if REQUIRED and rep.skipped and str(item.fspath).startswith(os.path.dirname(__file__)):
        reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        rep.outcome = "failed"
        rep.longrepr = f"HRI_REQUIRE_ROS2=1: a skip is a failure here: {reason}"
