"""Driving the app in tests: wait until every worker has reported and the screen is drawn."""

from __future__ import annotations

import asyncio
import functools

from textual.pilot import Pilot
from textual.worker import WorkerCancelled


async def settle(pilot: Pilot, rounds: int = 100) -> None:
    """Workers post messages that start more workers: wait until nothing is left to do.

    Done when, twice in a row, every message queued on the app and its screen has been
    handled and no worker is pending or running (a handler may start a worker or post a
    message); then one pause, for the screen to be drawn. Exact, not a fixed number of
    rounds: a round costs no sleep (``rounds`` bounds it, as a worker that waits for a
    locked file never ends)."""
    app = pilot.app
    quiet = 0
    for _ in range(rounds):
        await pilot._wait_for_screen()
        busy = [w for w in app.workers if not w.is_finished]
        if not busy:
            quiet += 1
            if quiet == 2:
                break
            continue
        quiet = 0
        try:
            await app.workers.wait_for_complete(busy)
        except WorkerCancelled:  # replaced by a newer read of its group, or its screen left
            pass
    await pilot.pause()


async def press(pilot: Pilot, *keys: str) -> None:
    for key in keys:
        await pilot.press(key)
        await settle(pilot)


async def type_text(pilot: Pilot, text: str) -> None:
    """Type ``text`` into the focused input (one settle at the end, not per key)."""
    await pilot.press(*text)
    await settle(pilot)


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
