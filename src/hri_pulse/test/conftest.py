import pytest
from hri_runtime.config import load_robot_config


@pytest.fixture(scope="session")
def pulse_section():
    """The merged ``pulse`` section of the tino config (every number from the config tree)."""
    return load_robot_config("tino")["pulse"]


class FakeClock:
    """Injected clock (seconds)."""

    def __init__(self, t: float = 0.0):
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, dt: float) -> float:
        self.t += dt
        return self.t


@pytest.fixture
def clock():
    return FakeClock(100.0)
