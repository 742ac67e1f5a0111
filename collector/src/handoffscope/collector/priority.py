"""The judge's lower CPU priority (`--judge-nice`): answers first, verdicts from what is left.

Acknowledging exports and answering queries are what a sender and an operator wait on;
the judge's work is throughput that runs behind both, from a durable mark, and reports
its lag. When every core is busy, the kernel shares them by priority, so at an equal
priority the judge's worker (a whole core of Python when spans flow) took CPU from the
receiver: on two cores (bench/bench_receiver.py, the judge on, median of three
alternating runs) the receiver took 19.8k spans/s with the judge at the collector's
priority and 23.0k with it 10 lower; with a core to spare, nice changes nothing.

On Linux a priority belongs to a thread, so the judge's thread lowers only itself (and
what it starts); the worker processes lower themselves to the collector's priority plus
the increment (a worker started by the lowered judge thread would otherwise stack the
two). Elsewhere a thread cannot be lowered alone, so only the workers are. Never raises:
priority is an optimisation, and a refusal (a sandbox without setpriority) is logged.
"""

from __future__ import annotations

import logging
import os
import sys
import threading

log = logging.getLogger(__name__)

MAX_NICE = 19


def base() -> int:
    """The collector's own priority (its main thread's nice value)."""
    try:
        return os.getpriority(os.PRIO_PROCESS, os.getpid())
    except OSError:
        return 0


def lowered(increment: int) -> int:
    """The nice value `increment` below the collector's own."""
    return min(MAX_NICE, base() + max(0, increment))


def lower_this_thread(increment: int) -> None:
    """Lower the calling thread's priority by `increment` from the collector's (Linux)."""
    if increment <= 0 or not sys.platform.startswith("linux"):
        return
    _set(threading.get_native_id(), lowered(increment))


def lower_this_process(nice: int) -> None:
    """Set the calling process's nice value to `nice`, every thread it has (on Linux a
    priority is a thread's: imports may have started some) and so every thread it starts
    after. Never higher: an unprivileged process cannot raise its priority back."""
    nice = min(MAX_NICE, nice)
    if sys.platform.startswith("linux"):
        try:
            threads = [int(tid) for tid in os.listdir("/proc/self/task")]
        except OSError:
            threads = [0]
        for tid in threads:
            _set(tid, nice)
    else:
        _set(0, nice)


def _set(who: int, nice: int) -> None:
    try:
        if os.getpriority(os.PRIO_PROCESS, who) < nice:
            os.setpriority(os.PRIO_PROCESS, who, nice)
    except OSError as exc:
        log.warning("could not lower the judge's CPU priority (--judge-nice): %s", exc)
