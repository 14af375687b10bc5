"""Clutch-based relative 6-DoF arm teleop, keyboard teleop, multi-rate planner/controller, IK."""
