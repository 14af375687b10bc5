"""Typed parameters of the atomic controller: the ``atomic`` section as the package's
``parameters.yaml`` declares it (types and bounds per key; across keys: the push fractions sum to
1, the encoder range is ordered, the settle band lies inside the tolerance band)."""
from __future__ import annotations

from hri_runtime.parameter_library.typed import params_type

AtomicParams = params_type("atomic")
LegParams = params_type("atomic.leg")
BaseParams = params_type("atomic.base")
SerialParams = params_type("atomic.serial")
