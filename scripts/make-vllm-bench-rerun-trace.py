#!/usr/bin/env python3
"""Writes scenarios/data/vllm-bench-rerun.jsonl: two runs of vLLM's serving benchmark on one
server, as github.com/dennislee22/vLLM-benchmarking ("Test 5", 2025-09-04) ran them.

benchmark_serving.py --dataset-name random draws its prompts from numpy's seed 0, so a run of
200 prompts begins with the 100 prompts of the run before it, whose KV blocks the server still
holds: the server's log puts its cumulative prefix-cache hit rate at 1.0% after the first run
and 33.3% after the second (100 of the 300 prompts hit whole). Lengths are the runs' totals
over their requests: run 1 (100 prompts) 102,140 prompt and 101,590 generated tokens, run 2
(200 prompts) 204,007 and 200,419. Run 1 is warm-up (measured: false); run 2 starts 60 s later,
after run 1 has ended.

    /usr/bin/python3 scripts/make-vllm-bench-rerun-trace.py > scenarios/data/vllm-bench-rerun.jsonl

The record's "Test 2" (one server over two GPUs) ran 100, 200 and 500 prompts, each run
beginning with the prompts of the run before it (the same seed draws the same offsets first).
Totals: 102,140 / 101,694, 204,007 / 201,481 and 510,414 / 504,295 prompt / generated tokens.
`tp2-rerun` writes its first two runs (the second measured), `tp2-third` all three (the third
measured).

    /usr/bin/python3 scripts/make-vllm-bench-rerun-trace.py tp2-rerun > scenarios/data/vllm-bench-tp2-rerun.jsonl
    /usr/bin/python3 scripts/make-vllm-bench-rerun-trace.py tp2-third > scenarios/data/vllm-bench-tp2-third.jsonl
"""
import json
import sys

RUN2_START_MS = 60_000
FIRST_RUN_PROMPT, FIRST_RUN_OUTPUT = 1021, 1016  # 102,140 / 100 and 101,590 / 100, rounded
NEW_PROMPT, SECOND_RUN_OUTPUT = 1019, 1002  # (204,007 - 100 x 1,021) / 100 and 200,419 / 200


def line(t_ms, prompt_id, prompt_tokens, output_tokens, measured):
    row = {"timestamp_ms": t_ms, "prompt": [{"id": prompt_id, "tokens": prompt_tokens}],
           "prompt_tokens": prompt_tokens, "output_tokens": output_tokens}
    if not measured:
        row["measured"] = False
    return json.dumps(row, separators=(",", ":"))


# Test 2 (two GPUs): run 3 starts 180 s in, after run 2 has ended.
RUN3_START_MS = 180_000
TP2_OUTPUTS = (1017, 1007, 1009)  # 101,694 / 100, 201,481 / 200 and 504,295 / 500, rounded
TP2_THIRD_NEW_PROMPT = 1021  # (510,414 - 100 x 1,021 - 100 x 1,019) / 300


def two_runs(first_output, second_output, second_measured=True):
    """100 prompts (warm-up), then 200 of which the first 100 repeat them."""
    out = []
    for i in range(100):
        out.append(line(0, 1 + i, FIRST_RUN_PROMPT, first_output, False))
    for i in range(200):
        tokens = FIRST_RUN_PROMPT if i < 100 else NEW_PROMPT
        out.append(line(RUN2_START_MS, 1 + i, tokens, second_output, second_measured))
    return out


def test5():
    return two_runs(FIRST_RUN_OUTPUT, SECOND_RUN_OUTPUT)


def tp2_rerun():
    return two_runs(TP2_OUTPUTS[0], TP2_OUTPUTS[1])


def tp2_third():
    out = two_runs(TP2_OUTPUTS[0], TP2_OUTPUTS[1], second_measured=False)
    for i in range(500):
        tokens = FIRST_RUN_PROMPT if i < 100 else NEW_PROMPT if i < 200 else TP2_THIRD_NEW_PROMPT
        out.append(line(RUN3_START_MS, 1 + i, tokens, TP2_OUTPUTS[2], True))
    return out


def main():
    which = sys.argv[1] if len(sys.argv) > 1 else "test5"
    traces = {"test5": test5, "tp2-rerun": tp2_rerun, "tp2-third": tp2_third}
    if which not in traces:
        sys.exit(f"unknown trace {which!r}; valid: {', '.join(traces)}")
    sys.stdout.write("\n".join(traces[which]()) + "\n")


if __name__ == "__main__":
    main()
