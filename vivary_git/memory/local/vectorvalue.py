"""A stored vector's value in `refs/vivary/cache` (chunk kind `vectors`): a float32 scale, then one int8
code per component, and the check every value read back passes (`value_problem`). Pure Python and no
other module of the package, so the cache's own checks (`store/read.py`) can use it.
"""

from __future__ import annotations

import math
import struct

__all__ = ["KIND", "MAX_DIM", "VECTOR_FORMAT", "value_problem"]

KIND = "vectors"  # the chunk kind in refs/vivary/cache
VECTOR_FORMAT = 1  # bump when the encoding below changes: it is in every key, so old vectors are never misread
MAX_DIM = 4096
_SCALE = struct.Struct("<f")
_LEVELS = 127
# A unit vector of `dim` components has its largest at least 1/sqrt(dim) and at most 1: its scale is in
# [1 / (127 sqrt(MAX_DIM)), 1/127], with room for rounding.
_MIN_SCALE = 1.0 / (_LEVELS * math.sqrt(MAX_DIM)) * 0.99
_MAX_SCALE = 1.0 / _LEVELS * 1.01


def value_problem(value: bytes) -> str | None:
    """What makes `value` not a stored vector, or None. Pure Python, no numpy: cheap enough to run on
    every vector `sync fetch` adopts (a C-level scan of the bytes, one float unpacked)."""
    dim = len(value) - _SCALE.size
    if not 1 <= dim <= MAX_DIM:
        return f"is {len(value)} bytes, not a scale and 1 to {MAX_DIM} components"
    (scale,) = _SCALE.unpack_from(value)
    if not (math.isfinite(scale) and _MIN_SCALE <= scale <= _MAX_SCALE):
        return "has a scale out of range"
    # The codes are searched where they start, not copied out first (sync fetch checks every vector).
    if value.find(b"\x80", _SCALE.size) >= 0:
        return "holds the code -128, which is never written"
    if value.find(b"\x7f", _SCALE.size) < 0 and value.find(b"\x81", _SCALE.size) < 0:
        return "has no component at full scale (+-127)"
    return None
