"""strata: plan, cost, simulate and schedule distributed deep-learning training, from Python.

The same library as the `strata` command line, in-process (docs/python.md):

    >>> import strata
    >>> p = strata.plan("amp-gpt2", "p3.8xlarge:3+g4dn.12xlarge:1", gbs=32)
    >>> print(p.best.strategy, p.best.estimate.iteration_time_s)

Catalog: models(), hardware(), clusters(), strategy_keys(); inputs: Model, Cluster, Strategy; calls:
estimate(), plan(), simulate(), export(), allocate(). Every result has to_dict(), equal to the matching command's
--json. Bad input raises InputError (a ValueError) with the CLI's one-line message. help(strata.plan) lists the
options.
"""
from ._strata import (
    Baseline,
    Candidate,
    Cluster,
    Estimate,
    ExportFile,
    InputError,
    Model,
    Plan,
    Simulation,
    Strategy,
    clusters,
    estimate,
    export,
    hardware,
    models,
    plan,
    simulate,
    strategy_keys,
)

__all__ = [
    "Allocation", "Baseline", "Candidate", "Cluster", "Estimate", "ExportFile", "InputError", "Model", "Plan",
    "Simulation", "Strategy", "allocate", "clusters", "estimate", "export", "hardware", "models", "plan",
    "simulate", "strategy_keys",
]

_LAZY = {"allocate", "Allocation"}  # the scheduler, in strata._strata_sched: loaded on first use (links COIN-OR)


def __getattr__(name):
    if name in _LAZY:
        from . import _strata_sched

        value = getattr(_strata_sched, name)
        try:
            value.__module__ = __name__
        except (AttributeError, TypeError):
            pass
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | _LAZY)


# Show the public names as strata.X (help(), repr(), tracebacks), not strata._strata.X.
for _name in sorted(set(__all__) - _LAZY):
    try:
        globals()[_name].__module__ = __name__
    except (AttributeError, TypeError):
        pass
del _name
