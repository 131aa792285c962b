"""Rendering of analyses: text tables and JSON. The model never imports this package."""
