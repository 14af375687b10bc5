"""The old import path of :mod:`hri_sim.nodes.tino_node`, still imported by
``hri_atomic_motion.e2e``; it goes when that import names ``hri_sim.nodes.tino_node``."""
from hri_sim.nodes.tino_node import TinoSimNode, main  # noqa: F401
