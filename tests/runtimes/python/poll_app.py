"""A CPython program with its own poll loop and no asyncio, for looptrace's auto-detection
test: looptrace must not pick the asyncio profile for it (no callback would ever show) but
the generic epoll one, whose messages are the loop's iterations.

  python3.11 poll_app.py --truth FILE [--seconds S]

It writes "ready" to FILE once the loop runs, then loops: poll() a pipe nobody writes for
5 ms, then work (busy arithmetic) for 1 ms, or 20 ms every tenth iteration. Each iteration's
work writes its begin and end (time.monotonic_ns, i.e. CLOCK_MONOTONIC, looptrace's clock) as
a JSON line when the loop is done, so writing them is no part of an iteration.
"""

import argparse
import json
import os
import select
import time


def busy(ns):
    end = time.monotonic_ns() + ns
    x = 0
    while time.monotonic_ns() < end:
        x += 1
    return x


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--truth", required=True)
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    read_end, _write_end = os.pipe()
    poller = select.poll()
    poller.register(read_end, select.POLLIN)
    records = []
    with open(args.truth, "w") as ready:
        ready.write(json.dumps({"type": "ready", "pid": os.getpid()}) + "\n")
    stop = time.monotonic() + args.seconds
    iteration = 0
    while time.monotonic() < stop:
        poller.poll(5)
        begin = time.monotonic_ns()
        busy(20_000_000 if iteration % 10 == 9 else 1_000_000)
        records.append({"type": "iteration", "begin_ns": begin, "end_ns": time.monotonic_ns()})
        iteration += 1
    with open(args.truth, "a") as out:
        for record in records:
            out.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
