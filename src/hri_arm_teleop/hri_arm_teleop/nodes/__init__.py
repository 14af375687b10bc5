"""Thin nodes wiring the core to topics, services and timers through hri_runtime."""
