"""HTA's straggler analysis beside tlview's, on the same rank traces.

Run with an interpreter that has HolisticTraceAnalysis (not a tlview dependency):
    "$TLVIEW_HTA_PYTHON" -m bench.hta_stragglers FOLDER [FOLDER...]
and compare with `tlview sql "SELECT * FROM stragglers"` over the same traces (printed
below when tlview is importable by that interpreter; else run that line yourself).

For each folder (a set of `*.pt.trace.json.gz`, one per rank) it prints HTA's
`get_potential_stragglers` (its default metric: the normalized start of the last NCCL
kernel of each step, per rank; num_candidates=1), once as shipped and once with the
kernel filter also accepting `ncclDevKernel_*` (HTA #360: as shipped it keeps only
`ncclKernel*` symbols, so on NCCL >= 2.19 traces it finds no communication kernel).
"""

from __future__ import annotations

import logging
import shutil
import sys
import tempfile
from pathlib import Path


def _hta(folder: Path, patched: bool) -> str:
    from hta.analyzers import straggler
    from hta.trace_analysis import TraceAnalysis

    original = straggler.find_stragglers_with_late_start_comm_kernels
    with tempfile.TemporaryDirectory() as tmp:
        for p in sorted(folder.rglob("*.pt.trace.json.gz")):
            shutil.copy(p, Path(tmp) / p.name)
        analysis = TraceAnalysis(trace_dir=tmp, include_last_profiler_step=True)
        if patched:
            table = analysis.t.symbol_table
            names = table.get_sym_table()
            # HTA's filter is `startswith("ncclKernel")`: give it the modern names too
            renamed = [n.replace("ncclDevKernel", "ncclKernel", 1) for n in names]
            table.sym_table = renamed
            table.sym_index = {n: i for i, n in enumerate(renamed)}
        try:
            got = analysis.get_potential_stragglers(num_candidates=1)
            return f"{got}"
        except Exception as e:  # noqa: BLE001 - report what HTA says, whatever it raises
            return f"error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        finally:
            straggler.find_stragglers_with_late_start_comm_kernels = original


def main(folders: list[str]) -> None:
    logging.disable(logging.WARNING)
    for f in folders:
        folder = Path(f)
        print(f"== {folder}")
        print(f"  HTA as shipped:            {_hta(folder, patched=False)}")
        print(f"  HTA, ncclDevKernel kept:   {_hta(folder, patched=True)}")


if __name__ == "__main__":
    main(sys.argv[1:])
