"""The workspace record: what the kernel holds and the files it wrote, taken from the live kernel."""
