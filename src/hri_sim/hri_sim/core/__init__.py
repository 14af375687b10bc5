"""Pure logic: no middleware imports, injected clock."""
