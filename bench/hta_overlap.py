"""HTA's comm/compute overlap on the 2-rank fixture, taken apart to explain tlview's difference.

Run with an interpreter that has HolisticTraceAnalysis (not a tlview dependency), the
one the benchmarks take from TLVIEW_HTA_PYTHON (a venv with `pip install
holistictraceanalysis`; see bench/bench_kineto.py):
    "$TLVIEW_HTA_PYTHON" -m bench.hta_overlap tests/fixtures/profile/coll
and compare with `tlview sql "SELECT * FROM comm_overlap_summary"` on the same traces.

Prints, per rank: HTA as shipped (default options); HTA keeping the last ProfilerStep
(include_last_profiler_step=True); and the same HTA dataframe without the CPU-side
Triton launch ops that HTA counts as GPU computation (they carry a "stream" arg).
What is left is HTA's truncation of ts and dur to whole microseconds.
"""

from __future__ import annotations

import logging
import shutil
import sys
import tempfile
from pathlib import Path


def _union(iv: list[tuple[float, float]]) -> list[list[float]]:
    out: list[list[float]] = []
    for s, e in sorted(iv):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def _inter(a: list[list[float]], b: list[list[float]]) -> float:
    i = j = 0
    total = 0.0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            total += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def main(folder: str) -> None:
    logging.disable(logging.WARNING)
    from hta.trace_analysis import TraceAnalysis
    from hta.utils.utils import get_kernel_type

    with tempfile.TemporaryDirectory() as tmp:
        for p in Path(folder).rglob("*.pt.trace.json.gz"):
            shutil.copy(p, tmp)
        default = TraceAnalysis(trace_dir=tmp).get_comm_comp_overlap(visualize=False)
        full = TraceAnalysis(trace_dir=tmp, include_last_profiler_step=True)
        with_last = full.get_comm_comp_overlap(visualize=False)
        sym = full.t.symbol_table.get_sym_table()
        print("rank  hta_default  hta_last_step  hta_without_cpu_ops  (percent)")
        for rank in sorted(full.t.traces):
            df = full.t.traces[rank]
            g = df[df["stream"].ne(-1)]
            g = g[[sym[c] != "cpu_op" for c in g["cat"]]]
            kinds = [get_kernel_type(sym[n]) for n in g["name"]]
            comm = _union([(s, s + d) for s, d, k in zip(g["ts"], g["dur"], kinds)
                           if k == "COMMUNICATION"])
            comp = _union([(s, s + d) for s, d, k in zip(g["ts"], g["dur"], kinds)
                           if k == "COMPUTATION"])
            pct = 100 * _inter(comm, comp) / sum(e - s for s, e in comm)
            d = default.set_index("rank")["comp_comm_overlap_pctg"][rank]
            w = with_last.set_index("rank")["comp_comm_overlap_pctg"][rank]
            print(f"{rank:4d}  {d:11.2f}  {w:13.2f}  {pct:19.2f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/profile/coll")
