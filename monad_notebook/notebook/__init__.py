"""The notebook the agent works in: the bridge to the JupyterLab / Notebook 7 extension, the document it
reads, the proposals it makes and their decisions, and the review in the cell's output elsewhere."""
