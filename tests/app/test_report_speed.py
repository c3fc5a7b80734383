"""``report --html``'s time against ``report --json`` (issue 29, item 3): what the report pipeline does to keep it."""
import numpy as np
import pytest

threadpoolctl = pytest.importorskip("threadpoolctl")


def blas_threads() -> int:
    """The most threads any loaded BLAS library would use now (1 without one)."""
    return max([info["num_threads"] for info in threadpoolctl.threadpool_info() if info["user_api"] == "blas"],
               default=1)


def test_html_report_runs_blas_on_one_thread(tmp_path, monkeypatch, capsys, request):
    """The report makes thousands of small BLAS products (one per resample: the AUROC interval's rank sum), and
    for each OpenBLAS woke its threads to spin: 8.0 s CPU for that interval at 12,000 rows, 0.9 s on one thread.
    ``report --html`` now builds the report with BLAS on one thread, and gives the threads back afterwards."""
    from calib_core.engines.cli import main
    from studio import report

    np.dot(np.ones(3), np.ones(3))  # BLAS loaded
    # A test process runs BLAS on one thread (tests/blas_support.py): give it two, as a command line has on 2 CPUs.
    limits = threadpoolctl.threadpool_limits(limits=2, user_api="blas")
    request.addfinalizer(limits.restore_original_limits)
    before = blas_threads()
    assert before == 2
    seen = []

    def recording(*args, **kwargs):
        seen.append(blas_threads())
        return "<html></html>"

    monkeypatch.setattr(report, "build_report", recording)
    path = tmp_path / "p.csv"
    path.write_text("label,p_a,p_b\n0,0.9,0.1\n1,0.2,0.8\n0,0.6,0.4\n1,0.3,0.7\n")
    assert main(["report", str(path), "--html", str(tmp_path / "out.html")]) == 0
    assert seen == [1]
    assert blas_threads() == before
