import pytest
from hri_runtime.clock import SimClock
from hri_runtime.config.tree import load_robot_config


@pytest.fixture(scope="session")
def pulse_section():
    """The merged ``pulse`` section of the tino config (every number from the config tree)."""
    return load_robot_config("tino")["pulse"]


@pytest.fixture
def clock():
    """The injected clock of the cores: the runtime's simulated clock, at 100 s."""
    return SimClock(100.0)
