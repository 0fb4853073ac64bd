#!/usr/bin/env python3
"""Renders a `fleetsim run --timeline` trace to a PNG with docs/timeline-viewer.html in headless
Chromium (Debian's chromium package), for docs and reports.

    scripts/timeline-png.py TRACE.json OUT.png [--arm 1] [--from S] [--to S] [--width 1400]
"""
import argparse
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile

VIEWER = pathlib.Path(__file__).resolve().parent.parent / "docs" / "timeline-viewer.html"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("png")
    ap.add_argument("--arm", type=int, default=1, help="the arm's process id (1 = first arm)")
    ap.add_argument("--from", dest="start", type=float, help="window start, simulated seconds")
    ap.add_argument("--to", dest="end", type=float, help="window end, simulated seconds")
    ap.add_argument("--width", type=int, default=1400)
    a = ap.parse_args()
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        sys.exit("timeline-png: needs chromium (apt-get install chromium)")
    with open(a.trace, encoding="utf-8") as f:
        trace = json.load(f)
    lo = -1e300 if a.start is None else a.start * 1e6
    hi = 1e300 if a.end is None else a.end * 1e6

    def keep(e):
        if e.get("pid") != a.arm:
            return False
        if e["ph"] == "M":
            return True
        end = e["ts"] + e.get("dur", 0)
        return end >= lo and e["ts"] <= hi and e["ph"] in "XCi"

    events = [e for e in trace["traceEvents"] if keep(e)]
    pods = sum(1 for e in events if e["ph"] == "M" and e["name"] == "thread_name") - 1
    height = 30 + pods * 136 + 40
    page = VIEWER.read_text(encoding="utf-8").replace(
        '<script>\n"use strict";',
        "<script>window.trace = " + json.dumps({"traceEvents": events}) +
        ";</script>\n<script>\n\"use strict\";", 1)
    fragment = "#arm=%d" % a.arm + ("" if a.start is None else "&from=%g" % a.start) + (
        "" if a.end is None else "&to=%g" % a.end)
    with tempfile.TemporaryDirectory() as tmp:
        html = pathlib.Path(tmp) / "timeline.html"
        html.write_text(page, encoding="utf-8")
        out = pathlib.Path(a.png).resolve()
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                        "--hide-scrollbars", f"--window-size={a.width + 40},{height + 60}",
                        f"--screenshot={out}", html.as_uri() + fragment],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print("wrote", a.png)


if __name__ == "__main__":
    main()
