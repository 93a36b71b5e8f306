"""`cached_njit(**options)`: numba.njit(cache=True, **options) for minigrad's kernels, with an
on-disk cache of minigrad's own (`KernelCache`). Every Numba kernel here is decorated with it.

What it adds to Numba's cache, for minigrad's kernels only (Numba itself, and every other
package's functions, are left as they are):
- somewhere to write from a read-only install. Numba 0.68 tries $NUMBA_CACHE_DIR, the source
  folder's __pycache__, then ~/.cache/numba (or $XDG_CACHE_HOME/numba); when none is writable,
  njit(cache=True) would raise "no locator available" at import. minigrad's kernels then cache
  in a per-user folder under the temp dir. A user's own NUMBA_CACHE_DIR comes first, as in Numba.
- a damaged cache file is a cache miss, not an error. A file damaged after Numba wrote it (a bad
  copy, a disk error) failed to unpickle on every later load: each run raised until the folder
  was deleted by hand. Now a failed load warns, deletes that kernel's index file (the next save
  starts a fresh index and overwrites the data file) and recompiles; if the index cannot be
  deleted, the error names the folder to delete.
"""

import os
import tempfile
import warnings

import numba
from numba.core.caching import CompileResultCacheImpl, FunctionCache, UserWideCacheLocator
from numba.core.dispatcher import Dispatcher


class _TempDirLocator(UserWideCacheLocator):
    """The last place to cache a kernel in: a per-user folder under the temp dir."""

    def __init__(self, py_func, py_file):
        super().__init__(py_func, py_file)
        user = os.getuid() if hasattr(os, "getuid") else os.environ.get("USERNAME", "user")
        folder = os.path.join(tempfile.gettempdir(), f"minigrad-numba-cache-{user}")
        self._cache_path = os.path.join(folder, self.get_suitable_cache_subpath(py_file))


class _KernelCacheImpl(CompileResultCacheImpl):
    _locator_classes = [*CompileResultCacheImpl._locator_classes, _TempDirLocator]


class KernelCache(FunctionCache):
    """Numba's cache of one function, found by _KernelCacheImpl's locators, where a file that
    fails to load is repaired and read as a miss (the function is compiled again)."""

    _impl_class = _KernelCacheImpl

    def load_overload(self, sig, target_context):
        try:
            return super().load_overload(sig, target_context)
        except Exception as error:
            self._forget_damaged(error)
            return None

    def _forget_damaged(self, error):
        index = self._cache_file._index_path
        try:
            if os.path.exists(index):
                os.remove(index)
        except OSError:
            raise RuntimeError(
                f"the Numba cache of {self._name} is damaged ({error!r}) and cannot be "
                f"repaired: delete the folder {self.cache_path}"
            ) from error
        warnings.warn(
            f"minigrad: recompiling {self._py_func.__qualname__}: its Numba cache file in "
            f"{self.cache_path} was damaged ({type(error).__name__}: {error})",
            RuntimeWarning,
        )


def cached_njit(**options):
    """A decorator: numba.njit(**options) whose compiled code is cached on disk in a
    KernelCache, as njit(cache=True) caches in Numba's own."""

    def decorate(function):
        dispatcher = numba.njit(**options)(function)
        if isinstance(dispatcher, Dispatcher):  # not a plain function (NUMBA_DISABLE_JIT=1)
            dispatcher._cache = KernelCache(function)
        return dispatcher

    return decorate
