"""Inductor's estimated runtimes (``inductor_runtime_and_tensor_meta``), aligned to launches.

Inductor logs one entry per scheduler node of a graph, in schedule order: its name (the
scheduler node's, ``op3_op4``, or the extern kernel's, ``extern_kernels.mm``; ``None``
for a MultiOutput, which launches nothing), its type (compute/collective), its
estimated runtime and the dtype/shape/stride of its outputs. Buffer names are not
logged, so an entry is tied to a launch of the graph's output code by order alone.

The alignment rule (docs/profiles.md, "Estimates against measurements"):

* an entry named ``extern_kernels.X`` / ``torch.ops.NS.OP.overload`` (any dotted name)
  is an extern op; an entry named ``None`` launches nothing; any other entry is a fused
  kernel (Triton or C++);
* the extern entries and the extern launches of the output code must name the same
  kernels in the same order; they pair one to one and split both sequences into
  stretches;
* within a stretch, the fused entries pair one to one, in order, with the fused launches
  when there are as many; when there are more entries, those with an estimate of exactly
  0 are taken as launching nothing (a NopKernelSchedulerNode) and the rest pair if they
  are then as many; otherwise the stretch's fused entries stay unaligned (step None):
  the C++ backend, for one, fuses several scheduler nodes into one kernel.

The estimate's unit: the field is named ``estimated_runtime_ns``, but torch (2.9 to
2.13 at least) fills it with ``BaseSchedulerNode.get_estimated_runtime()``, documented
in torch/_inductor/scheduler.py as milliseconds. ``ESTIMATE_UNIT_NS`` converts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

ESTIMATE_UNIT_NS = 1_000_000  # the logged value is in milliseconds (see the docstring)


class Aligned(NamedTuple):
    """Where estimate entry i landed: the wrapper step, or None, and how."""

    step: int | None
    method: str  # extern_order | fused_order | fused_order_skipping_zero | no_launch
    #              | unaligned_extern_order | unaligned_stretch


def entry_kind(name: str | None) -> str:
    """``extern`` | ``none`` | ``fused`` for an estimate entry's name."""
    if name is None:
        return "none"
    return "extern" if "." in name else "fused"


def align(entries: Sequence[tuple[str | None, float]],
          launches: Sequence[tuple[int, str, str]]) -> list[Aligned]:
    """``entries``: (name, estimate) in schedule order; ``launches``: (step, kind, kernel)
    of the output code in step order, kind ``extern`` or ``fused``. One Aligned per entry."""
    out: list[Aligned] = [Aligned(None, "no_launch")] * len(entries)
    ext_e = [i for i, (n, _) in enumerate(entries) if entry_kind(n) == "extern"]
    ext_l = [j for j, (_, kind, _) in enumerate(launches) if kind == "extern"]
    if [entries[i][0] for i in ext_e] != [launches[j][2] for j in ext_l]:
        return [Aligned(None, "no_launch") if entry_kind(n) == "none"
                else Aligned(None, "unaligned_extern_order") for n, _ in entries]
    for i, j in zip(ext_e, ext_l):
        out[i] = Aligned(launches[j][0], "extern_order")
    bounds_e = [-1, *ext_e, len(entries)]
    bounds_l = [-1, *ext_l, len(launches)]
    for k in range(len(bounds_e) - 1):
        fused_e = [i for i in range(bounds_e[k] + 1, bounds_e[k + 1])
                   if entry_kind(entries[i][0]) == "fused"]
        fused_l = [launches[j][0] for j in range(bounds_l[k] + 1, bounds_l[k + 1])
                   if launches[j][1] == "fused"]
        if len(fused_e) == len(fused_l):
            for i, step in zip(fused_e, fused_l):
                out[i] = Aligned(step, "fused_order")
            continue
        nonzero = [i for i in fused_e if entries[i][1] != 0]
        if len(nonzero) == len(fused_l) and len(nonzero) < len(fused_e):
            for i, step in zip(nonzero, fused_l):
                out[i] = Aligned(step, "fused_order_skipping_zero")
            continue
        for i in fused_e:
            out[i] = Aligned(None, "unaligned_stretch")
    return out
