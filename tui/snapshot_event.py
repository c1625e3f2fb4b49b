"""The text of a snapshot screen's header and of the trace entry at its cursor: exact
bytes with binary units beside (``tlview.store.fmt.exact_bytes``, as ``tlview ingest`` prints
them), times from the window's start. Plain functions of frozen values."""

from __future__ import annotations

from rich.text import Text
from tlview.store.fmt import exact_bytes, human_bytes
from tlview.store.snapshot_queries import OomDetail, SnapshotOverview, SnapshotPoint


def since(time_us: int | None, start_us: int | None) -> str:
    """``+454.921 ms`` from the window's start (event -1)."""
    if time_us is None or start_us is None:
        return "time not recorded"
    return f"+{(time_us - start_us) / 1000:,.3f} ms"


def at_event(index: int) -> str:
    return "the window's start" if index == -1 else f"event {index:,}"


def header(o: SnapshotOverview) -> list[Text]:
    """Two lines: the allocated peak, the reserved peak and the OOMs."""
    alloc = Text("peak allocated ")
    alloc.append(exact_bytes(o.peak_allocated), style="bold")
    alloc.append(f" at {at_event(o.peak_event)} {since(o.peak_time_us, o.start_time_us)}")
    res = Text("peak reserved  ")
    res.append(exact_bytes(o.peak_reserved), style="bold")
    res.append(f" at {at_event(o.reserved_event)} "
               f"{since(o.reserved_time_us, o.start_time_us)}")
    n = len(o.ooms)
    res.append(f" · {n} OOM{'s' if n != 1 else ''}" if n else " · no OOM")
    if not o.consistent:
        alloc.append(" · the trace does not match its allocations: not to be trusted",
                     style="bold")
    return [alloc, res]


def describe(p: SnapshotPoint, o: SnapshotOverview, oom: OomDetail | None) -> list[Text]:
    """Four lines: what the entry at the cursor did (and when), what the allocator held
    after it, and at an OOM what was asked, what CUDA had free and the largest free block
    (else the same in whole blocks). Each line is cut by the caller, never wrapped."""
    first = Text()
    first.append(at_event(p.event_index), style="bold")
    first.append(f" {since(p.time_us, o.start_time_us)}: ")
    if p.event_index == -1:
        first.append("the state before the first recorded entry (inferred from the end)")
    else:
        first.append(p.action or "?", style="bold reverse" if oom is not None else "bold")
        if p.size is not None:
            first.append(f"{' requested' if p.action == 'oom' else ''} {exact_bytes(p.size)}")
        if p.stream is not None:
            first.append(f" stream {p.stream}")
        if p.address is not None:
            first.append(f" at {p.address:#x}")
    held = Text("allocated ")
    held.append(exact_bytes(p.allocated), style="bold")
    held.append(f" · reserved {exact_bytes(p.reserved)}")
    if oom is not None:
        fits = {True: "the request would have fit", False: "the request would not fit",
                None: "whether it fits is unknown"}[oom.request_fits]
        asked = Text(f"CUDA free (device_free) {exact_bytes(oom.device_free)}")
        if oom.segment_bytes is not None and oom.segment_bytes != p.size:
            asked.append(f" · torch tried a {human_bytes(oom.segment_bytes)} segment "
                         f"({oom.segment_bytes:,} B)")
        free = Text(f"largest free block {exact_bytes(oom.largest_free_block)}: {fits}")
        return [first, held, asked, free]
    blocks = Text(f"{p.active_blocks:,} block{'s' if p.active_blocks != 1 else ''}, "
                  f"{exact_bytes(p.block_bytes)} in whole blocks (torch's memory_allocated())",
                  style="dim")
    return [first, held, blocks, Text()]
