"""Persistence: the Store protocol and its LanceDB implementation."""
