"""The one YAML base-override configuration tree."""
