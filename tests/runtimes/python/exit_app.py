"""An asyncio program that dies in the middle of a session, for looptrace's dying-target tests.

Runs `tick` every 2 ms until its trigger file appears (--trigger) or for --after seconds, then two
callbacks it never ran before, `last_words` and `farewell`, back to back; `farewell` ends the
process: os._exit(3) (--end exit) or SIGKILL to itself (--end kill). Nothing of Python's
finalization runs in either case, so the records of the last callbacks are still in
looptrace's rings when the process is gone, and are named only after it.

Truth lines (JSON, written and flushed before the callback they name runs): "ready" once the
loop runs, then one "callback" line per callback kind with the name asyncio's debug repr
gives it ("farewell() at exit_app.py:50").
"""

import argparse
import asyncio
import json
import os
import signal
import time

FILE = os.path.basename(__file__)
truth_file = None
named = set()


def truth(**record):
    truth_file.write(json.dumps(record) + "\n")
    truth_file.flush()


def repr_name(fn):
    code = fn.__code__
    return f"{fn.__qualname__}() at {os.path.basename(code.co_filename)}:{code.co_firstlineno}"


def name_once(fn):
    if fn not in named:
        named.add(fn)
        truth(type="callback", name=repr_name(fn))


def spin(ms):
    end = time.monotonic_ns() + ms * 1_000_000
    while time.monotonic_ns() < end:
        pass


def farewell(end):
    spin(1)
    if end == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    os._exit(3)


def last_words(loop, end):
    spin(1)
    name_once(farewell)
    loop.call_soon(farewell, end)


def tick(loop, args):
    spin(1)
    waiting = os.path.exists(args.trigger) is False if args.trigger else time.monotonic() < args.until
    if waiting:
        loop.call_later(0.002, tick, loop, args)
        return
    name_once(last_words)
    loop.call_soon(last_words, loop, args.end)


def main():
    global truth_file
    parser = argparse.ArgumentParser()
    parser.add_argument("--truth", required=True)
    parser.add_argument("--trigger", default="")
    parser.add_argument("--after", type=float, default=0.0)
    parser.add_argument("--end", choices=["exit", "kill"], default="exit")
    args = parser.parse_args()
    args.until = time.monotonic() + args.after
    truth_file = open(args.truth, "w")
    loop = asyncio.new_event_loop()
    truth(type="ready", pid=os.getpid())
    name_once(tick)
    loop.call_soon(tick, loop, args)
    loop.run_forever()


if __name__ == "__main__":
    main()
