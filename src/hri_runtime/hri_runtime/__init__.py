"""Node runtime (rclpy / Zenoh / in-process), config tree, launcher, recorder and the hri CLI."""
