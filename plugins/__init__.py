"""Integrations with other tools (the pytest plugin lives here)."""
