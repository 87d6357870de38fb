"""The kernel's long-lived objects, kept out of Python's full garbage collections.

Python's cyclic collector scans every object it tracks in a full collection, holding the
interpreter meanwhile. A kernel with this extension, LanceDB, onnxruntime, IPython and pandas
loaded tracks hundreds of thousands of objects, so a full collection holds the interpreter for
a noticeable pause: a turn it lands in stops that long, and so does a search on another thread.
Nearly all of those objects live as long as the kernel (modules, classes, functions, schemas).

After the first ``%%monad`` cell, when the heavy libraries are loaded, :func:`settle_heap`
collects once and then freezes what survives (``gc.freeze``), so later full collections scan
only what was created since. Freezing changes nothing else: reference counting still frees a
frozen object the moment nothing refers to it; only a reference cycle among them that becomes
garbage later stays in memory, as it would in a process that never collects.
"""

from __future__ import annotations

import gc

_settled = False


def settle_heap() -> None:
    """Once per process: collect, then freeze what survives. Called on the kernel's own thread."""
    global _settled
    if _settled:
        return
    gc.collect()
    gc.freeze()
    _settled = True  # only now: a cell interrupted before this settles at the next one
