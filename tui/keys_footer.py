"""The last line of every screen: the keys of the screen, as Textual's compact Footer
draws them, rebuilt only when they change.

Textual's Footer rebuilds all its keys (a widget each, styled anew) whenever the screen
says its bindings may have changed: on every focus change, screen push and pop, and
most keys. The keys it shows are a function of the screen's active bindings alone, so
this footer rebuilds only when those differ from what it shows (or will show, from a
rebuild already asked for): the same line, without unmounting and mounting a dozen
widgets for nothing (tests/tui/test_app.py and test_80x24.py: 198 rebuilds, 146 of them
to the same keys; 67 with this footer).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer

Shown = tuple[tuple[str, str, str, str, bool, str], ...]


def shown_keys(screen: Screen) -> Shown:
    """What Footer.compose draws from ``screen``: each shown binding's key, its display,
    description, action (keys of one action are drawn together), whether it is enabled,
    and its tooltip, in binding order."""
    app = screen.app
    return tuple((b.key, app.get_key_display(b), b.description, b.action, enabled,
                  tooltip or "")
                 for (_, b, enabled, tooltip) in screen.active_bindings.values() if b.show)


class KeysFooter(Footer):
    """``Footer(compact=True)`` that skips a rebuild which would draw the same keys."""

    def __init__(self) -> None:
        super().__init__(compact=True)
        self._keys: Shown | None = None  # drawn, or to be drawn by the rebuild asked for

    def compose(self) -> ComposeResult:
        if self._bindings_ready:
            self._keys = shown_keys(self.screen)
        return super().compose()

    def bindings_changed(self, screen: Screen) -> None:
        # Footer rebuilds (after the next refresh) when attached to that screen and the
        # app has the focus; several changes before that rebuild ask for it once.
        if self.is_attached and screen is self.screen and screen.app.app_focus:
            keys = shown_keys(screen)
            if self._bindings_ready and keys == self._keys:
                return
            self._keys = keys
        super().bindings_changed(screen)
