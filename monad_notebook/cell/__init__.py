"""What a ``%%monad`` cell shows: the live view, its HTML, where approvals are asked, the status text,
and background notices kept for the next cell."""
