"""Compaction: when and how old messages fold into a durable summary, the identifier ledger it carries, the handoff."""
