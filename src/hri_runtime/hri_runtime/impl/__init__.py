"""Internals of the node API (as rclpy.impl): wire format, CDR plans, the Zenoh and rclpy backends, the router."""
