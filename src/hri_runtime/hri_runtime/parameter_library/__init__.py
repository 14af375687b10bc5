"""Typed parameters from ``parameters.yaml``, as generate_parameter_library: the runtime classes and the code generator."""
