"""Progress on stderr: one bar for a sweep's measurements, a calibration's rounds and a fit's
least-squares fits, drawn by ``tqdm``.

:class:`Progress` is the one bar every caller uses. On a terminal it is a ``tqdm`` bar redrawn in
place; elsewhere (a log, a pipe) it writes one line per update (throttled by ``min_interval_s``),
formatted by ``tqdm.format_meter``, since ``tqdm``'s carriage returns would garble a log. Its ETA
comes from the planned work, not from a count of items: each item carries an expected cost (its
weight: a measurement's time budget, a fit's parameters times starts), and the bar counts in units
of cost, so the time per unit of cost so far is applied to the cost still planned.
:func:`progress_bar` builds one from a list of costs (the fits' interface); :func:`wants_progress` is
when to draw one: on a terminal unless told to be quiet, or anywhere when asked (``-v``,
``--progress``).

No heavy imports (``tqdm`` only when a bar is drawn): the CLI's ``--help`` stays fast.
"""

from __future__ import annotations

import sys
import time
from typing import Callable, Optional, Sequence, TextIO

__all__ = ["Progress", "progress_bar", "wants_progress"]

#: What a bar shows: what is in progress, the share of the planned cost done, time spent and left,
#: then items done of planned and the current item (the postfix).
BAR_FORMAT = "{desc}: {percentage:3.0f}%|{bar:20}| {elapsed}<{remaining}{postfix}"


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60}:{seconds % 60:02d}"


class Progress:
    """A progress bar over planned items of known expected cost, drawn by ``tqdm`` on a terminal and
    as one line per update elsewhere.

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
    desc : str
        What is in progress, shown before the bar.
    """

    def __init__(self, total: int, stream: Optional[TextIO] = None, enabled: bool = True,
                 weights: Optional[Sequence[float]] = None, *, clock: Callable[[], float] = time.perf_counter,
                 min_interval_s: float = 0.0, desc: str = ""):
        self.total = total
        self.stream = stream or sys.stderr  # looked up now, not at import (it may be replaced)
        self.enabled = enabled and total > 0
        self.done = 0
        self.clock = clock
        self.start = clock()
        self.min_interval_s = min_interval_s
        self.desc = desc
        self.bar_format = BAR_FORMAT if desc else BAR_FORMAT.removeprefix("{desc}: ")
        self._drawn_at = None
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.weights = list(weights) if weights is not None and len(weights) == total else [1.0] * total
        self.weight_total = float(sum(self.weights)) or 1.0
        self.weight_done = 0.0
        self._bar = self._tqdm() if self.enabled and self.tty else None

    def _tqdm(self):
        from tqdm import tqdm

        bar = tqdm(total=self.weight_total, file=self.stream, desc=self.desc, bar_format=self.bar_format,
                   mininterval=self.min_interval_s, miniters=0, smoothing=0, dynamic_ncols=True, leave=True,
                   delay=0)
        bar._time = self.clock  # elapsed and ETA on the same clock as eta_s()
        bar.start_t = bar.last_print_t = self.start
        return bar

    def eta_s(self) -> float:
        """Seconds left: the time per unit of expected cost so far, times the cost still planned."""
        elapsed = self.clock() - self.start
        return elapsed / max(self.weight_done, 1e-12) * max(self.weight_total - self.weight_done, 0.0)

    def note(self, text: str) -> None:
        """A line of its own (a warning), not overwritten by the bar."""
        if self._bar is not None:
            self._bar.write(text, file=self.stream)
            return
        self.stream.write(text + "\n")
        self.stream.flush()

    def replan(self, weights: Sequence[float]) -> None:
        """The items not done yet are now these (their number may change): work found done already
        (a cached fit) leaves the plan, and a cost learnt on the way (the model a fit chose) replaces
        its guess. Nothing is drawn."""
        self.weights = self.weights[:self.done] + list(weights)
        self.total = len(self.weights)
        self.weight_total = float(sum(self.weights)) or 1.0
        if self._bar is not None:
            self._bar.total = self.weight_total

    def update(self, text: str, count: int = 1) -> None:
        """``count`` more items done; draw the bar with ``text``."""
        before = self.weight_done
        for _ in range(count):
            if self.done < self.total:
                self.weight_done += self.weights[self.done]
            self.done += 1
        if not self.enabled:
            return
        postfix = f"{self.done}/{self.total}  {text}"
        last = self.done >= self.total
        if self._bar is not None:
            self._bar.set_postfix_str(postfix[:100], refresh=False)
            self._bar.update(self.weight_done - before)
            if last:
                self.close()
            return
        now = self.clock()
        if not last and self._drawn_at is not None and now - self._drawn_at < self.min_interval_s:
            return
        self._drawn_at = now
        from tqdm import tqdm

        line = tqdm.format_meter(min(self.weight_done, self.weight_total), self.weight_total, now - self.start,
                                 prefix=self.desc, bar_format=self.bar_format, postfix=postfix,
                                 ascii=True)
        self.stream.write(line.rstrip() + "\n")
        self.stream.flush()

    def close(self) -> None:
        """End the bar (its line stays) if it is still open, whether or not its last item was drawn
        (the plan may have shrunk)."""
        if self._bar is not None:
            self._bar.refresh()
            self._bar.close()
            self._bar = None


def wants_progress(stream: Optional[TextIO] = None, *, quiet: bool = False, asked: bool = False) -> bool:
    """Whether to draw progress on ``stream`` (default stderr): when ``asked``, else on a terminal
    unless ``quiet``. Never on stdout's behalf: JSON output stays clean whatever this says."""
    stream = stream or sys.stderr
    if asked:
        return True
    return not quiet and hasattr(stream, "isatty") and stream.isatty()


def progress_bar(weights: Sequence[float], *, stream: Optional[TextIO] = None, desc: str = "",
                 min_interval_s: Optional[float] = None) -> Progress:
    """A :class:`Progress` over items of the given expected costs (the fits' interface).

    Parameters
    ----------
    weights : sequence of float
        Each planned item's expected cost, in order.
    stream : text stream, optional
        Default ``sys.stderr``.
    desc : str
        What is in progress (shown before the bar).
    min_interval_s : float, optional
        Redraw at most this often; default 0.1 s on a terminal, 2 s elsewhere (a log).

    Returns
    -------
    Progress
        With ``update(text, count=1)``, ``replan(weights)``, ``note(text)`` and ``close()``.
    """
    stream = stream or sys.stderr
    tty = hasattr(stream, "isatty") and stream.isatty()
    interval = (0.1 if tty else 2.0) if min_interval_s is None else min_interval_s
    return Progress(len(weights), stream=stream, weights=list(weights), min_interval_s=interval, desc=desc)
