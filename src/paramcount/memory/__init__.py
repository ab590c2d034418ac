"""Memory and compute planning: weights by precision, KV cache, training, and fit on a GPU.

    >>> from paramcount.memory import inference, fit
    >>> plan = inference("meta-llama/Llama-2-13b-hf", "int4", context=4096)
    >>> [t.key for t in plan.terms]
    ['weights', 'kv_cache', 'activations', 'overhead']
    >>> fit("meta-llama/Llama-2-13b-hf", "rtx3060", context=4096).row("int4").fits
    True

Nothing here imports torch, numpy or rich (``import paramcount`` does not import this package
at all). The functions are bound here eagerly: ``fit``, ``weights``, ``kv_cache`` and ``lora``
share their modules' names, and binding them at import keeps ``paramcount.memory.fit`` the
function however the modules are imported later.
"""

from .context.kv_cache import attention_layout
from .context.kv_cache import kv_cache as kv_cache
from .core.gpus import GPU, GPUS, gpu
from .core.overhead import Overhead
from .core.plan import Plan
from .core.terms import Term
from .fit import Fit, Overview, overview
from .fit import fit as fit
from .runtimes import inference
from .runtimes.transformers.plan import InferencePlanner
from .training.lora import lora as lora
from .training.optimizer import training
from .training.plan import TrainingPlanner, train
from .training.saved import activations
from .weights.base import SCHEMES
from .weights.schemes import weights as weights

__all__ = [
    "GPU",
    "GPUS",
    "SCHEMES",
    "Fit",
    "InferencePlanner",
    "Overhead",
    "Overview",
    "Plan",
    "Term",
    "TrainingPlanner",
    "activations",
    "attention_layout",
    "fit",
    "gpu",
    "inference",
    "kv_cache",
    "lora",
    "overview",
    "train",
    "training",
    "weights",
]
