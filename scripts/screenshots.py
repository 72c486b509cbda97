"""The pictures of the docs (docs/images/): the sessions list and a session page of the
bundled demo home, in English and in Chinese, at a desktop's size and a phone's.

``scripts/screenshots`` runs it: a dshweb of this checkout on a free port of 127.0.0.1 with
a data folder of its own (its demo home, its database, removed after), Debian's Chromium
(``DSHWEB_CHROMIUM`` names another), signed in through the login form. It prints each
picture it wrote and fails when a page did not show what it should.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.server import DemoServer, sign_in  # noqa: E402

IMAGES = REPO / "docs" / "images"
CHROMIUM = Path(os.environ.get("DSHWEB_CHROMIUM") or "/usr/bin/chromium")
LANGUAGES = {"en": "en-US", "zh-hans": "zh-CN"}
SIZES = {"desktop": (1440, 900), "phone": (390, 844)}
PAGES = {
    "list": ("/", "#session-rows > li"),
    "session": ("/homes/local/sessions/csv-importer/", "#context-ring"),
}


def shoot(page: Page, path: str, ready: str, target: Path) -> None:
    page.goto(path)
    page.wait_for_selector(ready)
    page.wait_for_selector('#live-status[data-state="open"]')
    page.wait_for_timeout(500)  # the socket's first push
    page.screenshot(path=target)
    print(f"wrote {target}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=IMAGES, help="where the pictures go")
    out: Path = parser.parse_args(argv).out
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="dshweb-screenshots-") as scratch:
        # The test servers' preparation keeps what it makes once in a run's folder (pytest
        # names one); this run's is its scratch folder.
        os.environ.setdefault("DSHWEB_TEST_RUN_DIR", scratch)
        server = DemoServer(home=Path(scratch) / "unused", data_dir=Path(scratch) / "data")
        server.prepare()
        server.start()
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"]
                )
                state = sign_in(browser, server)
                for language, locale in LANGUAGES.items():
                    for size, (width, height) in SIZES.items():
                        context = browser.new_context(
                            base_url=server.url,
                            storage_state=state,
                            locale=locale,
                            viewport={"width": width, "height": height},
                            color_scheme="light",
                        )
                        page = context.new_page()
                        for name, (path, ready) in PAGES.items():
                            target = out / f"{name}-{language}-{size}.png"
                            shoot(page, path, ready, target)
                        context.close()
                browser.close()
        finally:
            server.stop()


if __name__ == "__main__":
    main()
