"""Driving the app in tests: wait until every worker has reported and the screen is drawn."""

from __future__ import annotations

import asyncio
import functools

from textual.pilot import Pilot
from textual.worker import WorkerCancelled


async def settle(pilot: Pilot, rounds: int = 100, *, waited: bool = False) -> None:
    """Workers post messages that start more workers: wait until nothing is left to do.

    Done when every message queued on the app and its screen has been handled and no
    worker is pending or running, then again after a pause (which handles what those
    handlers queued, then draws the screen) and what the draw ran (the callbacks
    that waited for it, ``call_after_refresh``): a handler may start a worker or post a
    message. Exact, not a fixed number of rounds: a round costs no sleep (``rounds``
    bounds it, as a worker that waits for a locked file never ends). ``waited``: the
    caller has just waited for the screen (``Pilot.press`` does), the first round's
    wait is not repeated."""
    app = pilot.app
    for _ in range(rounds):
        if not waited:
            await pilot._wait_for_screen()
        waited = False
        busy = [w for w in app.workers if not w.is_finished]
        if not busy:
            await pilot.pause()  # waits for the screen again, then draws it
            # The draw queues what waited for it (call_after_refresh): run it too.
            await pilot._wait_for_screen()
            if all(w.is_finished for w in app.workers) and not app.screen._callbacks:
                return
            continue  # the pause's handlers started a worker: wait for it too
        try:
            await app.workers.wait_for_complete(busy)
        except WorkerCancelled:  # replaced by a newer read of its group, or its screen left
            pass
    await pilot.pause()


async def press(pilot: Pilot, *keys: str) -> None:
    for key in keys:
        await pilot.press(key)  # ends waiting for the screen
        await settle(pilot, waited=True)


async def type_text(pilot: Pilot, text: str) -> None:
    """Type ``text`` into the focused input (one settle at the end, not per key)."""
    await pilot.press(*text)
    await settle(pilot, waited=True)


async def wait_for(pilot: Pilot, condition, timeout: float = 20.0) -> None:
    """Poll ``condition()`` between short pauses (for what workers do while they wait)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"still not true after {timeout} s: {condition}")
        await pilot.pause(0.05)


def asynctest(fn):
    """Run an ``async def`` test with asyncio.run (no async pytest plugin needed)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return asyncio.run(fn(*args, **kwargs))

    return wrapper
