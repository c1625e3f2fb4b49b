"""tlview: an event-sourced timeline database and terminal UI for compiled ML programs.

Packages: ``tlview.ingest`` (dumps to events), ``tlview.store`` (DuckDB, views),
``tlview.tui`` (the terminal UI). ``tlview.api`` is the small scripting API.
"""

__version__ = "0.1.0"
