"""The agent: the turn loop, the model adapter and the tools."""
