"""VR (Unity UDP) and gamepad input, 3-cycle command pulses, link-health monitor."""
