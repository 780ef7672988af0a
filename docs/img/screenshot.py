"""A screenshot of a replay page at a time, in headless Chromium (Debian's `chromium`, driven
by playwright from the test extra); makes docs/img/replay.png (README.md says how).

    python docs/img/screenshot.py out/quadruped_stand.html --time 1.5 -o docs/img/replay.png
"""

import argparse
import os
import shutil
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("page", help="a replay page (raisimcli replay)")
    parser.add_argument("--time", type=float, default=0.0, help="the time shown (s)")
    parser.add_argument("-o", "--output", required=True, help="the PNG file")
    parser.add_argument("--size", default="1000x700", help="the window, WIDTHxHEIGHT pixels")
    args = parser.parse_args()
    browser = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome")
                    if shutil.which(b)), None)
    if browser is None:
        print("error: no Chromium found (apt-get install chromium)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright
    width, height = (int(x) for x in args.size.split("x"))
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=browser, args=[
            "--use-gl=swiftshader", "--enable-unsafe-swiftshader", "--ignore-gpu-blocklist"])
        page = b.new_page(viewport={"width": width, "height": height})
        page.goto("file://" + os.path.abspath(args.page))
        end = time.monotonic() + 60
        while not page.evaluate("window.raisimcliReplay !== undefined"):
            if time.monotonic() > end:
                print("error: the page did not start in 60 s", file=sys.stderr)
                return 1
            page.wait_for_timeout(50)
        page.evaluate(f"window.raisimcliReplay.seek({args.time})")
        page.wait_for_timeout(300)
        page.screenshot(path=args.output)
        b.close()
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
