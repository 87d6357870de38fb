"""What the magic prints passes the redactor: a line command's whole output, and every error line.

Errors quote what caused them (a config value, a server's reply, a path), and what is printed in
a cell is saved with the notebook. So the magic writes nothing it has not redacted: a ``%monad``
command's output is held until it ends and written redacted whole, and an error is one redacted line.
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Callable, Iterator

Redact = Callable[[str], str]


@contextlib.contextmanager
def screened(redact: Redact) -> Iterator[None]:
    """Hold what is printed to stdout and stderr meanwhile; write it redacted whole when the block ends."""
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            yield
    finally:
        for held, stream in ((out, sys.stdout), (err, sys.stderr)):
            text = held.getvalue()
            if text:
                stream.write(redact(text))
                stream.flush()


def say_error(message: str, redact: Redact, *, prefix: str = "monad: ") -> None:
    """One error line on stderr, redacted whole before anything else is done to it."""
    print(f"{prefix}{redact(message)}", file=sys.stderr)
