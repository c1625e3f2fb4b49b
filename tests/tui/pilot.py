"""Driving the app in tests: wait until every worker has reported and the screen is drawn."""

from __future__ import annotations

import asyncio
import functools

from textual.pilot import Pilot
from textual.worker import WorkerCancelled


async def settle(pilot: Pilot, rounds: int = 4) -> None:
    """Workers post messages that start more workers: wait a few rounds of that."""
    app = pilot.app
    for _ in range(rounds):
        await pilot.pause()
        try:
            await app.workers.wait_for_complete()
        except WorkerCancelled:  # replaced by a newer read of its group, or its screen left
            await pilot.pause()
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
