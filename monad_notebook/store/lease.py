"""The turn lease: one kernel at a time writes a session's turns, whichever process or host it runs on.

A kernel appends a claim, and holds the session if no other claim was live just before its
own committed (commit order, see ``Claims.claim_session``); otherwise it withdraws. The holder
renews its claim on a daemon thread while it holds it, so a kernel that dies mid-turn frees
the session when its claim expires, or at once for kernels on the same host (its pid is gone).
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace

from monad_notebook.daemon import Daemon
from monad_notebook.errors import SessionBusyError, StoreError
from monad_notebook.foreground import FOREGROUND
from monad_notebook.store.base import Claim, Claims

log = logging.getLogger(__name__)

TTL_SECONDS = 60.0
WAIT_SECONDS = 2.0
_POLL_SECONDS = (0.05, 0.2)


def _dead_here(claim: Claim, host: str) -> bool:
    """A claim left by a process of this host that no longer runs: a killed kernel frees its session at once."""
    claimed_host, _, pid = claim.owner.rpartition(":")
    if claimed_host != host or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive, someone else's
        return False
    return False


def busy_message(session: str, holder: Claim) -> str:
    since = time.strftime("%H:%M:%S", time.localtime(holder.claimed_at))
    return (
        f"session {session!r} is busy in another kernel ({holder.owner}) since {since}; "
        "wait for its turn to finish, or use --session NAME"
    )


class TurnLease:
    """Re-entrant within one Session (its turn and its background compaction share it)."""

    def __init__(self, claims: Claims, session: str, *, ttl: float = TTL_SECONDS, wait: float = WAIT_SECONDS) -> None:
        self.claims = claims
        self.session = session
        self.ttl = ttl
        self.wait = wait
        self.host = socket.gethostname()
        self.owner = f"{self.host}:{os.getpid()}"
        self.holder = uuid.uuid4().hex
        self.claim: Claim | None = None
        self._depth = 0
        self._lock = threading.Lock()
        self._renewing = threading.Lock()  # a renewal never lands after the release that withdrew its claim
        self._renewer: Daemon | None = None

    @property
    def held(self) -> bool:
        return self.claim is not None

    def acquire(self, wait: float | None = None) -> None:
        """Hold the session, waiting up to ``wait`` seconds for another kernel; else SessionBusyError.

        While it waits (its polls included), this thread's hold on the foreground gate is set
        aside: it is another kernel's turn, and background work may have the cores meanwhile.
        """
        deadline = time.monotonic() + (self.wait if wait is None else wait)
        blocker = self._claim(look_first=False)
        if blocker is None:
            return
        with FOREGROUND.aside():
            while time.monotonic() < deadline:
                time.sleep(random.uniform(*_POLL_SECONDS))
                blocker = self._claim(look_first=True)
                if blocker is None:
                    return
        raise SessionBusyError(busy_message(self.session, blocker))

    def _claim(self, *, look_first: bool) -> Claim | None:
        """Hold the session now if no other kernel does (again, if this one does); else the claim in the way."""
        with self._lock:
            if self.claim is not None:
                self._depth += 1
                return None
            blocker = self._try(look_first=look_first)
            if blocker is None:
                self._depth = 1
                self._start_renewing()
            return blocker

    def _try(self, *, look_first: bool) -> Claim | None:
        """Claim once; the claim in the way, or None when this kernel now holds the session.

        While waiting, look before claiming, so a busy session costs reads, not writes.
        """
        if look_first:
            others = self._others(self.claims.live_claims(self.session))
            if others:
                return others[0]
        now = time.time()
        claim = Claim(self.session, uuid.uuid4().hex, self.owner, self.holder, now, now + self.ttl)
        try:
            earlier = self._others(self.claims.claim_session(claim))
        except StoreError:
            self._withdraw(claim)
            raise
        if earlier:
            self._withdraw(claim)
            return earlier[0]
        self.claim = claim
        return None

    def _others(self, claims: list[Claim]) -> list[Claim]:
        """Claims of other kernels that may still be running; a dead local kernel's claim is withdrawn."""
        others = []
        for claim in claims:
            if claim.holder == self.holder:
                continue
            if _dead_here(claim, self.host):
                self._withdraw(claim)
            else:
                others.append(claim)
        return others

    def _withdraw(self, claim: Claim) -> None:
        try:
            self.claims.release_claim(claim)
        except StoreError as exc:
            log.warning("could not withdraw a claim on session %r (it expires by itself): %s", self.session, exc)

    def release(self) -> None:
        with self._lock:
            self._depth -= 1
            if self._depth > 0 or self.claim is None:
                return
            claim, self.claim = self.claim, None
            if self._renewer is not None:
                self._renewer.stop()
        with self._renewing:
            self._withdraw(claim)

    @contextlib.contextmanager
    def hold(self, wait: float | None = None) -> Iterator[None]:
        self.acquire(wait)
        try:
            yield
        finally:
            self.release()

    def _start_renewing(self) -> None:
        stop = threading.Event()
        self._renewer = Daemon("monad-lease", self._renew, stop, self.claim, stop=stop.set).start()

    def _renew(self, stop: threading.Event, claim: Claim | None) -> None:
        while claim is not None and not stop.wait(self.ttl / 4):
            with self._renewing:
                if stop.is_set():
                    return
                try:
                    self.claims.renew_claim(replace(claim, expires_at=time.time() + self.ttl))
                except StoreError as exc:
                    log.warning("could not renew the claim on session %r: %s", self.session, exc)
