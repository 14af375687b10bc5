"""Thin nodes wiring the core to topics, services and timers through hri_runtime."""

# The node executables (console scripts): Ctrl-C is caught before the node module and its
# heavy imports load, so a stop during start-up is clean (hri_runtime.signals).
from hri_runtime.signals import node_main

tino_sim = node_main("hri_sim.nodes.tino_node")
joint_robot_node = node_main("hri_sim.nodes.joint_robot_node")
robot_state = node_main("hri_sim.nodes.robot_state_node")
