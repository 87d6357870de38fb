"""Secret redaction: the engine every text passes before the store, the model or the panel sees it.

It sits below the cascade, memory and the tools, which all use it; it uses nothing of theirs.
"""
