"""``HRI_INTERACTION_BACKEND=python|cxx`` runs every interaction test on that tick backend
(``InteractionParams.from_config`` is patched to set ``backend``); unset = the config's value.

    HRI_INTERACTION_BACKEND=cxx .venv/bin/python -m pytest tests/interaction -q
"""
import dataclasses
import os

import pytest

from hri_interaction.core import controller as _controller


@pytest.fixture(autouse=True)
def _interaction_backend(monkeypatch):
    backend = os.environ.get("HRI_INTERACTION_BACKEND")
    if not backend:
        yield None
        return
    assert backend in _controller.BACKENDS, backend
    orig = _controller.InteractionParams.from_config.__func__

    def from_config(cls, section, torque_max_nm=None):
        return dataclasses.replace(orig(cls, section, torque_max_nm), backend=backend)

    monkeypatch.setattr(_controller.InteractionParams, "from_config", classmethod(from_config))
    yield backend
