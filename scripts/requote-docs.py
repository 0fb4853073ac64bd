#!/usr/bin/env python3
"""Re-pastes every example the documents quote (the check_quoted calls of
tests/docs_in_sync.cmake) with what the simulator prints now. Review the diff before committing:
a figure that moved is a behaviour that changed, and the prose around it may need to follow.

    FLEETSIM_BIN=build/release/cli/fleetsim scripts/requote-docs.py
"""
import os
import re
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def normalised(block):
    return "\n".join(line.rstrip() for line in block.splitlines()).strip()


def quoted_examples():
    text = open(os.path.join(ROOT, "tests", "docs_in_sync.cmake")).read()
    for call in re.finditer(r"^check_quoted\((.*?)\)\s*$", text, re.M | re.S):
        doc, first_line, *args = shlex.split(call.group(1))
        yield doc, first_line, args


def main():
    binary = os.environ.get("FLEETSIM_BIN", os.path.join(ROOT, "build/release/cli/fleetsim"))
    if not os.access(binary, os.X_OK):
        sys.exit(f"no fleetsim at {binary}: build first, or set FLEETSIM_BIN")
    for doc, first_line, args in quoted_examples():
        out = subprocess.run([binary, *args], cwd=ROOT, check=True, capture_output=True,
                             text=True).stdout.rstrip()
        if first_line.startswith("$ "):
            out = first_line + "\n" + out  # the block shows its command above the output
        path = os.path.join(ROOT, doc)
        text = open(path).read()
        start = text.find("```\n" + first_line)
        if start < 0:
            sys.exit(f"{doc}: no code block starting '{first_line}'")
        start += 4
        end = text.index("```", start)
        if normalised(text[start:end]) == normalised(out):
            continue  # the same, trailing spaces aside (as the check compares)
        open(path, "w").write(text[:start] + out + "\n" + text[end:])
        print(f"requoted {doc}: {first_line}")


if __name__ == "__main__":
    main()
