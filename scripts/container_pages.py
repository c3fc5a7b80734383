"""Open the app served at BASE_URL in headless Chromium (Debian's, as the browser tests do) and check the
Data page and two computational pages (Metrics, Reliability) on the default demo: each page is drawn,
its numbers or chart appear, and no exception box is shown. Prints each page's time; exit status 1 and
a screenshot in OUT_DIR on the first failure. Used by scripts/check_container.sh.

    python scripts/container_pages.py http://127.0.0.1:8516 [OUT_DIR]
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.e2e_support import (CHROMIUM, CHROMIUM_ARGS, DEFAULT_TIMEOUT_MS, DEFAULT_VIEWPORT,  # noqa: E402
                               assert_no_exception, wait_for_app)

PLOT_DRAWN = """() => { const c = document.querySelector("[data-testid='stPlotlyChart']");
                        return c && c.querySelectorAll('.js-plotly-plot g.trace path').length > 0; }"""


def _open_page(page, label: str) -> None:
    """Go to the page ``label`` through the sidebar (the session, and its demo, stay) and wait for it."""
    page.locator("[data-testid='stSidebar'] [data-testid='stPageLink']").get_by_text(label, exact=True).click()
    page.get_by_role("heading", level=1).filter(has_text=label).wait_for()
    wait_for_app(page)


def check(base: str, out_dir: Path) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport=DEFAULT_VIEWPORT)
        page.set_default_timeout(DEFAULT_TIMEOUT_MS * 3)  # a cold container on a loaded machine
        step = "Data"
        try:
            start = time.perf_counter()
            page.goto(base + "/")
            wait_for_app(page)
            page.locator("[data-testid='stMetricValue']").first.wait_for()
            assert_no_exception(page)
            print(f"  Data page: the demo's headline metric shown in {time.perf_counter() - start:.1f} s", flush=True)

            step = "Metrics"
            start = time.perf_counter()
            _open_page(page, "Metrics")
            page.get_by_role("heading", name="Estimates and intervals").wait_for()
            page.locator("[data-testid='stDataFrame']").first.wait_for()
            assert_no_exception(page)
            print(f"  Metrics page: {page.locator('[data-testid=stDataFrame]').count()} tables of metrics and "
                  f"intervals shown in {time.perf_counter() - start:.1f} s", flush=True)

            step = "Reliability"
            start = time.perf_counter()
            _open_page(page, "Reliability")
            page.wait_for_function(PLOT_DRAWN)
            assert_no_exception(page)
            print(f"  Reliability page: diagram drawn in {time.perf_counter() - start:.1f} s", flush=True)
        except Exception:
            out_dir.mkdir(parents=True, exist_ok=True)
            shot = out_dir / f"container-{step.lower()}.png"
            page.screenshot(path=str(shot), full_page=True)
            print(f"  {step} page failed; screenshot: {shot}", file=sys.stderr)
            raise
        finally:
            browser.close()


def main(argv: list[str]) -> int:
    if not argv or len(argv) > 2:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir = Path(argv[1]) if len(argv) > 1 else Path("test-artifacts")
    try:
        check(argv[0].rstrip("/"), out_dir)
    except Exception as error:  # the reason, not a traceback: this is a check's output
        print(f"  FAILED: {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
