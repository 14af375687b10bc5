"""The Python test oracle of the C++ interaction tick (tests/interaction, bench/interaction)."""
