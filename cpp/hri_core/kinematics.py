"""POE kinematics (work in progress)."""
