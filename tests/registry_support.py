"""Counting how often registered metrics are computed on all rows: one helper for the tests that need it."""
import dataclasses

from calib_core.metrics import registry


def count_computes(monkeypatch, keys) -> list[str]:
    """Replace the registry's entries ``keys`` by ones that record their key in the returned list on each
    ``compute`` (the estimate on all rows), for the rest of the test."""
    calls: list[str] = []

    def counted(spec):
        def compute(p, y, b, s):
            calls.append(spec.key)
            return spec.compute(p, y, b, s)
        return dataclasses.replace(spec, compute=compute) if spec.key in keys else spec

    monkeypatch.setattr(registry, "METRICS", [counted(spec) for spec in registry.METRICS])
    return calls
