"""Our :class:`QuantileSketch` against Apache DataSketches' KLL sketch on the streaming engine's workload (issue 15).

The streaming engine (:func:`calib_core.engines.streaming.stream_metrics`,
every metric exact) keeps one sketch per value set in pass 1: the top-label
confidences (with correctness), each class column (with ``label == k``) and
each class column above the TACE threshold (:func:`calib_core.engines.stats._value_sets`),
i.e. ``2K + 1`` sketches, fed in blocks of ``2**17 / K`` rows. After pass 1 it
asks each sketch for *brackets* around the ``np.array_split`` run-end ranks
(pass 2 collects exactly the values inside them, so a bracket must hold its
order statistic) and for 8192 quantiles (KS regions; any cut points work).

Part 1 (one value set, the class-0 column of the ``bench_scale.py`` table,
Dirichlet(0.3) over 10 classes, in the engine's blocks) reports per sketch:
update time (best of ``--repeat`` runs), merge time (8 partition sketches merged, as Dask does), the
engine's pass-1 queries, memory, the observed largest rank error of
``quantile`` against the exact ranks, the stated error, and the brackets
around the 15 run-end ranks: whether each holds its order statistic and how
many values lie inside (what pass 2 keeps). For KLL the bracket is
``quantile(r -/+ eps N)`` with ``eps`` its stated normalised rank error (99 %
confidence, not a certainty).

Part 2 counts, over fresh KLL sketches of fresh data, how often such a
bracket misses its order statistic. Part 3 feeds all ``2K + 1`` sketches of
the engine, block by block, as pass 1 of ``bench_scale.py --full`` does.

Run: ``python bench/bench_sketch.py`` (5M and 20M values, part 2 at 5M rows;
needs ``pip install datasketches``) or ``--sizes 1000000 --rows 500000`` for a
short run.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from calib_core.engines.sketch import DEFAULT_SKETCH_CAPACITY, QuantileSketch, _run_end_ranks  # noqa: E402
from calib_core.engines.stats import _BLOCK_VALUES, _top_label, _value_sets  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import workload  # noqa: E402  (the bench table's rows)

try:
    from datasketches import kll_doubles_sketch
except ImportError:  # pragma: no cover - the bench needs it
    sys.exit("bench_sketch.py needs `pip install datasketches`.")

N_CLASSES = 10
N_BINS = 15
KS_REGIONS = 8192
THRESHOLD = 0.01


def blocks(n_rows: int, block_rows: int):
    for probs, labels in workload(n_rows, N_CLASSES):
        for start in range(0, probs.shape[0], block_rows):
            yield probs[start:start + block_rows], labels[start:start + block_rows]


# -- the two sketches behind one interface ----------------------------------------------------------------

class Ours:
    name = f"QuantileSketch(capacity={DEFAULT_SKETCH_CAPACITY})"

    def __init__(self):
        self.sketch = QuantileSketch(DEFAULT_SKETCH_CAPACITY)

    def update(self, values, targets):
        self.sketch.update(values, targets)

    def merged(self, others):
        out = others[0].sketch
        for other in others[1:]:
            out = out.merge(other.sketch)
        wrapped = Ours()
        wrapped.sketch = out
        return wrapped

    def n(self):
        return self.sketch.n

    def quantile(self, ranks):
        return self.sketch.quantile(ranks)

    def brackets(self, ranks):
        return self.sketch.brackets(ranks)

    def stated_error(self):
        return self.sketch.rank_error  # certain (tracked), in rows

    def memory(self):
        return self.sketch.n_items * 5 * 8


class KLL:
    def __init__(self, k: int):
        self.k = k
        self.name = f"KLL(k={k})"
        self.sketch = kll_doubles_sketch(k)

    def update(self, values, targets):  # KLL keeps values only: no target sums, no spans
        self.sketch.update(values)

    def merged(self, others):
        out = KLL(self.k)
        for other in others:
            out.sketch.merge(other.sketch)
        return out

    def n(self):
        return self.sketch.n

    def quantile(self, ranks):
        n = self.sketch.n
        return np.asarray(self.sketch.get_quantiles(np.clip(np.asarray(ranks, dtype=np.float64) / n, 0.0, 1.0)))

    def brackets(self, ranks):
        error = self.stated_error()
        ranks = np.asarray(ranks, dtype=np.float64)
        # As QuantileSketch.brackets: open-ended where r -/+ eps N leaves 1..N (KLL need not keep its maximum).
        low = np.where(ranks - error >= 1, self.quantile(ranks - error), -np.inf)
        high = np.where(ranks + error <= self.sketch.n, self.quantile(ranks + error), np.inf)
        return low, high

    def stated_error(self):
        return self.sketch.normalized_rank_error(False) * self.sketch.n  # 99 % confidence, in rows

    def memory(self):
        return self.sketch.num_retained * 8


def makers(ks):
    return [Ours] + [lambda k=k: KLL(k) for k in ks]


# -- part 1 -----------------------------------------------------------------------------------------------

def one_set(n_values: int, ks, repeat: int, parts: int = 8) -> None:
    block_rows = _BLOCK_VALUES // N_CLASSES
    pieces = [(p[:, 0].copy(), (l == 0).astype(np.float64)) for p, l in blocks(n_values, block_rows)]
    exact = np.sort(np.concatenate([v for v, _ in pieces]))
    ranks = _run_end_ranks(n_values, N_BINS)
    grid = np.unique(np.concatenate([ranks, np.linspace(1, n_values, 2001).round()]))
    print(f"\n== one value set: class-0 column, {n_values:,} values in blocks of {block_rows:,} ==")
    print(f"{'sketch':28s} {'update':>8s} {'ns/val':>7s} {'merge 8':>8s} {'queries':>8s} {'memory':>9s} "
          f"{'max err':>8s} {'stated':>8s} {'brackets held':>13s} {'inside (max)':>12s}")
    for make in makers(ks):
        update = float("inf")
        for _ in range(repeat):
            sketch = make()
            start = time.perf_counter()
            for values, targets in pieces:
                sketch.update(values, targets)
            update = min(update, time.perf_counter() - start)
        # Merge: the same values as `parts` partition sketches (as Dask builds them), then merged.
        partials = [make() for _ in range(parts)]
        for i, (values, targets) in enumerate(pieces):
            partials[i * parts // len(pieces)].update(values, targets)
        start = time.perf_counter()
        merged = partials[0].merged(partials)
        merge = time.perf_counter() - start
        # Queries of pass 1 -> 2: brackets around the run-end ranks and the KS cut points.
        start = time.perf_counter()
        sketch.brackets(ranks)
        sketch.quantile(np.linspace(1, n_values, KS_REGIONS))
        queries = time.perf_counter() - start
        worst = 0.0
        held, inside = [], []
        for s in (sketch, merged):
            q = s.quantile(grid)
            low = np.searchsorted(exact, q, side="left") + 1   # true ranks of q: low..high
            high = np.searchsorted(exact, q, side="right")
            worst = max(worst, float(np.max(np.maximum(0, np.maximum(low - grid, grid - high)))))
            a, b = s.brackets(ranks)
            below_a = np.searchsorted(exact, a, side="left")    # #{v < a}
            upto_b = np.searchsorted(exact, b, side="right")    # #{v <= b}
            held.append(int(np.sum((below_a < ranks) & (ranks <= upto_b))))
            inside.append(int(np.max(upto_b - below_a)))
        print(f"{sketch.name:28s} {update:7.2f}s {update / n_values * 1e9:7.0f} {merge:7.3f}s {queries:7.3f}s "
              f"{sketch.memory() / 2**10:7.0f}KB {worst / n_values:8.2e} {sketch.stated_error() / n_values:8.2e} "
              f"{min(held):>6d}/{ranks.size:<6d} {max(inside):12,d}")


# -- part 2 -----------------------------------------------------------------------------------------------

def bracket_misses(n_values: int, trials: int, ks) -> None:
    """How often a KLL bracket ``quantile(r -/+ eps N)`` misses its order statistic (fresh sketch, fresh data)."""
    ranks = _run_end_ranks(n_values, N_BINS)
    print(f"\n== KLL brackets over {trials} trials of {n_values:,} values ({ranks.size} run-end ranks each) ==")
    for k in ks:
        missed_ranks = missed_trials = 0
        worst = 0.0
        rng = np.random.default_rng(1)
        for _ in range(trials):
            values = rng.dirichlet(np.full(N_CLASSES, 0.3), size=n_values)[:, 0]
            sketch = KLL(k)
            for start in range(0, n_values, _BLOCK_VALUES // N_CLASSES):
                sketch.update(values[start:start + _BLOCK_VALUES // N_CLASSES], None)
            exact = np.sort(values)
            a, b = sketch.brackets(ranks)
            held = (np.searchsorted(exact, a, side="left") < ranks) & (ranks <= np.searchsorted(exact, b, side="right"))
            missed_ranks += int(np.sum(~held))
            missed_trials += int(not held.all())
            q = sketch.quantile(ranks)
            error = np.maximum(0, np.maximum(np.searchsorted(exact, q, side="left") + 1 - ranks,
                                             ranks - np.searchsorted(exact, q, side="right")))
            worst = max(worst, float(error.max()) / n_values)
        print(f"KLL(k={k}): {missed_ranks} of {trials * ranks.size} brackets missed, in {missed_trials} of {trials} "
              f"runs; largest observed rank error {worst:.2e} (stated {KLL(k).sketch.normalized_rank_error(False):.2e})")


# -- part 3 -----------------------------------------------------------------------------------------------

def engine_pass(n_rows: int, ks, repeat: int) -> None:
    block_rows = _BLOCK_VALUES // N_CLASSES
    data = list(blocks(n_rows, block_rows))
    sets = []
    for probs, labels in data:
        confidence, correct = _top_label(probs, labels)
        columns = np.asfortranarray(probs)
        sets.append(list(_value_sets(columns, labels, confidence, correct, THRESHOLD, ("top", "class", "above"))))
    n_values = sum(v.size for block in sets for _, v, _ in block)
    n_sketches = len(sets[0])
    print(f"\n== the engine's pass 1: {n_rows:,} rows x {N_CLASSES} classes, {n_sketches} sketches "
          f"(top, class k, above k), {n_values:,} values ==")
    for make in makers(ks):
        update = float("inf")
        for _ in range(repeat):
            sketches = {}
            start = time.perf_counter()
            for block in sets:
                for key, values, targets in block:
                    if key not in sketches:
                        sketches[key] = make()
                    sketches[key].update(values, targets)
            update = min(update, time.perf_counter() - start)
        memory = sum(s.memory() for s in sketches.values())
        inside = 0.0
        for s in sketches.values():
            inside += 4.0 * s.stated_error() * _run_end_ranks(s.n(), N_BINS).size if isinstance(s, Ours) else \
                2.0 * s.stated_error() * _run_end_ranks(s.n(), N_BINS).size
        print(f"{sketches['top'].name:28s} update {update:6.2f}s ({update / n_values * 1e9:.0f} ns/value), "
              f"memory {memory / 2**20:.1f} MiB, stated bracket budget {inside:,.0f} values")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[5_000_000, 20_000_000],
                        help="values of the one-set part (default 5M and 20M)")
    parser.add_argument("--rows", type=int, default=5_000_000, help="rows of the engine part (default 5M)")
    parser.add_argument("--k", type=int, nargs="+", default=[200, 2048], help="KLL k values (default 200 2048)")
    parser.add_argument("--trials", type=int, default=200, help="KLL bracket trials (default 200, of 200,000 values)")
    parser.add_argument("--repeat", type=int, default=3, help="update timings: best of this many runs (default 3)")
    args = parser.parse_args()
    for size in args.sizes:
        one_set(size, args.k, args.repeat)
    if args.trials:
        bracket_misses(200_000, args.trials, args.k)
    if args.rows:
        engine_pass(args.rows, args.k, args.repeat)


if __name__ == "__main__":
    main()
