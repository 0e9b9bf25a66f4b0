"""Progress on stderr: one bar for a sweep's measurements and a fit's least-squares fits.

:class:`Progress` is the package's own bar: a one-line bar on a terminal (one line per update
elsewhere). Its ETA comes from the planned work, not from a count of items: each item carries an
expected cost (its weight: a measurement's time budget, a fit's parameters times starts), and the
time taken so far per unit of cost done is applied to the cost still planned. :func:`progress_bar`
gives a bar with the same interface drawn by ``tqdm`` where it is installed (the optional extra
``progress``), and :class:`Progress` otherwise. :func:`wants_progress` is when to draw one: on a
terminal unless told to be quiet, or anywhere when asked.

No heavy imports (``tqdm`` only on use): the CLI's ``--help`` stays fast.
"""

from __future__ import annotations

import sys
import time
from typing import Callable, Optional, Sequence, TextIO

__all__ = ["Progress", "progress_bar", "wants_progress", "tqdm_available"]


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60}:{seconds % 60:02d}"


class Progress:
    """A one-line progress bar on a terminal (or one line per update when not a terminal).

    The ETA comes from the planned work: each item's expected cost (``weights``, e.g. its time
    budget) scaled by how long the items done so far took against their expected cost, so a run of
    quick points followed by slow ones does not promise an early finish.

    Parameters
    ----------
    total : int
        Items planned.
    stream : text stream, optional
        Where to draw (default: ``sys.stderr`` at the time of the call).
    enabled : bool
        Draw at all (counting goes on either way).
    weights : sequence of float, optional
        Each item's expected cost, in the order they are done (default: 1 each).
    clock : callable
        Seconds, monotonic (tests pass a fake one).
    min_interval_s : float
        Redraw at most this often (the last item is always drawn); 0 draws every update.
    """

    def __init__(self, total: int, stream: Optional[TextIO] = None, enabled: bool = True,
                 weights: Optional[Sequence[float]] = None, *, clock: Callable[[], float] = time.perf_counter,
                 min_interval_s: float = 0.0):
        self.total = total
        self.stream = stream or sys.stderr  # looked up now, not at import (it may be replaced)
        self.enabled = enabled and total > 0
        self.done = 0
        self.clock = clock
        self.start = clock()
        self.min_interval_s = min_interval_s
        self._drawn_at = None
        self._line_open = False  # a terminal line drawn and not yet ended
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.weights = list(weights) if weights is not None and len(weights) == total else [1.0] * total
        self.weight_total = float(sum(self.weights)) or 1.0
        self.weight_done = 0.0

    def eta_s(self) -> float:
        """Seconds left: the time per unit of expected cost so far, times the cost still planned."""
        elapsed = self.clock() - self.start
        return elapsed / max(self.weight_done, 1e-12) * max(self.weight_total - self.weight_done, 0.0)

    def note(self, text: str) -> None:
        """A line of its own (a warning), not overwritten by the bar."""
        if self.tty:
            self.stream.write("\r\033[K")
            self._line_open = False
        self.stream.write(text + "\n")
        self.stream.flush()

    def replan(self, weights: Sequence[float]) -> None:
        """The items not done yet are now these (their number may change): work found done already
        (a cached fit) leaves the plan, and a cost learnt on the way (the model a fit chose) replaces
        its guess. Nothing is drawn."""
        self.weights = self.weights[:self.done] + list(weights)
        self.total = len(self.weights)
        self.weight_total = float(sum(self.weights)) or 1.0

    def update(self, text: str, count: int = 1) -> None:
        """``count`` more items done; draw the bar with ``text``."""
        for _ in range(count):
            if self.done < self.total:
                self.weight_done += self.weights[self.done]
            self.done += 1
        if not self.enabled:
            return
        now = self.clock()
        last = self.done >= self.total
        if not last and self._drawn_at is not None and now - self._drawn_at < self.min_interval_s:
            return
        self._drawn_at = now
        width = 20
        filled = int(width * min(self.done, self.total) / max(self.total, 1))
        bar = "#" * filled + "." * (width - filled)
        line = f"[{bar}] {self.done}/{self.total} {_clock(now - self.start)} eta {_clock(self.eta_s())}  {text}"
        if self.tty:
            self.stream.write("\r\033[K" + line[:160])
            self._line_open = not last
            if last:
                self.stream.write("\n")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        """End the bar's line on a terminal if its last item was not drawn (the plan shrank)."""
        if self._line_open:
            self.stream.write("\n")
            self.stream.flush()
            self._line_open = False


class _TqdmBar:
    """:class:`Progress`'s interface drawn by ``tqdm``, in units of expected cost (so its ETA, too,
    comes from the planned work)."""

    def __init__(self, weights: Sequence[float], stream: TextIO, min_interval_s: float, desc: str):
        from tqdm import tqdm

        self.weights = list(weights)
        self.done = 0
        self.stream = stream
        self.bar = tqdm(total=float(sum(self.weights)), file=stream, mininterval=min_interval_s, desc=desc,
                        bar_format="{desc}: {percentage:3.0f}%|{bar:20}| {elapsed}<{remaining}{postfix}",
                        dynamic_ncols=True, leave=True)

    def update(self, text: str, count: int = 1) -> None:
        cost = sum(self.weights[self.done:self.done + count])
        self.done += count
        self.bar.set_postfix_str(text[:60], refresh=False)
        self.bar.update(cost)

    def replan(self, weights: Sequence[float]) -> None:
        self.weights = self.weights[:self.done] + list(weights)
        self.bar.total = float(sum(self.weights))
        self.bar.refresh()

    def note(self, text: str) -> None:
        self.bar.write(text, file=self.stream)

    def close(self) -> None:
        self.bar.close()


def tqdm_available() -> bool:
    """Whether ``tqdm`` can be imported (the optional extra ``progress``)."""
    try:
        import tqdm  # noqa: F401
    except ImportError:
        return False
    return True


def wants_progress(stream: Optional[TextIO] = None, *, quiet: bool = False, asked: bool = False) -> bool:
    """Whether to draw progress on ``stream`` (default stderr): when ``asked``, else on a terminal
    unless ``quiet``. Never on stdout's behalf: JSON output stays clean whatever this says."""
    stream = stream or sys.stderr
    if asked:
        return True
    return not quiet and hasattr(stream, "isatty") and stream.isatty()


def progress_bar(weights: Sequence[float], *, stream: Optional[TextIO] = None, desc: str = "",
                 use_tqdm: Optional[bool] = None, min_interval_s: Optional[float] = None):
    """A bar over items of the given expected costs, drawn by ``tqdm`` if installed, else :class:`Progress`.

    Parameters
    ----------
    weights : sequence of float
        Each planned item's expected cost, in order.
    stream : text stream, optional
        Default ``sys.stderr``.
    desc : str
        What is in progress (``tqdm`` shows it before the bar).
    use_tqdm : bool, optional
        Force one or the other; default: ``tqdm`` where it can be imported.
    min_interval_s : float, optional
        Redraw at most this often; default 0.1 s on a terminal, 2 s elsewhere (a log).

    Returns
    -------
    object
        With ``update(text, count=1)``, ``replan(weights)``, ``note(text)`` and ``close()``.
    """
    stream = stream or sys.stderr
    tty = hasattr(stream, "isatty") and stream.isatty()
    interval = (0.1 if tty else 2.0) if min_interval_s is None else min_interval_s
    if use_tqdm is None:
        use_tqdm = tqdm_available()
    if use_tqdm:
        return _TqdmBar(weights, stream, interval, desc)
    return Progress(len(weights), stream=stream, weights=list(weights), min_interval_s=interval)
