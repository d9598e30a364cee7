# SPDX-License-Identifier: Apache-2.0
"""The two enums of InitOptions, with the C library's values.

BackendKind has a member named None, as in C++; since ``BackendKind.None``
is not valid Python, ``BackendKind.None_`` is an alias of the same member
(``getattr(BackendKind, "None")`` also works).
"""
import enum


class ProfilingEngine(enum.IntEnum):
    """How deep a session profiles, cheapest first; each level adds to the one below."""

    Monitor = 0  # device and host telemetry only, no CUPTI (the default)
    Trace = 1  # + kernels, copies, memsets and syncs
    PcSampling = 2  # + program-counter stall sampling
    SassMetrics = 3  # + per-instruction SASS counters
    RangeProfiler = 4  # + hardware counters per scope
    Deep = 5  # PcSampling and SassMetrics in one run


# The functional form is the only way to name a member "None".
BackendKind = enum.IntEnum(
    "BackendKind",
    [("Auto", 0), ("Nvidia", 1), ("Amd", 2), ("None", 3), ("None_", 3)],
    module=__name__,
    qualname="BackendKind",
)
BackendKind.__doc__ = """Which GPU vendor's backend a session uses: Auto picks what the machine
has; None_ (the member None) runs no GPU backend, for stub and test sessions."""


def coerce(cls, value, field):
    """Returns value as a member of cls: a member, its name (any letter case)
    or its integer value. Raises TypeError for other types (a member of the
    other enum included) and ValueError for an unknown name or value."""
    if isinstance(value, cls):
        return value
    names = ", ".join(m for m in cls.__members__ if not m.endswith("_"))
    if isinstance(value, str):
        for name, member in cls.__members__.items():
            if name.lower() == value.lower():
                return member
        raise ValueError("%s=%r is not one of %s" % (field, value, names))
    if isinstance(value, enum.Enum) or isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("%s must be a gpufl.%s, not %s" % (field, cls.__name__, type(value).__name__))
    try:
        return cls(value)
    except ValueError:
        raise ValueError("%s=%r is not one of %s (0..%d)"
                         % (field, value, names, len(cls) - 1)) from None
