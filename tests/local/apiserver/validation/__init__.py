"""Validation: field paths, unknown fields, transition rules, and its cost."""
