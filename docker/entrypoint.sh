#!/usr/bin/env bash
# Source ROS 2 and the workspace, then run the given command (default: the FR3 launch).
set -e
source /opt/ros/jazzy/setup.bash
source /ws/install/setup.bash
exec "$@"
