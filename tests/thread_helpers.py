"""Helpers the thread tests share (test_threads.py, test_parallel.py, io/test_atomic.py)."""

import threading


def run_in_threads(*functions):
    """Call each function on a thread of its own, all started before any is joined; raise the
    first exception any of them raised (in the main thread, where pytest sees it)."""
    errors, threads = [], []

    def guard(function):
        try:
            function()
        except BaseException as error:  # reported in the main thread
            errors.append(error)

    for function in functions:
        threads.append(threading.Thread(target=guard, args=(function,)))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
