"""DistributedDataParallel: the same model in every process (rank 0's weights, sent to the
others at construction), each process's backward on its own part of the batch, and the
gradients averaged over the processes before backward returns, so that every replica takes the
same optimizer step: the step one process would take on the whole batch.

    dist.init_process_group("mpi")
    model = DistributedDataParallel(Net())
    loss = loss_fn(model(x_of_this_rank), y_of_this_rank)
    loss.backward()                  # each p.grad: the mean over the ranks of their gradients
    optimizer.step()

How the averaging rides on backward: each parameter gets a gradient hook (register_hook), which
the walk calls with the parameter's gradient summed over its uses, just before adding it to
`.grad`. The parameters are cut into buckets (in reverse order of parameters(), the order in
which backward reaches them, at most bucket_cap_mb each, one dtype each); when every parameter
of a bucket has its gradient, the bucket's `.grad`s are packed into one array, summed over the
processes by one all_reduce, divided by the world size and unpacked. Buckets are reduced in
order on every rank, so the ranks' MPI calls match. What is averaged is the whole `.grad`
(gradients accumulated under no_sync() included), as in torch.
"""

import contextlib
import functools

import numpy as np

import minigrad as mg
from minigrad import distributed as dist
from minigrad.engine import grad_sinks

from ..module import Module

DEFAULT_BUCKET_CAP_MB = 25  # torch's


class _Bucket:
    """Parameters whose gradients go to the other processes in one message."""

    def __init__(self, indices):
        self.indices, self.ready = indices, 0


def _buckets(parameters, cap_bytes):
    """Indices of `parameters` cut into buckets, from the last parameter to the first, a new
    bucket at each change of dtype or past cap_bytes."""
    buckets, current, size, dtype = [], [], 0, None
    for index in reversed(range(len(parameters))):
        array = parameters[index]._data
        if current and (array.dtype != dtype or size + array.nbytes > cap_bytes):
            buckets.append(_Bucket(current))
            current, size = [], 0
        current.append(index)
        size, dtype = size + array.nbytes, array.dtype
    if current:
        buckets.append(_Bucket(current))
    return buckets


class DistributedDataParallel(Module):
    """Wrap `module` so that backward averages its gradients over the processes of
    minigrad.distributed's group. The wrapped model is `.module` (its state_dict keys gain the
    prefix 'module.', as torch's). Rank 0's parameters and buffers are copied to every rank at
    construction; with broadcast_buffers (the default), rank 0's buffers again before each
    forward. Inside `no_sync()` (or with `require_backward_grad_sync = False`, as nanoGPT sets
    it) a forward's backward only accumulates locally; the next synchronised backward averages
    the sum. device_ids and output_device must be None (CPU); find_unused_parameters=True is
    refused (every parameter must get a gradient in each synchronised backward, or the next
    forward raises naming those that did not). check_reduction, gradient_as_bucket_view and
    static_graph are accepted and change nothing."""

    def __init__(
        self,
        module,
        device_ids=None,
        output_device=None,
        dim=0,
        broadcast_buffers=True,
        process_group=None,
        bucket_cap_mb=None,
        find_unused_parameters=False,
        check_reduction=False,
        gradient_as_bucket_view=False,
        static_graph=False,
    ):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(
                f"DistributedDataParallel: module must be an nn.Module; got {type(module).__name__}"
            )
        if device_ids is not None or output_device is not None:
            raise ValueError(
                "DistributedDataParallel: device_ids and output_device are for GPU modules and "
                f"must be None on the CPU; got device_ids={device_ids!r}, "
                f"output_device={output_device!r}"
            )
        if find_unused_parameters:
            raise ValueError(
                "DistributedDataParallel: find_unused_parameters=True is not supported; every "
                "parameter that requires grad must get a gradient in each backward"
            )
        if bucket_cap_mb is None:
            bucket_cap_mb = DEFAULT_BUCKET_CAP_MB
        if isinstance(bucket_cap_mb, bool) or not isinstance(bucket_cap_mb, (int, float)):
            raise TypeError(
                f"DistributedDataParallel: bucket_cap_mb must be a number; got {bucket_cap_mb!r}"
            )
        if not bucket_cap_mb > 0:
            raise ValueError(
                f"DistributedDataParallel: bucket_cap_mb must be > 0; got {bucket_cap_mb}"
            )
        self.world_size = dist.get_world_size(process_group)
        self.process_group = process_group
        self.module = module
        self.broadcast_buffers = broadcast_buffers
        self.require_backward_grad_sync = True
        self.dim = dim
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise ValueError(
                "DistributedDataParallel: the module has no parameter that requires grad, so "
                "there is nothing to average"
            )
        self._names = [name for name, _ in named]
        self._synced = [p for _, p in named]
        self._sync_from_rank_0(self._synced + list(module.buffers()))
        self._buckets = _buckets(self._synced, bucket_cap_mb * 1024 * 1024)
        self._bucket_of = {i: b for b in self._buckets for i in b.indices}
        self._next_bucket = 0  # the first bucket of this backward not yet reduced
        self._syncing = False  # the last forward asked for its backward to average
        self._reported = set()  # parameters whose gradient this backward has seen
        self._handles = [
            p.register_hook(functools.partial(self._gradient_ready, index))
            for index, p in enumerate(self._synced)
        ]

    def _sync_from_rank_0(self, tensors):
        if self.world_size > 1:
            for tensor in tensors:
                dist.broadcast(tensor, 0, group=self.process_group)

    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes of forwards made inside the block do not average: their gradients
        accumulate in this process, and the first synchronised backward after averages the
        sum."""
        previous, self.require_backward_grad_sync = self.require_backward_grad_sync, False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    def forward(self, *inputs, **kwargs):
        self._check_last_backward_finished()
        self._syncing = self.require_backward_grad_sync and self.world_size > 1
        if self.broadcast_buffers and self.world_size > 1:
            self._sync_from_rank_0(list(self.module.buffers()))
        return self.module(*inputs, **kwargs)

    def _check_last_backward_finished(self):
        if not self._reported:
            return
        missing = [name for i, name in enumerate(self._names) if i not in self._reported]
        raise RuntimeError(
            "DistributedDataParallel: the last backward gave no gradient to "
            f"{', '.join(missing)}, so the average of the gradients was not finished (every "
            "parameter that requires grad must be used in the loss)"
        )

    def _gradient_ready(self, index, grad):
        """The hook: parameter `index` gets `grad` added to its `.grad` after this returns."""
        if not self._syncing:
            return None
        if grad_sinks._state.held is not None:
            raise RuntimeError(
                "DistributedDataParallel: backward inside mg.parallel.forward_backward is not "
                "supported (the gradients are held until every part is done)"
            )
        self._reported.add(index)
        self._bucket_of[index].ready += 1
        replacement = None
        while self._next_bucket < len(self._buckets):
            bucket = self._buckets[self._next_bucket]
            if bucket.ready < len(bucket.indices):
                break
            reduced = self._reduce(bucket, index, grad._data)
            replacement = reduced if reduced is not None else replacement
            self._next_bucket += 1
        if self._next_bucket == len(self._buckets):  # this backward is done
            self._next_bucket, self._reported = 0, set()
            for bucket in self._buckets:
                bucket.ready = 0
        return replacement

    def _reduce(self, bucket, current, current_grad):
        """Average the bucket's `.grad`s over the processes. Parameter `current`'s `.grad` does
        not hold `current_grad` yet (the walk adds what the hook returns): its sum goes in the
        message, its `.grad` is zeroed and the average returned, for the walk to add."""
        params = [self._synced[i] for i in bucket.indices]
        flat = np.empty(sum(p._data.size for p in params), dtype=params[0]._data.dtype)
        start = 0
        for i, p in zip(bucket.indices, params):
            stop = start + p._data.size
            local = 0.0 if p.grad is None else p.grad._data
            if i == current:
                local = local + current_grad
            flat[start:stop] = np.reshape(local, -1) if np.ndim(local) else local
            start = stop
        total = mg.from_numpy(flat)
        dist.all_reduce(total, group=self.process_group)
        flat /= self.world_size
        replacement, start = None, 0
        for i, p in zip(bucket.indices, params):
            stop = start + p._data.size
            average = flat[start:stop].reshape(p._data.shape)
            start = stop
            if i != current:
                p.grad._data = average.copy()
                continue
            if p.grad is not None:
                p.grad._data = np.zeros_like(p.grad._data)
            replacement = mg.from_numpy(average.copy())
        return replacement
