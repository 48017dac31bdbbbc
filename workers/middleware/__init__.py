"""Dramatiq middleware of our own, one concern per module."""
