"""Progress display for Cluster.wait(): live HTML in a notebook, one line on a terminal, nothing
otherwise. The text and HTML come from the C++ JobInfo.progress_text()/to_html(); only where they go
is decided here."""
from __future__ import annotations

import sys
from typing import Any, Optional


def _in_notebook() -> bool:
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
    except Exception:  # pragma: no cover - IPython half-initialised
        return False
    return shell is not None and shell.__class__.__name__ == "ZMQInteractiveShell"


class _NotebookProgress:
    def __init__(self) -> None:
        from IPython.display import HTML, display

        self._html = HTML
        self._handle = display(HTML(""), display_id=True)

    def __call__(self, info: Any) -> None:
        self._handle.update(self._html(info.to_html()))

    def close(self, info: Optional[Any]) -> None:
        if info is not None:
            self(info)


class _TerminalProgress:
    """Rewrites one line: JobInfo.progress_text(), padded over a longer line shown before."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._width = 0

    def __call__(self, info: Any) -> None:
        line = info.progress_text()
        pad = max(0, self._width - len(line))
        self._width = len(line)
        self._stream.write("\r" + line + " " * pad)
        self._stream.flush()

    def close(self, info: Optional[Any]) -> None:
        if info is not None:
            self(info)
        if self._width:
            self._stream.write("\n")
            self._stream.flush()


def reporter(progress: Optional[bool]) -> Optional[Any]:
    """The display for wait(progress=...): None chooses by where output goes; False shows nothing;
    True shows a one-line display even when stdout is not a terminal (unless in a notebook)."""
    if progress is False:
        return None
    if _in_notebook():
        return _NotebookProgress()
    stream = sys.stdout
    if progress or (hasattr(stream, "isatty") and stream.isatty()):
        return _TerminalProgress(stream)
    return None
