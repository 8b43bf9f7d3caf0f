"""The one exception the expression-file frontend raises for anything wrong with its input."""
from __future__ import annotations

from ..errors import AnsorcError


def _one_line(text: str) -> str:
    # A message must stay on one line even when it quotes odd user text.
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


class TeError(AnsorcError):
    """`file:line:col: error: what was wrong (what was expected)`; line and col are 1-based."""

    def __init__(self, message: str, filename: str = "<string>", line: int = 1, col: int = 1):
        self.message = _one_line(message)
        self.filename = _one_line(filename)
        self.line = max(int(line), 1)
        self.col = max(int(col), 1)
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}:{self.col}: error: {self.message}"


class TeSyntaxError(TeError):
    """The text does not follow the grammar (a subclass, so `except TeError` catches both)."""
