"""Four-state atomic leg/base controller of the social robot."""
