"""Freed arrays leave the server's process, also those freed in Streamlit's script threads (issue 30, item 8).

glibc raises its mmap threshold to the size of each large block freed, so
after the first one, arrays come from the arena of the thread that made them;
``malloc_trim`` (the trimming thread) returns the free blocks inside an arena
but not the free top of a thread's arena. The server kept +293 MiB after six
visitors had left and every cache was empty, with no array reachable from
Python. :func:`studio.memory.start_trimming` now bounds glibc's arenas and thresholds
(:func:`studio.memory.bound_allocator`); this runs a visitor-like workload
(arrays of 0.1-24 MB made and freed in short-lived threads, as Streamlit runs
each script run) in a fresh process and checks the resident size comes back.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from studio import memory

ROOT = Path(__file__).resolve().parents[2]

_WORKLOAD = """
import sys, threading
from pathlib import Path
import numpy as np
from studio import memory

def rss_mib():
    line = next(l for l in Path("/proc/self/status").read_text().splitlines() if l.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024

def visitor(seed):
    rng = np.random.default_rng(seed)
    kept = []
    for _ in range(16):
        kept.append(np.ones(int(rng.integers(12_000, 3_000_000))))
        if len(kept) > 4:
            kept.pop(int(rng.integers(0, len(kept))))
    kept.clear()

memory.start_trimming(interval=3600.0)
start = rss_mib()
for round_ in range(2):
    threads = [threading.Thread(target=visitor, args=(10 * round_ + i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
memory.release_freed_memory()
print(rss_mib() - start)
"""


def _glibc() -> bool:
    return sys.platform.startswith("linux") and memory._malloc_trim() is not None


@pytest.mark.skipif(not _glibc(), reason="glibc's arenas and malloc_trim only")
def test_memory_freed_in_script_threads_goes_back_to_the_system():
    result = subprocess.run([sys.executable, "-c", _WORKLOAD], cwd=ROOT, capture_output=True, text=True,
                            timeout=60, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr
    growth = float(result.stdout.strip().splitlines()[-1])
    # Four threads held at most 5 arrays of at most 24 MB each at a time (up to 480 MB); all are freed.
    assert growth < 24, f"{growth:.0f} MiB stayed resident after every array was freed and memory trimmed"


@pytest.mark.skipif(not _glibc(), reason="glibc's mallopt only")
def test_bound_allocator_leaves_a_threshold_the_host_set_itself():
    chosen = memory.bound_allocator({"MALLOC_MMAP_THRESHOLD_": "131072"})
    assert memory._M_MMAP_THRESHOLD not in chosen
    assert chosen[memory._M_TRIM_THRESHOLD] == memory.MALLOC_THRESHOLD_BYTES
    tuned = memory.bound_allocator({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=65536"})
    assert memory._M_TRIM_THRESHOLD not in tuned
    assert tuned[memory._M_MMAP_THRESHOLD] == memory.MALLOC_THRESHOLD_BYTES
    assert memory._M_ARENA_MAX not in memory.bound_allocator({"MALLOC_ARENA_MAX": "4"})
