"""A TorchDispatchMode that tracks the bytes of tensor storage alive at once, op by op."""

import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten


class Live(TorchDispatchMode):
    """``peak``: the most bytes of storage alive at once among the tensors ops created inside."""

    def __init__(self):
        super().__init__()
        self.refs, self.size, self.live, self.peak = {}, {}, 0, 0

    def _drop(self, key):
        self.refs[key] -= 1
        if not self.refs[key]:
            self.live -= self.size.pop(key)
            del self.refs[key]

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        inputs = {
            a.untyped_storage().data_ptr() for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)
        }
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            key = t.untyped_storage().data_ptr() if isinstance(t, torch.Tensor) else None
            if key is None or (key in inputs and key not in self.refs):  # not new: a view of an input
                continue
            if key not in self.refs:
                self.refs[key], self.size[key] = 0, t.untyped_storage().nbytes()
                self.live += self.size[key]
                self.peak = max(self.peak, self.live)
            self.refs[key] += 1
            weakref.finalize(t, self._drop, key)
        return out
