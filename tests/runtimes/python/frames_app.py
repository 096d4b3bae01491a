"""An asyncio program that knows its own truth, for looptrace's CPython frame tests.

Runs on CPython 3.8 to 3.13 with no flags. Each callback it schedules writes one JSON line
with its begin and end (time.monotonic_ns: CLOCK_MONOTONIC, looptrace's clock) and the name
asyncio's debug repr gives it ("render_report() at frames_app.py:88"), and the slow callback
writes one line per Python function on its path with that function's time.

  python3 frames_app.py --scenario slow --truth FILE     callbacks of every kind + one slow one
  python3 frames_app.py --scenario forever --truth FILE  the same, over and over, until killed
  python3 frames_app.py --scenario stuck --truth FILE    one callback stuck 1.5 s in a sleep
  python3 frames_app.py --scenario threaded --truth FILE the slow scenario's loop on a thread
                                                         "loop", the main thread and another one
                                                         busy in Python meanwhile

Truth lines are kept in memory and written when a round is done, so writing them is no part
of any callback; "ready" is written first, once the loop runs.
"""

import argparse
import asyncio
import functools
import json
import os
import threading
import time

FILE = os.path.basename(__file__)
truth_file = None
records = []


def truth(**record):
    records.append(record)


def flush_truth():
    if truth_file:
        for record in records:
            truth_file.write(json.dumps(record) + "\n")
        truth_file.flush()
    records.clear()


def repr_name(fn):
    """asyncio's repr of a Python callback: qualified name, file and first line."""
    code = fn.__code__
    return f"{fn.__qualname__}() at {os.path.basename(code.co_filename)}:{code.co_firstlineno}"


def spin(ms):
    end = time.monotonic_ns() + ms * 1_000_000
    while time.monotonic_ns() < end:
        pass


def timed(fn, *args):
    begin = time.monotonic_ns()
    fn(*args)
    truth(type="function", name=fn.__name__, begin_ns=begin, end_ns=time.monotonic_ns())


def parse_records(ms):
    spin(ms)


def render_rows(ms):
    spin(ms // 2)
    timed(parse_records, ms // 2)


def wait_for_disk(ms):
    time.sleep(ms / 1000)


def render_report():
    begin = time.monotonic_ns()
    timed(render_rows, 60)
    timed(wait_for_disk, 30)
    truth(type="callback", name=repr_name(render_report), slow=True, begin_ns=begin, end_ns=time.monotonic_ns())


def quick_tick():
    begin = time.monotonic_ns()
    spin(1)
    truth(type="callback", name=repr_name(quick_tick), begin_ns=begin, end_ns=time.monotonic_ns())


class Report:
    def refresh(self):
        begin = time.monotonic_ns()
        spin(1)
        truth(type="callback", name=repr_name(Report.refresh), begin_ns=begin, end_ns=time.monotonic_ns())


def with_argument(value):
    begin = time.monotonic_ns()
    spin(1)
    truth(type="callback", name=repr_name(with_argument), begin_ns=begin, end_ns=time.monotonic_ns())


async def handle_client(index):
    spin(1)
    await asyncio.sleep(0)
    spin(1)
    return index


async def one_round(loop):
    loop.call_soon(quick_tick)
    loop.call_soon(Report().refresh)
    loop.call_soon(functools.partial(with_argument, 7))
    future = loop.create_future()
    loop.call_soon(future.set_result, 1)  # a C method: "Future.set_result()"
    await future
    task = loop.create_task(handle_client(1))
    truth(type="task", name=task.get_name(), coro="handle_client")
    await task
    await asyncio.sleep(0.01)
    done = loop.create_future()
    loop.call_soon(render_report)
    loop.call_soon(done.set_result, None)
    await done
    await asyncio.sleep(0.02)


def wait_on_lock():
    time.sleep(1.5)  # the stuck line


def stuck_callback():
    begin = time.monotonic_ns()
    wait_on_lock()
    truth(type="callback", name=repr_name(stuck_callback), begin_ns=begin, end_ns=time.monotonic_ns())


async def main(scenario):
    loop = asyncio.get_running_loop()
    truth(type="ready", pid=os.getpid())
    flush_truth()
    # A tracer's sampler follows the loop thread once it ran a callback: give it a moment.
    await asyncio.sleep(0.5)
    if scenario == "cext":
        done = loop.create_future()
        loop.call_soon(archive_callback)
        loop.call_soon(done.set_result, None)
        await done
        await asyncio.sleep(1.0)
        return
    if scenario == "stuck":
        done = loop.create_future()
        loop.call_soon(stuck_callback)
        loop.call_soon(done.set_result, None)
        await done
        return
    while True:
        await one_round(loop)
        flush_truth()
        if scenario != "forever":
            break
    # A tracer names callbacks and frames from the live process: stay a moment after the last.
    await asyncio.sleep(1.0)


def background_work(done):
    while not done.is_set():
        spin(1)


def main_thread_work(done):
    while not done.is_set():
        spin(1)


def run_threaded():
    """The loop on its own thread while two other Python threads compute."""
    done = threading.Event()
    worker = threading.Thread(target=background_work, args=(done,), name="worker")
    loop = threading.Thread(target=lambda: asyncio.run(main("slow")), name="loop")
    worker.start()
    loop.start()
    threading.Thread(target=lambda: (loop.join(), done.set())).start()
    main_thread_work(done)
    worker.join()


def compress_logs(ms):
    """Time in a C extension: zlib's deflate, called from this Python line."""
    import zlib

    data = bytes(range(256)) * 4096 + os.urandom(1 << 20)
    end = time.monotonic_ns() + ms * 1_000_000
    while time.monotonic_ns() < end:
        zlib.compress(data, 9)


def archive_callback():
    begin = time.monotonic_ns()
    timed(compress_logs, 80)
    truth(type="callback", name=repr_name(archive_callback), slow=True, begin_ns=begin, end_ns=time.monotonic_ns())


def compute_with_a_library_loaded_now(ms):
    """The first import of decimal in this process (nothing asyncio needs imports it): the
    dlopen of _decimal, then time in its C code."""
    import decimal

    decimal.getcontext().prec = 3000
    end = time.monotonic_ns() + ms * 1_000_000
    while time.monotonic_ns() < end:
        decimal.Decimal(2).sqrt()


async def late_import_main():
    """--scenario late-import: 3 s in (the lines above keep their numbers, which tests name), a
    callback imports decimal, a C extension dlopened then, and computes with it for 300 ms."""
    loop = asyncio.get_running_loop()
    truth(type="ready", pid=os.getpid())
    flush_truth()
    await asyncio.sleep(3.0)
    done = loop.create_future()
    loop.call_soon(late_import_callback)
    loop.call_soon(done.set_result, None)
    await done
    await asyncio.sleep(0.5)


def late_import_callback():
    begin = time.monotonic_ns()
    timed(compute_with_a_library_loaded_now, 300)
    truth(type="callback", name=repr_name(late_import_callback), slow=True, begin_ns=begin, end_ns=time.monotonic_ns())


def sleep_as_it_begins(ms):
    time.sleep(ms / 1000)  # the long wait's line


def early_wait_callback(index):
    """Sleeps as it begins (an early wait: a tracer takes no stack then), 50 ms every 10th
    time (a slow message), 0.2 ms otherwise, then works 1 ms."""
    begin = time.monotonic_ns()
    sleep_as_it_begins(50 if index % 10 == 0 else 0.2)
    spin(1)
    truth(type="callback", name=repr_name(early_wait_callback), slow=index % 10 == 0, begin_ns=begin,
          end_ns=time.monotonic_ns())


async def early_waits_main():
    """--scenario early-waits: early_wait_callback every 5 ms until killed (the lines above keep
    their numbers, which tests name); truth written every 20 callbacks."""
    loop = asyncio.get_running_loop()
    truth(type="ready", pid=os.getpid())
    flush_truth()
    index = 0
    while True:
        index += 1
        loop.call_soon(early_wait_callback, index)
        await asyncio.sleep(0.005)
        if index % 20 == 0:
            flush_truth()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--scenario", default="slow", choices=["slow", "forever", "stuck", "threaded", "cext", "late-import", "early-waits"])
    parser.add_argument("--truth")
    parser.add_argument("--start-delay", type=float, default=0)
    args = parser.parse_args()
    if args.truth:
        truth_file = open(args.truth, "w")
    time.sleep(args.start_delay)
    if args.scenario == "threaded":
        run_threaded()
    else:
        scenarios = {"late-import": late_import_main, "early-waits": early_waits_main}
        asyncio.run(scenarios[args.scenario]() if args.scenario in scenarios else main(args.scenario))
    flush_truth()
