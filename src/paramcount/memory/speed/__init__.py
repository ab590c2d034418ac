"""How fast a model runs: decode, prefill and time to first token, per runtime, over the memory plans.

:mod:`.bounds` holds the upper bounds (memory bandwidth and compute at their peaks); :mod:`.work`
what a token reads and computes, from the same tree and placement the memory plans use;
:mod:`.estimate` the estimates, each an efficiency factor (fitted on public measurements by
``tools/speed_calibration/fit.py``, kept in ``factors.json`` with its residuals) times a bound.
"""

from .bounds import Bound, decode, prefill, weights_read
from .estimate import RUNTIMES, Speed, speed

__all__ = ["RUNTIMES", "Bound", "Speed", "decode", "prefill", "speed", "weights_read"]
