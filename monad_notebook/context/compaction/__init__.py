"""Compaction: durable summaries of the oldest messages, the ledger of identifiers they carry, and the handoff."""
