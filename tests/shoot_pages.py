"""Screenshots of the pages for the docs: ``python -m tests.shoot_pages`` (from the repository
root, after ``python -m tests.refresh_docs`` has written the pages under docs/days/).

Each page is loaded in headless Chromium (tests/browser.py), put in a telling state (the
clockwork's slider at a chosen cycle), checked for console errors and written as a PNG beside
it. Nothing here is drawn by hand: rerun it whenever a page changes.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.browser import Browser

ROOT = Path(__file__).resolve().parent.parent
DAYS = ROOT / "docs" / "days"

#: (page under docs/days, screenshot, cycle for the clockwork's slider or None, viewport width)
SHOTS = (
    ("day3-clockwork-k64-n512.html", "day3-clockwork-k64-n512.png", 300, 1100),
    ("day3-clockwork-k128-n32.html", "day3-clockwork-k128-n32.png", 100, 1100),
    ("day7-report.html", "day7-report.png", None, 1000),
)


def main() -> int:
    missing = [p for p, _, _, _ in SHOTS if not (DAYS / p).is_file()]
    if missing:
        print(f"missing {', '.join(missing)}: run python -m tests.refresh_docs first", file=sys.stderr)
        return 2
    with Browser() as b:
        for html, png, cycle, width in SHOTS:
            page = b.open(DAYS / html, width=width)
            if cycle is not None:
                page.eval(f"(s => {{ s.value = {cycle}; s.dispatchEvent(new Event('input')); }})"
                          "(document.getElementById('slider'))")
            if page.errors:
                print(f"{html}: {page.errors}", file=sys.stderr)
                return 1
            page.screenshot(DAYS / png)
            print(f"wrote docs/days/{png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
