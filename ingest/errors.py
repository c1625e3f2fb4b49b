"""The one error type every ingester raises: it names the file, the line and what was expected."""

from __future__ import annotations


class IngestError(Exception):
    """Bad input: ``path:line: message``. The ingest that raised it writes nothing."""

    def __init__(self, path: str, line: int | None, message: str) -> None:
        self.path = str(path)
        self.line = line
        self.message = message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")
