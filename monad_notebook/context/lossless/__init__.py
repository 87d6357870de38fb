"""The lossless stages: truncation with the full text spilled, and eviction of old results behind a handle."""
