"""A GLib main loop driven from Python through pygobject (python3-gi), knowing its own truth.

pygobject hands GLib a fresh libffi closure for each Python callback, in anonymous memory
that no symbol names; looptrace's glib profile names the message by the Python callable the
closure holds. Each callback writes one JSON line with its begin and end
(time.monotonic_ns: CLOCK_MONOTONIC, looptrace's clock) and the name asyncio's repr gives a
Python callable ("on_tick() at gobject_app.py:44").

  python3 gobject_app.py --truth FILE [--ticks N]

Truth lines are kept in memory and written when the loop has quit.
"""

import argparse
import json
import os
import time

from gi.repository import GLib

FILE = os.path.basename(__file__)
records = []
loop = GLib.MainLoop()
ticks_left = 0


def repr_name(fn):
    code = fn.__code__
    return f"{fn.__qualname__}() at {os.path.basename(code.co_filename)}:{code.co_firstlineno}"


def spin(ms):
    end = time.monotonic_ns() + int(ms * 1_000_000)
    while time.monotonic_ns() < end:
        pass


def truth(fn, begin):
    records.append({"type": "callback", "name": repr_name(fn), "begin_ns": begin, "end_ns": time.monotonic_ns()})


def on_tick():
    global ticks_left
    begin = time.monotonic_ns()
    spin(1)
    ticks_left -= 1
    if ticks_left % 10 == 0:
        GLib.idle_add(slow_report)  # a new closure each time
    truth(on_tick, begin)
    if ticks_left == 0:
        loop.quit()
        return False
    return True


def slow_report():
    begin = time.monotonic_ns()
    spin(30)
    truth(slow_report, begin)
    return False


class Widget:
    def refresh(self, amount):
        begin = time.monotonic_ns()
        spin(amount)
        truth(Widget.refresh, begin)
        return True


def main():
    global ticks_left
    parser = argparse.ArgumentParser()
    parser.add_argument("--truth", required=True)
    parser.add_argument("--ticks", type=int, default=40)
    args = parser.parse_args()
    ticks_left = args.ticks
    widget = Widget()
    GLib.timeout_add(10, on_tick)
    GLib.timeout_add(25, widget.refresh, 2)  # a bound method, with user data
    loop.run()
    with open(args.truth, "w") as out:
        for record in records:
            out.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
