"""The terminal UI. Reads only through tlview.store query functions, in workers."""


def run(db_path: str, ascii_only: bool | None = None) -> int:
    from .app import run_app

    return run_app(db_path, ascii_only=ascii_only)
