"""Inside the fallback's worker (fallback_worker.py): transformers builds the model on the meta
device, and its parameters go back as rows (name, shape, dtype), its ties as name pairs.

The request names the class, which the parent already checked against the classes transformers
maps for the model_type; a class outside them is refused here too.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from collections.abc import Iterator
from typing import Any

from ..errors import ParamcountError
from .fallback_bounds import TIMM

_built = [0, 0]  # modules built by the current request, and its budget


class _TooMany(BaseException):
    """Past the module budget: a BaseException, so that no ``except Exception`` in transformers
    takes it for a failure it may recover from."""


def build(request: dict[str, Any]) -> dict[str, Any]:
    """The rows of ``request['class']`` built from ``request['config']`` (and of its backbone)."""
    import transformers
    from transformers.utils import logging as hf_logging

    from .fallback_bounds import offline

    model_type, cls, base = request["model_type"], request["class"], request["base"]
    offline({"model_type": model_type, **request["config"]}, None)  # never reaches the Hub
    hf_logging.set_verbosity_error()
    budget = int(request["max_modules"])
    config = _config(transformers, model_type, request["config"])
    _no_hub(config)
    module = _instantiate(transformers, cls, config, budget, strict=cls != base)
    answer = {"version": transformers.__version__, **_rows(module)}
    prefix = getattr(module, "base_model_prefix", "")
    answer["prefix"] = prefix
    inside = any(n.startswith(prefix + ".") for n, _, _ in answer["params"]) if prefix else False
    if base != cls and not inside:
        answer["base"] = _rows(_instantiate(transformers, base, config, budget, strict=False))
    return answer


@contextlib.contextmanager
def _count_modules(budget: int) -> Iterator[None]:
    """Count every ``nn.Module`` built inside (the class's module already imported: modules an
    import builds are not the config's), and stop the build past ``budget``. The counter is taken
    off afterwards: a build run in a process that goes on building (a test's) must not
    leave a budget that later, unrelated modules run into."""
    import torch

    _built[:] = [0, budget]
    init = torch.nn.Module.__init__

    def counted(self: Any, *args: Any, **kwargs: Any) -> None:
        _built[0] += 1
        if _built[0] > _built[1]:
            raise _TooMany
        init(self, *args, **kwargs)

    torch.nn.Module.__init__ = counted
    try:
        yield
    finally:
        torch.nn.Module.__init__ = init


def _config(transformers: Any, model_type: str, kwargs: dict[str, Any]) -> Any:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return transformers.AutoConfig.for_model(model_type, **kwargs)
    except Exception as e:
        raise ParamcountError(f"transformers rejects this config: {_said(e)}") from None


def _no_hub(config: Any, depth: int = 0) -> None:
    """No backbone is fetched: a timm backbone is refused (timm resolves its names on the Hub),
    and ``use_pretrained_backbone`` is off in the config and every sub-config."""
    from transformers import PreTrainedConfig

    if getattr(config, "model_type", None) in TIMM or getattr(config, "use_timm_backbone", False):
        raise ParamcountError(
            "this model uses a timm backbone, which paramcount does not build (timm may fetch it from "
            "the Hub); give a transformers backbone_config instead",
            field="backbone_config",
        )
    if hasattr(config, "use_pretrained_backbone"):
        config.use_pretrained_backbone = False
    for value in vars(config).values():
        if isinstance(value, PreTrainedConfig) and depth < 8:
            _no_hub(value, depth + 1)


def _instantiate(transformers: Any, cls_name: str, config: Any, budget: int, strict: bool) -> Any:
    """The model on the meta device, stopped past ``budget`` modules. ``strict``: the class must
    be built from this config's class (transformers' own mapping may pair a config with another
    family's class)."""
    import torch

    try:
        cls = getattr(transformers, cls_name)
        config_class = getattr(cls, "config_class", None)
    except (ImportError, AttributeError) as e:  # a class whose backend (timm, torchaudio) is missing
        raise ParamcountError(f"transformers cannot build {cls_name} here: {_said(e, kind=False)}") from None
    if strict and config_class is not None and not isinstance(config, config_class):
        raise ParamcountError(
            f"{cls_name} is built from a {config_class.__name__}, not this {type(config).__name__}", field="class"
        )
    try:
        with _count_modules(budget), torch.device("meta"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with contextlib.redirect_stdout(io.StringIO()):
                return cls(config)
    except _TooMany:
        raise ParamcountError(
            f"transformers built more than {_built[1]:,} modules for {cls_name} and was stopped "
            "(layers × experts too large for the fallback)"
        ) from None
    except Exception as e:  # transformers' own validation of a config it cannot build
        raise ParamcountError(f"transformers could not build {cls_name}: {_said(e)}") from None


def _said(e: BaseException, kind: bool = True) -> str:
    text = " ".join(str(e).split())[:200]
    return f"{type(e).__name__}: {text}" if kind else text


def _rows(module: Any) -> dict[str, Any]:
    """Parameters (unique, in registration order), ties, and where the embedding tables are."""
    import torch

    from .live import _parameters

    params, ties = _parameters(module)
    embeddings = sorted(name for name, m in module.named_modules() if isinstance(m, torch.nn.Embedding))
    return {"class": type(module).__name__, "params": params, "ties": ties, "embeddings": embeddings}
