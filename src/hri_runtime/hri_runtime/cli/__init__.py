"""The ``hri`` command line, as ros2cli: one module per verb group."""
