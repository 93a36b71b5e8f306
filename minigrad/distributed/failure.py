"""One rank fails, all end: without this, an exception on one process leaves the others
waiting in their next all_reduce for a message that never comes.

MPI's launcher ends the whole run when a process dies of a signal, but a Python exception only
ends the interpreter's main program, and mpi4py's exit then waits for the others to finish too.
So while a process group is up, sys.excepthook prints the traceback as usual, then a line
naming the rank and the exception, and calls MPI_Abort, which makes mpiexec end every process
of the run with a non-zero exit. (A rank that calls sys.exit() or returns early while others
still wait in a collective is not an exception: the others wait, as they would in torch.)
"""

import sys

_previous = None  # the excepthook in place before the process group was set up


def end_all_on_exception(group):
    """Install the hook for `group` (process_group.init_process_group)."""
    global _previous
    if group.size == 1:  # nothing else to end: Python's own handling is the clearest
        return
    _previous = sys.excepthook

    def end_all(kind, value, traceback):
        _previous(kind, value, traceback)
        print(
            f"minigrad.distributed: rank {group.rank} of {group.size} failed with "
            f"{kind.__name__}: {value}; ending all {group.size} processes (MPI_Abort)",
            file=sys.stderr,
            flush=True,
        )
        sys.stdout.flush()
        group.comm.Abort(1)

    sys.excepthook = end_all


def restore_excepthook():
    """Put back the excepthook that was there before (destroy_process_group)."""
    global _previous
    if _previous is not None:
        sys.excepthook, _previous = _previous, None
