"""The terminal UI. Reads only through tlview.store query functions, in workers."""


def run(db_path: str) -> int:
    from .app import run_app

    return run_app(db_path)
