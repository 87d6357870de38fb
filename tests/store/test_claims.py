"""The turn lease: one kernel at a time per session, decided by commit order, freed when a kernel dies."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import lancedb
import pytest

from monad_notebook.errors import SessionBusyError
from monad_notebook.store.base import Claim
from monad_notebook.store.lance import LanceStore
from monad_notebook.store.lease import TurnLease
from monad_notebook.store.rows import SCHEMAS


@pytest.fixture
def kernels(tmp_path: Path):
    """The turn claims of two handles on one database, as two kernels have."""
    stores = [LanceStore(tmp_path / "db"), LanceStore(tmp_path / "db")]
    yield [store.claims for store in stores]
    for store in stores:
        store.close()


def claim(session: str, id: str, claimed_at: float, ttl: float = 60.0) -> Claim:
    return Claim(session, id, f"host-{id}:1", f"holder-{id}", claimed_at, claimed_at + ttl)


def test_the_first_claim_to_commit_holds_the_session_whatever_the_clocks_say(kernels):
    first, second = kernels
    now = time.time()
    assert first.claim_session(claim("shared", "a", now + 30)) == []  # a fast clock commits first
    ahead = second.claim_session(claim("shared", "b", now - 30))  # a slow clock commits second
    assert [c.id for c in ahead] == ["a"]


def test_claims_on_other_sessions_expired_claims_and_released_claims_hold_nothing(kernels):
    first, second = kernels
    now = time.time()
    first.claim_session(claim("other", "x", now))
    first.claim_session(claim("shared", "old", now - 120, ttl=60))
    released = claim("shared", "done", now)
    first.claim_session(released)
    first.release_claim(released)
    assert second.claim_session(claim("shared", "b", now)) == []
    assert [c.id for c in second.live_claims("shared")] == ["b"]


def test_a_renewed_claim_stays_live_past_its_first_expiry(kernels):
    first, second = kernels
    now = time.time()
    short = claim("shared", "a", now - 50, ttl=55)
    first.claim_session(short)
    first.renew_claim(Claim(**{**short.__dict__, "expires_at": now + 60}))
    time.sleep(0.01)
    assert [(c.id, c.expires_at) for c in second.live_claims("shared")] == [("a", now + 60)]


def test_a_second_kernel_is_refused_in_one_line_naming_who_holds_the_session_and_since_when(kernels):
    holder, other = TurnLease(kernels[0], "shared"), TurnLease(kernels[1], "shared")
    holder.acquire()
    with pytest.raises(SessionBusyError) as refused:
        other.acquire(wait=0.3)
    message = str(refused.value)
    assert re.fullmatch(
        r"session 'shared' is busy in another kernel \(\S+:\d+\) since \d\d:\d\d:\d\d; "
        r"wait for its turn to finish, or use --session NAME",
        message,
    ), message
    assert holder.owner in message
    assert [c.holder for c in kernels[1].live_claims("shared")] == [holder.holder]  # the refused claim withdrew
    holder.release()
    other.acquire(wait=0)
    other.release()
    assert kernels[0].live_claims("shared") == []


def test_a_kernel_waiting_briefly_gets_the_session_as_soon_as_the_holder_releases_it(kernels):
    holder, waiter = TurnLease(kernels[0], "shared"), TurnLease(kernels[1], "shared")
    holder.acquire()
    threading.Timer(0.3, holder.release).start()
    started = time.monotonic()
    waiter.acquire(wait=5)
    assert time.monotonic() - started < 3
    waiter.release()


def test_a_crashed_kernels_claim_expires_and_frees_the_session(kernels):
    crashed = TurnLease(kernels[0], "shared", ttl=0.8)
    crashed.acquire()
    crashed._renewer.stop()  # its process died: no more renewals, no release
    other = TurnLease(kernels[1], "shared")
    with pytest.raises(SessionBusyError):
        other.acquire(wait=0)
    other.acquire(wait=3)
    assert [c.holder for c in kernels[1].live_claims("shared")] == [other.holder]
    other.release()


def test_a_kernel_killed_mid_turn_on_this_host_frees_the_session_at_once(kernels, tmp_path: Path):
    killed = (
        "import os, sys; from monad_notebook.store.lance import LanceStore; "
        "from monad_notebook.store.lease import TurnLease; "
        "TurnLease(LanceStore(sys.argv[1]).claims, 'shared').acquire(); os._exit(0)"
    )
    subprocess.run([sys.executable, "-c", killed, str(tmp_path / "db")], check=True, timeout=120)
    assert len(kernels[0].live_claims("shared")) == 1  # its claim outlived it
    lease = TurnLease(kernels[0], "shared")
    lease.acquire(wait=0)
    assert [c.holder for c in kernels[1].live_claims("shared")] == [lease.holder]
    lease.release()


def test_a_running_turn_keeps_its_claim_alive_past_the_ttl_and_a_release_ends_it_for_good(kernels):
    holder = TurnLease(kernels[0], "shared", ttl=1.5)  # renewed every ttl/4: room for a slow write on a busy machine
    holder.acquire()
    time.sleep(3.2)
    with pytest.raises(SessionBusyError):
        TurnLease(kernels[1], "shared").acquire(wait=0)
    holder.release()
    time.sleep(0.6)  # a renewal due now must not bring the claim back
    assert kernels[1].live_claims("shared") == []


def test_the_lease_is_reentrant_within_one_session(kernels):
    lease = TurnLease(kernels[0], "shared")
    lease.acquire()
    lease.acquire(wait=0)  # the background compaction of the same session
    lease.release()
    assert lease.held and len(kernels[1].live_claims("shared")) == 1
    lease.release()
    assert not lease.held and kernels[1].live_claims("shared") == []


def test_a_table_another_kernel_is_still_creating_opens_once_its_first_version_lands(tmp_path: Path):
    db = tmp_path / "db"
    (db / "claims.lance" / "_versions").mkdir(parents=True)  # listed already, not openable yet
    creator = threading.Timer(
        0.15, lambda: lancedb.connect(db).create_table("claims", schema=SCHEMAS["claims"], exist_ok=True)
    )
    creator.start()
    store = LanceStore(db)
    assert store.claims.claim_session(claim("shared", "a", time.time())) == []
    creator.join()
    store.close()
