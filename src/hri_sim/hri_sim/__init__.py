"""MuJoCo simulation of the arms and the social robot."""
