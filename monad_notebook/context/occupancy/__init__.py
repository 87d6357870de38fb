"""Occupancy: how many tokens a request will cost, calibrated to the provider's counts, and what it is billed."""
