#!/usr/bin/env python3
"""Writes a long Azure-format CSV trace (the 2024 week-long files' columns and "+00:00" zone) of
N rows at about 50 requests a second, for measuring what reading a window of a long trace costs
(bench/README.md). Deterministic: the same N gives the same file.

    /usr/bin/python3 bench/make_azure_csv.py 3000000 /tmp/azure-long.csv
"""
import datetime
import random
import sys


def main() -> None:
    rows, path = int(sys.argv[1]), sys.argv[2]
    rng = random.Random(1)
    start = datetime.datetime(2024, 5, 10)
    us = 0
    with open(path, "w") as f:
        f.write("TIMESTAMP,ContextTokens,GeneratedTokens\n")
        for _ in range(rows):
            us += int(rng.expovariate(1 / 20000))
            t = start + datetime.timedelta(microseconds=us)
            f.write(f"{t:%Y-%m-%d %H:%M:%S.%f}+00:00,{rng.randint(50, 4000)},{rng.randint(5, 500)}\n")


if __name__ == "__main__":
    main()
