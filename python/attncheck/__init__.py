"""attncheck: the Python kit (placeholder while it is written)."""
