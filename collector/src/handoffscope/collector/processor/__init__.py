"""Processors between receiver and store: `allowlist` (the only one, by design)."""
