"""Driving the app in tests: wait until every worker has reported and the screen is drawn."""

from __future__ import annotations

import asyncio
import functools

from textual.pilot import Pilot


async def settle(pilot: Pilot, rounds: int = 4) -> None:
    """Workers post messages that start more workers: wait a few rounds of that."""
    app = pilot.app
    for _ in range(rounds):
        await pilot.pause()
        await app.workers.wait_for_complete()
    await pilot.pause()


async def press(pilot: Pilot, *keys: str) -> None:
    for key in keys:
        await pilot.press(key)
        await settle(pilot)


def asynctest(fn):
    """Run an ``async def`` test with asyncio.run (no async pytest plugin needed)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return asyncio.run(fn(*args, **kwargs))

    return wrapper
