"""Launch without ROS, as ``launch`` / ``launch_ros``: descriptions, the YAML frontend, substitutions and the launch service."""
