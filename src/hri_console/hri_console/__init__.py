"""Browser operator console and live Foxglove bridge."""
