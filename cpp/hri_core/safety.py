"""Safety checker (work in progress)."""
