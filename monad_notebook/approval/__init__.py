"""Approvals: "run this code?" (and "call this tool?") asked where the user looks, and exactly what runs shown.

``gate.py`` the gate a tool asks (``ApprovalGate``: "allow for this session", decisions recorded
as ``tool.approval`` events, the input-prompt asker); ``code_view.py`` and ``code_html.py`` the code
as the question shows it, every hidden character marked; ``asking.py`` where a notebook asks (the
running cell, mirrored in an open panel, else the input prompt); ``in_cell.py`` the question in the
running cell; ``busy.py`` how an answer reaches a kernel whose cell is still running (a subshell).
"""
