"""A time limit's SIGTERM stops a command as Ctrl-C does, but never while a profile is being written: the
signal is held over the block and raised after it, whichever thread the kernel handed it to."""

import os
import signal
import threading
import time

import pytest

from crossover.cli.args import handle_stop_signals, signals_deferred


@pytest.fixture
def restored_handlers():
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield
    for signum, handler in before.items():
        signal.signal(signum, handler)


def _sigterm_from_another_thread():
    worker = threading.Thread(target=os.kill, args=(os.getpid(), signal.SIGTERM))
    worker.start()
    worker.join()
    time.sleep(0.05)  # the main thread runs the Python handler at its next bytecodes


def test_a_sigterm_during_the_block_is_raised_after_it(restored_handlers):
    handle_stop_signals()
    done = []
    with pytest.raises(KeyboardInterrupt):
        with signals_deferred():
            _sigterm_from_another_thread()
            done.append("the block ran to its end")
    assert done == ["the block ran to its end"]
    assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL  # the stop handler is back


def test_a_sigterm_outside_the_block_stops_at_once_and_an_ignored_sigint_stays_ignored(restored_handlers):
    handle_stop_signals()
    with pytest.raises(KeyboardInterrupt):
        _sigterm_from_another_thread()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with signals_deferred():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # noted, raised again to the ignoring handler
