"""Tools the agent can call, one module per family."""
