"""Every event passes the redactor once, before a listener, the store or the panel sees it."""

from __future__ import annotations

from monad_notebook.events import ERROR, MEMORY_SAVED, TOOL_STARTED, Event, EventBus, EventLog, Excerpt
from monad_notebook.memory import MemoryService
from monad_notebook.redaction.redactor import Redactor
from monad_notebook.testing import MemoryStore
from tests.context.secret_corpus import ALNUM, rand

GITHUB = "ghp_" + rand(ALNUM, 36)
AWS = "AKIA" + rand("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 15) + "7"


def redacting_bus() -> EventBus:
    bus = EventBus()
    bus.redactor = Redactor(env={})
    return bus


def test_every_text_of_an_event_is_redacted_before_a_listener_or_the_store_sees_it():
    bus, heard, written = redacting_bus(), [], []
    bus.subscribe(heard.append)
    log = EventLog("s", bus, written.extend)
    data = {"message": f"saved backup_{GITHUB}.json", "calls": [{"name": f"creds_{AWS}"}], "count": 3}
    log.emit(ERROR, **data)
    log.flush()
    for event in (heard[0], written[0]):
        assert event.data == {
            "message": "saved backup_[REDACTED:github].json",
            "calls": [{"name": "creds_[REDACTED:aws-access-key]"}],
            "count": 3,
        }


def test_an_excerpt_is_cut_only_after_its_whole_text_was_redacted():
    bus, heard = redacting_bus(), []
    bus.subscribe(heard.append)
    arguments = '{"code": "' + "x" * 30 + GITHUB + '"}'
    bus.emit(Event(TOOL_STARTED, "s", {"arguments": Excerpt(arguments, 44)}))
    shown = heard[0].data["arguments"]
    assert shown == '{"code": "' + "x" * 30 + "[RED"
    assert not any(GITHUB[i : i + 6] in shown for i in range(len(GITHUB) - 5))


def test_an_event_cleaned_once_is_not_redacted_again():
    calls = []

    class Counting(Redactor):
        def redact_each(self, texts):
            calls.append(list(texts))
            return super().redact_each(texts)

    bus = EventBus()
    bus.redactor = Counting(env={})
    bus.emit(bus.clean(Event(ERROR, "s", {"message": "hello"})))
    assert calls == [["hello"]]


def test_a_memory_event_is_stored_and_told_as_the_bus_cleaned_it():
    store, bus, heard = MemoryStore(), redacting_bus(), []
    bus.subscribe(heard.append)
    MemoryService(store, events=EventLog("s", bus, store.append_events)).record_events(
        [Event(MEMORY_SAVED, "s", {"facts": [{"text": f"tok{GITHUB}"}]})]
    )
    stored = store.list_events("s", kind=MEMORY_SAVED)[0]
    assert stored.data == heard[0].data == {"facts": [{"text": "tok[REDACTED:github]"}]}
