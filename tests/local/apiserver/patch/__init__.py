"""Patches and field ownership: JSON, merge and strategic merge patches, server-side apply."""
