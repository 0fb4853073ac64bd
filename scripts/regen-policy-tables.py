#!/usr/bin/env python3
"""Rewrites the condensed result tables of docs/policies.md from what the simulator prints now:
the table under each `build/release/cli/fleetsim run scenarios/NAME.yaml` line of the shootout
and of the gateway replicas. Review the diff: the prose around a table quotes its figures.

    FLEETSIM_BIN=build/release/cli/fleetsim scripts/regen-policy-tables.py
"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "policies.md")


def arms(binary, scenario):
    out = subprocess.run([binary, "run", scenario, "--format", "json"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)["arms"]


def warm_ttft(s):
    return f"{s['warm_ttft_ms']['p50']:.0f} / {s['warm_ttft_ms']['p95']:.0f}"


# Per scenario: the table's header, and one row's cells from an arm's summary.
TABLES = {
    "scenarios/policy-shootout.yaml": (
        "| arm | reuse % | warm TTFT p50 / p95 ms | throughput req/s | concentration peak/mean |",
        lambda s: [f"{100 * s['prefix_cache_reuse']:.1f}", warm_ttft(s),
                   f"{s['throughput_req_s']:.2f}", f"{s['routing']['concentration_ratio']:.2f}"]),
    "scenarios/gateway-replicas.yaml": (
        "| arm | reuse % | warm TTFT p50 / p95 ms | throughput req/s | same pod as previous turn % |",
        lambda s: [f"{100 * s['prefix_cache_reuse']:.1f}", warm_ttft(s),
                   f"{s['throughput_req_s']:.2f}",
                   f"{100 * s['routing']['same_pod_as_previous_turn']:.1f}"]),
}


def main():
    binary = os.environ.get("FLEETSIM_BIN", os.path.join(ROOT, "build/release/cli/fleetsim"))
    if not os.access(binary, os.X_OK):
        sys.exit(f"no fleetsim at {binary}: build first, or set FLEETSIM_BIN")
    lines = open(DOC).read().split("\n")
    for scenario, (header, cells) in TABLES.items():
        command = f"    build/release/cli/fleetsim run {scenario}"
        at = lines.index(command)
        start = lines.index(header, at)
        end = start + 2  # past the header and its rule
        while end < len(lines) and lines[end].startswith("| "):
            end += 1
        rows = [f"| {a['name']} | " + " | ".join(cells(a["summary"])) + " |"
                for a in arms(binary, scenario)]
        lines[start + 2:end] = rows
        print(f"rewrote the table of {scenario}")
    open(DOC, "w").write("\n".join(lines))


if __name__ == "__main__":
    main()
