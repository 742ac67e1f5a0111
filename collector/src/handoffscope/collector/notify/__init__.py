"""Direct notifications: webhooks told when a verdict asks a person to act (docs/alerts.md).

`routing.py` reads where events go, `events.py` finds them in the derived tables,
`delivery.py` posts them (rate limit, retries, signature) and `notifier.py` ties the
three to the store, off the writer's path.
"""
