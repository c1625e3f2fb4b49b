"""Ingesters: pure functions from dump lines to tlview event records.

Nothing here imports DuckDB or Textual; the store writes what these yield.
"""

from .errors import IngestError
from .format_spec import FormatSpec
from .formats import detect_format, formats
from .source import records_for

__all__ = ["FormatSpec", "IngestError", "detect_format", "formats", "records_for"]
