"""Recall: every message and output indexed in chunks, searched by words and meaning, and the related-context block."""
