"""A compiled graph's other sources, on one line under a timeline's title.

The chooser lists a graph once and says "(N sources)"; the timeline screen says which: the
artifact this timeline was read from, the other artifacts holding the same output code
(its copies), and the graph's other forms (scheduler IR, FX graph), each with the
timeline id the chooser lists it under (``a`` there shows the copies):

    from output_code.py, also in torch log #8, TORCH_TRACE #14; as scheduler IR #5, ...

Where that is too long the form words give way to short ones (IR, FX), then where this
timeline comes from is left to its title, then the line is cut.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static
from tlview.store.timeline_queries import GraphSource

from .cell_text import fit

SHORT = {"scheduler IR": "IR", "scheduler IR pre-fusion": "pre-fusion IR", "FX graph": "FX"}


def sources_text(this: int, sources: tuple[GraphSource, ...], width: int,
                 dots: str = "…") -> str:
    """The line for timeline ``this`` among its graph's ``sources`` (empty when it has no
    other), fitted to ``width``: whole, else with short form words, else without saying
    where this one comes from, else cut."""
    me = next((s for s in sources if s.timeline_id == this), None)
    if me is None or len(sources) < 2:
        return ""
    same = ", ".join(f"{s.source_kind} #{s.timeline_id}" for s in sources
                     if s.form == me.form and s.timeline_id != this)
    groups: dict[int, list[GraphSource]] = {}  # other forms, an output code with its copies
    for s in sources:
        if s.form != me.form:
            groups.setdefault(s.copy_of or s.timeline_id, []).append(s)
    whole = "as " + ", ".join(f"{g[0].label} " + " ".join(f"#{s.timeline_id}" for s in g)
                      for g in groups.values()) if groups else ""
    short = "as " + ", ".join(f"{SHORT.get(g[0].form, g[0].form)} "
                      + " ".join(f"#{s.timeline_id}" for s in g) for g in groups.values()) if groups else ""
    mine = f"from {me.source_kind}" + (f" (a copy of #{me.copy_of})" if me.copy_of else "")
    texts = ["; ".join(x for x in (mine + (f", also in {same}" if same else ""), other) if x)
             for other in (whole, short)]
    texts.append("; ".join(x for x in ((f"also in {same}" if same else ""), short) if x))
    return next((t for t in texts if len(t) <= width), fit(texts[-1], width, dots))


class GraphSources(Static):
    """The line itself: hidden until its timeline turns out to have other sources."""

    def __init__(self, **kw) -> None:
        super().__init__("", **kw)
        self.this = 0
        self.sources: tuple[GraphSource, ...] = ()
        self.display = False

    def show(self, this: int, sources: tuple[GraphSource, ...]) -> None:
        self.this, self.sources = this, sources
        self.display = len(sources) > 1
        self._draw()

    def _draw(self) -> None:
        glyphs = getattr(self.app, "glyphs", None)
        dots = glyphs.ellipsis if glyphs is not None else "…"
        width = max(10, self.size.width - 2)
        self.update(Text(sources_text(self.this, self.sources, width, dots), style="dim"),
                    layout=False)

    def on_resize(self) -> None:
        self._draw()
