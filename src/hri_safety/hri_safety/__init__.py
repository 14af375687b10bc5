"""hri_safety: the system-wide safe stop (docs/safety.md "System stop contract")."""
