"""The dashboard as a newcomer finds it: CI cannot pass without the browser tests having run,
and the README shows a screenshot of every page, each a real PNG kept in docs/images/."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGES = ("overview", "memory", "zoom", "search", "settings", "compactor", "privacy", "host")


def test_ci_installs_chromium_and_turns_a_skipped_browser_test_into_a_failure() -> None:
    script = (REPO / ".ci" / "run").read_text()
    install = script.index("apt-get install -y -qq --no-install-recommends chromium chromium-driver")
    required = script.index("export EVA_REQUIRE_BROWSER=1")
    assert install < required < script.index('bash -c "$README_TEST_COMMAND"')
    browser = (REPO / "tests" / "worlds" / "browser.py").read_text()
    assert 'os.environ.get("EVA_REQUIRE_BROWSER") == "1"' in browser and "pytest.fail(" in browser


def test_the_readme_shows_every_page() -> None:
    readme = (REPO / "README.md").read_text()
    shown = set(re.findall(r"\]\((docs/images/dashboard-[a-z]+\.png)\)", readme))
    assert shown == {f"docs/images/dashboard-{page}.png" for page in PAGES}
    for path in shown:
        data = (REPO / path).read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10_000, path
