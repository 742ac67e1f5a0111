"""The query API: what every dashboard view reads (docs/api.md)."""
