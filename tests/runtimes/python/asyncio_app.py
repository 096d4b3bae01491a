"""An asyncio program that knows its own truth, for looptrace's CPython tests.

Every callback it schedules writes one JSON line with its own begin and end
(time.monotonic_ns, i.e. CLOCK_MONOTONIC, the clock looptrace reports in), and the slow
callback also writes one line per Python function it calls, with that function's
module:function:line name as looptrace should print it and its depth under the callback.

  python3.11 asyncio_app.py --scenario slow --truth FILE    quick callbacks + one slow one
  python3.11 asyncio_app.py --scenario gc --truth FILE      a slow callback that runs gc.collect()
  python3.11 asyncio_app.py --scenario busy --calls N       N small function calls in callbacks
                                                            (benchmark; prints CPU and wall time)
  python3.11 asyncio_app.py --scenario forever              quick callbacks until killed

Options: --start-delay S waits before the loop starts (for `looptrace record -p`), after
writing "ready" to the truth file. Truth lines are kept in memory and written when the loop
is done, so writing them is no part of any callback.
"""

import argparse
import asyncio
import gc
import json
import os
import sys
import time

MODULE = os.path.splitext(os.path.basename(__file__))[0]
truth_file = None
records = []  # written when the loop is done: writing them must not be part of a callback


def truth(**record):
    records.append(record)


def flush_truth():
    if truth_file:
        for record in records:
            truth_file.write(json.dumps(record) + "\n")
        truth_file.flush()
    records.clear()


def name_of(fn):
    code = fn.__code__
    return f"{MODULE}:{code.co_name}:{code.co_firstlineno}"


def spin(ms):
    end = time.monotonic_ns() + ms * 1_000_000
    while time.monotonic_ns() < end:
        pass


def timed(depth, fn, *args):
    """Calls fn and writes its truth line (the callee's own line names it)."""
    begin = time.monotonic_ns()
    fn(*args)
    end = time.monotonic_ns()
    truth(type="function", name=name_of(fn), depth=depth, begin_ns=begin, end_ns=end)


def parse_records(ms):
    spin(ms)


def render_rows(ms):
    spin(ms // 2)
    timed(2, parse_records, ms // 2)


def wait_for_disk(ms):
    time.sleep(ms / 1000)


def slow_work():
    timed(1, render_rows, 40)
    timed(1, wait_for_disk, 30)


def collect_garbage():
    junk = [[i] * 4 for i in range(50_000)]
    for i in range(0, len(junk), 2):
        junk[i].append(junk[i + 1])
        junk[i + 1].append(junk[i])
    del junk
    begin = time.monotonic_ns()
    gc.collect()
    end = time.monotonic_ns()
    truth(type="gc", begin_ns=begin, end_ns=end)


def quick(index):
    begin = time.monotonic_ns()
    spin(1)
    truth(type="callback", name="quick", index=index, begin_ns=begin, end_ns=time.monotonic_ns())


def slow():
    begin = time.monotonic_ns()
    slow_work()
    truth(type="callback", name="slow", begin_ns=begin, end_ns=time.monotonic_ns())


def slow_with_gc():
    begin = time.monotonic_ns()
    spin(20)
    timed(1, collect_garbage)
    spin(20)
    truth(type="callback", name="slow_with_gc", begin_ns=begin, end_ns=time.monotonic_ns())


def small(x):
    return x + 1


def busy(calls):
    total = 0
    for i in range(calls):
        total = small(total)
    return total


async def run(args):
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    if args.scenario == "slow":
        for i in range(5):
            loop.call_soon(quick, i)
        loop.call_later(0.05, slow)
        for i in range(5, 10):
            loop.call_later(0.1 + i * 0.01, quick, i)
        loop.call_later(0.3, done.set_result, None)
    elif args.scenario == "gc":
        loop.call_soon(quick, 0)
        loop.call_later(0.05, slow_with_gc)
        loop.call_later(0.3, done.set_result, None)
    elif args.scenario == "busy":
        per = max(1, args.calls // 10)
        for _ in range(10):
            loop.call_soon(busy, per)
        loop.call_soon(done.set_result, None)
    elif args.scenario == "forever":
        def again(i):
            quick(i)
            flush_truth()  # nobody waits for the end: write as it goes
            loop.call_later(0.02, again, i + 1)
        loop.call_soon(again, 0)
    await done


def main():
    global truth_file
    parser = argparse.ArgumentParser()
    parser.add_argument("--scenario", default="slow", choices=["slow", "gc", "busy", "forever"])
    parser.add_argument("--truth")
    parser.add_argument("--calls", type=int, default=1_000_000)
    parser.add_argument("--start-delay", type=float, default=0)
    args = parser.parse_args()
    if args.truth:
        truth_file = open(args.truth, "w")
    truth(type="ready", pid=os.getpid())
    flush_truth()
    if args.start_delay:
        time.sleep(args.start_delay)
    begin = time.monotonic_ns()
    cpu = time.thread_time_ns()
    asyncio.run(run(args))
    cpu = time.thread_time_ns() - cpu
    elapsed = time.monotonic_ns() - begin
    flush_truth()
    if args.scenario == "busy":
        # CPU time of the loop thread (a probe's trap is charged to it) and wall time (which on
        # a shared machine also counts the time it waited for a CPU).
        print(f"busy {args.calls} calls {cpu} ns cpu {elapsed} ns wall", flush=True)


if __name__ == "__main__":
    sys.exit(main())
