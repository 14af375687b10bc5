"""Thin nodes wiring the core to topics, services and timers through hri_runtime."""

# The node executables (console scripts): Ctrl-C is caught before the node module and its
# heavy imports load, so a stop during start-up is clean (hri_runtime.signals).
from hri_runtime.signals import node_main

vr_interface_node = node_main("hri_pulse.nodes.vr_interface_node")
gamepad_node = node_main("hri_pulse.nodes.gamepad_node")
joy_evdev = node_main("hri_pulse.nodes.joy_evdev_node")
