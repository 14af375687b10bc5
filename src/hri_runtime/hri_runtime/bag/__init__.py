"""Recording and replay of ROS 2 MCAP bags, as rosbag2."""
