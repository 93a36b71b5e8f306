"""atomic_file: every file minigrad writes (mg.save, mg.save_safetensors, mg.viz.render, the
examples' writers) goes to a temporary next to the target, renamed over it only once it is
complete and on disk, so a failed or killed write never destroys the previous file."""

import contextlib
import os
import re
import secrets
import stat

try:
    import fcntl  # POSIX: a save holds a lock on its temporary file, so others can tell it is alive
except ImportError:  # Windows: a file that is open cannot be deleted, which protects it as well
    fcntl = None


# -- writing: one temporary-file-and-rename writer ----------------------------------------------


def _temporary_name_pattern(name):
    """Names of the temporaries of target `name`: '.<name>.<8 random characters>.tmp'
    (the random part as this module and, before it, tempfile.mkstemp made it)."""
    return re.compile(re.escape(f".{name}.") + r"[a-z0-9_]{8}\.tmp")


def _lock(fd, blocking):
    """Take the exclusive lock of an open file; False if another holder has it (non-blocking)."""
    if fcntl is None:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except BlockingIOError:
        return False
    return True


def _remove_abandoned_temporaries(folder, name):
    """Delete temporaries of `name` left behind by a save that was killed before its rename.

    A live save keeps its temporary locked until the rename, and locks die with their process,
    so an unlocked temporary is abandoned. The lock is held while unlinking; a new save checks
    after locking that its file is still linked (see _create_temporary), so no live file is
    lost. Best effort: a temporary that cannot be removed is left for the next save.
    """
    pattern = _temporary_name_pattern(name)
    candidates = []
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        candidates = [
            entry.path
            for entry in entries
            if pattern.fullmatch(entry.name) and entry.is_file(follow_symlinks=False)
        ]
    for candidate in candidates:
        with contextlib.suppress(OSError):
            if fcntl is None:
                os.remove(candidate)  # fails while the file is open elsewhere
                continue
            fd = os.open(candidate, os.O_RDONLY | os.O_NOFOLLOW)
            try:
                if _lock(fd, blocking=False):
                    os.unlink(candidate)
            finally:
                os.close(fd)


def _create_temporary(folder, name, existing):
    """Create, lock and return (fd, path) of a new temporary for target `name` in `folder`.

    A new file gets mode 0o666 minus the umask, as open() would give it; when the target
    exists, the temporary takes its mode (and, where allowed, its owner) instead."""
    while True:
        temporary = os.path.join(folder, f".{name}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(
                temporary,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                0o600 if existing is not None else 0o666,
            )
        except FileExistsError:
            continue
        try:
            _lock(fd, blocking=True)
            if os.fstat(fd).st_nlink == 0:  # a cleaner took it between creation and lock: try again
                os.close(fd)
                continue
            if existing is not None and hasattr(os, "fchmod"):
                with contextlib.suppress(OSError):
                    os.fchown(fd, existing.st_uid, existing.st_gid)  # only root may: best effort
                os.fchmod(fd, stat.S_IMODE(existing.st_mode))
        except OSError:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.remove(temporary)
            raise
        return fd, temporary


def _fsync_folder(folder):
    """Make the rename itself durable (POSIX); not possible everywhere, hence best effort."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _naming(error, path):
    """The same kind of OSError, its message led by `path` (the file the user asked for, not the
    temporary), errno kept. Errors of other libraries' OSError subclasses pass unchanged."""
    if path in str(error) or type(error).__module__ != "builtins":
        return error
    named = type(error)(f"cannot write {path!r}: {error}")
    named.errno = error.errno
    return named


@contextlib.contextmanager
def atomic_file(path):
    """A binary file to write that takes the place of `path` only when the block ends without
    an error: a temporary '.<name>.<random>.tmp' in the same folder, flushed and fsynced, then
    renamed over `path`.

    - A failed write (bad value, full disk, exception) leaves an existing file untouched and
      removes the temporary; temporaries left by a killed save are removed by the next save
      of the same path.
    - A symlink at `path` is followed: its target is replaced and the link stays.
    - A new file gets the usual mode (0o666 minus the umask); a replaced file keeps its mode.
      A read-only existing file is refused, as open() would refuse it. (Hard links to the old
      file keep the old contents: that is what an atomic rename means.)
    - OSErrors name `path`. Used by mg.save, mg.viz.render and the examples' writers.
    """
    path = os.fspath(path)
    target = os.path.realpath(path)  # through symlinks, so the link is kept and its target written
    folder, name = os.path.split(target)
    if os.path.isdir(target):
        raise IsADirectoryError(f"cannot write {path!r}: it is a folder, expected a file path")
    if not os.path.isdir(folder):
        if os.path.exists(folder):
            raise NotADirectoryError(f"cannot write {path!r}: {folder!r} is not a folder")
        raise FileNotFoundError(f"cannot write {path!r}: the folder {folder!r} does not exist")
    try:
        existing = os.stat(target)
    except FileNotFoundError:
        existing = None
    # the rename would replace a pipe or device
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        raise OSError(
            f"cannot write {path!r}: it is not a regular file ({stat.filemode(existing.st_mode)}); "
            f"minigrad writes files by replacing them, which would remove it"
        )
    if existing is not None and not os.access(target, os.W_OK):
        raise PermissionError(
            f"cannot write {path!r}: the file is read-only (mode {stat.filemode(existing.st_mode)})"
        )
    _remove_abandoned_temporaries(folder, name)
    try:
        fd, temporary = _create_temporary(folder, name, existing)
    except OSError as error:
        raise _naming(error, path) from error
    try:
        with os.fdopen(fd, "wb") as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
            if fcntl is not None:
                os.replace(temporary, target)  # while still locked, so no cleaner can take it
        if fcntl is None:
            os.replace(temporary, target)  # Windows cannot rename a file that is open
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        if isinstance(error, OSError):
            raise _naming(error, path) from error
        raise
    _fsync_folder(folder)
