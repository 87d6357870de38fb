"""The context cascade: stages that keep a long session inside the model's window."""
