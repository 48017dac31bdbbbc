"""Alerts: their life cycle, how one pass's findings change them, and where they are sent."""
