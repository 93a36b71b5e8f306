"""The ONNX graph being built: nodes, constants, and the shape of every value, axis by axis.

An axis of a value is a dim: (size, atoms). `size` is its size in the traced run; `atoms` names
the 1-element int64 tensors of the graph (each a dynamic axis read with Shape) whose product,
times a fixed factor, is the axis's size at any run. A static axis has no atoms. Reshape and the
layers that build shapes ask for a dim's runtime size (`dim_tensor`), so a shape is baked in as a
constant only where no axis that the caller declared dynamic flows into it.
"""

import math

import numpy as np

INT64_MAX = 2**63 - 1


class UnsupportedOperatorError(RuntimeError):
    """An op or layer that minigrad.onnx cannot write (raised before any file is written)."""


def static(size):
    return (int(size), ())


def is_dynamic(dim):
    return bool(dim[1])


class Graph:
    """Collects ONNX nodes and initializers; names are unique; `dims[name]` is each value's dims."""

    def __init__(self, onnx, opset):
        self.onnx, self.opset = onnx, opset
        self.nodes, self.initializers, self.dims = [], [], {}
        self.atom_sizes = {}  # atom name -> its size in the traced run
        self._count = 0
        self._ints = {}

    def name(self, hint):
        self._count += 1
        return f"{hint}_{self._count}"

    def node(self, op_type, inputs, outputs=1, **attributes):
        """Add a node; returns its output name (a list of names when outputs > 1)."""
        names = [self.name(op_type) for _ in range(outputs)]
        self.nodes.append(self.onnx.helper.make_node(op_type, list(inputs), names, **attributes))
        return names if outputs > 1 else names[0]

    def constant(self, array, hint="const"):
        array = np.asarray(array)
        name = self.name(hint)
        self.initializers.append(self.onnx.numpy_helper.from_array(array, name))
        self.dims[name] = [static(size) for size in array.shape]
        return name

    def ints(self, values):
        """A 1-D int64 constant (shared between the nodes that need the same one)."""
        key = tuple(int(v) for v in values)
        if key not in self._ints:
            self._ints[key] = self.constant(np.array(key, np.int64), "ints")
        return self._ints[key]

    def scalar(self, value, dtype):
        return self.constant(np.array(value, dtype), "scalar")

    # -- dims ---------------------------------------------------------------------------------
    def atom(self, value, axis, size=None):
        """A new atom: the runtime size of `value`'s axis (`size` in the traced run, by default
        its dim's); the dim that it alone makes."""
        size = self.dims[value][axis][0] if size is None else int(size)
        name = self.node("Shape", [value], start=axis, end=axis + 1)
        self.atom_sizes[name] = size
        return (size, (name,))

    def dim_tensor(self, dim):
        """The runtime size of `dim` as a 1-element int64 tensor."""
        size, atoms = dim
        if not atoms:
            return self.ints([size])
        product = atoms[0]
        for atom in atoms[1:]:
            product = self.node("Mul", [product, atom])
        factor = size // math.prod(self.atom_sizes[a] for a in atoms)
        return product if factor == 1 else self.node("Mul", [product, self.ints([factor])])

    def shape_tensor(self, dims):
        if not any(is_dynamic(d) for d in dims):
            return self.ints([d[0] for d in dims])
        return self.node("Concat", [self.dim_tensor(d) for d in dims], axis=0)

    def fresh_dims(self, value, shape, like=()):
        """dims for `value` of `shape`: each axis whose size matches `like`'s dim at that place
        takes it; the other axes are static unless marked in like as None -> a new atom."""
        dims = []
        for axis, size in enumerate(shape):
            known = like[axis] if axis < len(like) else static(size)
            if known is None:
                known = self.atom(value, axis, size) if size != 1 else static(1)
            dims.append(known if known[0] == size else static(size))
        return dims

    # -- shape ops used by several converters -------------------------------------------------
    def reshape(self, x, shape):
        """Reshape x to `shape` (the traced sizes), keeping the dynamic axes dynamic."""
        in_dims = self.dims[x]
        out_dims = reshape_dims(in_dims, shape, self.atom_sizes)
        copied = 0
        while copied < min(len(in_dims), len(shape)) and out_dims[copied] == in_dims[copied]:
            copied += 1
        later = [d for d in out_dims[copied:] if is_dynamic(d)]
        if len(later) <= 1:
            pieces = [0] * copied + [-1 if is_dynamic(d) else d[0] for d in out_dims[copied:]]
            target = self.ints(pieces)
        else:
            target = self.shape_tensor(out_dims)
        y = self.node("Reshape", [x, target])
        self.dims[y] = out_dims
        return y

    def transpose(self, x, perm):
        y = self.node("Transpose", [x], perm=list(perm))
        self.dims[y] = [self.dims[x][p] for p in perm]
        return y

    def unsqueeze(self, x, axes):
        y = self.node("Unsqueeze", [x, self.ints(axes)])
        dims = list(self.dims[x])
        for axis in sorted(a % (len(dims) + len(axes)) for a in axes):
            dims.insert(axis, static(1))
        self.dims[y] = dims
        return y

    def same(self, op_type, inputs, like, **attributes):
        """A node whose output has the dims of `like` (elementwise ops)."""
        y = self.node(op_type, inputs, **attributes)
        self.dims[y] = list(self.dims[like])
        return y

    def broadcast(self, op_type, a, b, **attributes):
        y = self.node(op_type, [a, b], **attributes)
        self.dims[y] = broadcast_dims(self.dims[a], self.dims[b])
        return y


def broadcast_dims(a, b):
    """numpy broadcasting of two dims lists: a size-1 axis takes the other's dim."""
    n = max(len(a), len(b))
    a = [static(1)] * (n - len(a)) + list(a)
    b = [static(1)] * (n - len(b)) + list(b)
    return [y if x[0] == 1 else x if y[0] == 1 or is_dynamic(x) else y for x, y in zip(a, b)]


def reshape_dims(in_dims, shape, sizes):
    """The dims of a reshape of `in_dims` to `shape`: the leading axes that stay are kept; the
    atoms of the others go where their sizes fit (each to an axis of its own size, else all to
    one axis their product divides, else each to the first axis its size divides). sizes: each
    atom's size in the traced run."""
    shape = [int(s) for s in shape]
    out = [None] * len(shape)
    copied = 0
    while (
        copied < min(len(in_dims), len(shape))
        and in_dims[copied][0] == shape[copied]
        and all(out[i] is not None for i in range(copied))
    ):
        out[copied] = in_dims[copied]
        copied += 1
    atoms = [a for d in in_dims[copied:] for a in d[1]]
    free = list(range(copied, len(shape)))
    assigned = {j: [] for j in free}
    if atoms:
        exact, taken = {}, set()
        for a in atoms:
            j = next((j for j in free if j not in taken and shape[j] == sizes[a]), None)
            if j is None:
                break
            exact[a], _ = j, taken.add(j)
        if len(exact) == len(atoms):
            for a, j in exact.items():
                assigned[j].append(a)
        else:
            product = math.prod(sizes[a] for a in atoms)
            j = next((j for j in free if product and shape[j] % product == 0), None)
            if j is not None:
                assigned[j] = list(atoms)
            else:
                for a in atoms:
                    j = next((j for j in free if sizes[a] and shape[j] % sizes[a] == 0), None)
                    if j is not None:
                        assigned[j].append(a)
    for j in free:
        out[j] = (shape[j], tuple(assigned[j]))
    return out
