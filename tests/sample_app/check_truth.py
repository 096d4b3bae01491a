#!/usr/bin/env python3
"""Checks a truth file of looptrace-sample-app against what its scenario plans.

usage: check_truth.py SCENARIO TRUTH.jsonl [--refresh-rate HZ] [--count N] [--stall-ms N]

Prints the measured numbers; exits 1 (with the reasons) if the truth does not
match the scenario (README.md, "Scenarios"). Covers the frame, ANR/stall and
startup scenarios; for the others only the common checks run.
"""

import argparse
import json
import sys

FAILURES = []


def fail(what):
    FAILURES.append(what)


def check(cond, what):
    if not cond:
        fail(what)
    return cond


def of_type(lines, t):
    return [x for x in lines if x["type"] == t]


def common(lines, scenario):
    check(lines and lines[0]["type"] == "process", "first record is not process")
    if scenario != "anr-deadlock":
        check(lines[-1]["type"] == "end", "last record is not end")
    ids = set()
    for m in of_type(lines, "message"):
        check(m["msg_id"] not in ids, "msg_id %d twice" % m["msg_id"])
        ids.add(m["msg_id"])
        check(m["begin_ns"] <= m["begin_after_ns"] <= m["end_ns"] <= m["end_after_ns"],
              "message %d times out of order" % m["msg_id"])


def frames(lines, scenario, args):
    msgs = {m["msg_id"]: m for m in of_type(lines, "message")}
    vsyncs = {v["vsync_ns"]: v for v in of_type(lines, "vsync")}
    fr = of_type(lines, "frame")
    dropped = {}
    prev_id = 0
    for f in fr:
        fid = f["frame_id"]
        check(fid > prev_id, "frame ids do not increase at %d" % fid)
        prev_id = fid
        m = msgs.get(f["msg_id"])
        if check(m is not None and m["name"] == "Choreographer#doFrame",
                 "frame %d: no doFrame message %d" % (fid, f["msg_id"])):
            check(m["begin_ns"] <= f["begin_ns"] and f["end_after_ns"] <= m["end_ns"],
                  "frame %d outside its message" % fid)
        check(f["interval_ns"] == 10**9 // f["refresh_hz"], "frame %d: interval" % fid)
        check(f["intended_vsync_ns"] in vsyncs, "frame %d: no vsync record" % fid)
        check(f["vsync_ns"] - f["intended_vsync_ns"] == f["skipped_frames"] * f["interval_ns"],
              "frame %d: vsync_ns != intended + skipped * interval" % fid)
        late = (f["begin_ns"] - f["intended_vsync_ns"]) // f["interval_ns"]
        check(late in (f["skipped_frames"], f["skipped_frames"] + 1),
              "frame %d: skipped_frames %d for a start %d intervals late" % (fid, f["skipped_frames"], late))
        t = f["begin_after_ns"]
        for i, p in enumerate(f["phases"]):
            check(p["phase"] == i and t <= p["begin_ns"] <= p["begin_after_ns"] <= p["end_ns"] <= p["end_after_ns"],
                  "frame %d: phase %d out of order" % (fid, i))
            t = p["end_after_ns"]
        check(t <= f["end_ns"] <= f["end_after_ns"], "frame %d: end before its phases" % fid)
        dropped[fid] = (f["end_ns"] - f["vsync_ns"]) // f["interval_ns"]
    n_dropped = sum(1 for d in dropped.values() if d > 0)
    print("frames: %d, frames with dropped > 0: %d, vsync records: %d" % (len(fr), n_dropped, len(vsyncs)))
    hz = sorted({f["refresh_hz"] for f in fr})
    print("refresh rates: %s, scenes: %s" % (hz, sorted({f["scene"] for f in fr})))

    if scenario in ("frames-smooth", "frames-jank", "frames-busy-between"):
        check(len(fr) == args.count, "%d frames instead of %d" % (len(fr), args.count))
        check(hz == [args.refresh_rate], "refresh rates %s" % hz)
        check(all(f["scene"] == "sample.app.MainActivity" for f in fr), "scene is not MainActivity")
    # Nothing else is planned to drop, but a preemption of a few ms on a loaded
    # machine can make a frame miss its interval (more likely at 120 Hz): a
    # warning up to 10 % of the frames, a failure beyond.
    if scenario == "frames-smooth":
        if n_dropped:
            print("WARN: %d frames dropped (preemption?)" % n_dropped)
        check(n_dropped <= max(2, len(fr) // 10), "%d frames dropped" % n_dropped)
    if scenario == "frames-jank":
        planned = [f for f in fr if f["planned_dropped"] > 0]
        for f in planned:
            frac = (f["end_ns"] - f["vsync_ns"]) / f["interval_ns"]
            print("  jank frame %d: planned %d, dropped %d ((end - vsync) / interval = %.3f), next frame skipped %s"
                  % (f["frame_id"], f["planned_dropped"], dropped[f["frame_id"]], frac,
                     [g["skipped_frames"] for g in fr if g["frame_id"] == f["frame_id"] + 1]))
            check(dropped[f["frame_id"]] == f["planned_dropped"], "frame %d dropped %d, planned %d"
                  % (f["frame_id"], dropped[f["frame_id"]], f["planned_dropped"]))
        expect = [d for i, d in ((20, 1), (45, 3), (70, 9), (95, 24), (120, 42)) if i < args.count]
        check([f["planned_dropped"] for f in planned] == expect, "planned jank %s" % [f["planned_dropped"] for f in planned])
        others = [f for f in fr if f["planned_dropped"] == 0 and dropped[f["frame_id"]] > 0]
        print("  unplanned drops: %d" % len(others))
        if others:
            print("WARN: %d unplanned drops (preemption?)" % len(others))
        check(len(others) <= max(2, len(fr) // 10), "%d unplanned drops" % len(others))
    if scenario == "frames-busy-between":
        bg = [m for m in of_type(lines, "message") if m["name"] == "bg.work"]
        delayed = [f for f in fr if any(m["end_ns"] > f["intended_vsync_ns"] and m["begin_ns"] < f["begin_ns"] for m in bg)]
        late_ms = [(f["begin_ns"] - f["intended_vsync_ns"]) / 1e6 for f in delayed]
        print("  bg.work messages: %d (%.1f-%.1f ms), frames delayed by one: %d (late %.1f-%.1f ms), with skipped > 0: %d"
              % (len(bg), min((m["end_ns"] - m["begin_ns"]) / 1e6 for m in bg),
                 max((m["end_ns"] - m["begin_ns"]) / 1e6 for m in bg), len(delayed),
                 min(late_ms or [0]), max(late_ms or [0]), sum(1 for f in fr if f["skipped_frames"] > 0)))
        check(len(bg) == (args.count + 1) // 4, "%d bg.work messages" % len(bg))
        check(len(delayed) >= len(bg) // 2, "only %d frames delayed" % len(delayed))
    if scenario == "frames-refresh-change":
        rates = [(f["refresh_hz"], f["scene"]) for f in fr]
        switches = sum(1 for a, b in zip(rates, rates[1:]) if a != b)
        check(rates[0] == (60, "sample.app.MainActivity") and rates[-1] == (120, "sample.app.VideoActivity")
              and switches == 1, "rates/scenes %s" % sorted(set(rates)))
        for hz, scene in sorted(set(rates)):
            sel = [f for f in fr if f["refresh_hz"] == hz]
            span = (sel[-1]["intended_vsync_ns"] - sel[0]["intended_vsync_ns"]) / 1e9
            print("  %d Hz (%s): %d frames over %.3f s" % (hz, scene, len(sel), span))
            check(abs(len(sel) - hz * args.count / 1000) <= hz * args.count / 1000 * 0.1 + 2,
                  "%d frames at %d Hz" % (len(sel), hz))


def stalls(lines, scenario, args):
    st = of_type(lines, "stall")
    msgs = {m["msg_id"]: m for m in of_type(lines, "message")}
    if not check(len(st) == 1, "%d stall records" % len(st)):
        return
    s = st[0]
    kind = {"anr-busy": "busy", "anr-sleep": "sleep", "anr-lock": "lock", "anr-io": "io",
            "anr-deadlock": "deadlock", "idle-stall": "idle_handler", "input-lag": "input",
            "barrier-leak": "barrier_leak"}[scenario]
    check(s["kind"] == kind, "kind %s" % s["kind"])
    default_ms = 6000 if scenario.startswith("anr-") else 3000
    planned = (args.stall_ms or default_ms) * 10**6
    check(s["planned_ns"] == planned, "planned_ns %d" % s["planned_ns"])
    if scenario == "anr-deadlock":
        check(s["main_tid"] == lines[0]["pid"] and s["worker_tid"] != s["main_tid"], "deadlock tids")
        check("end_ns" not in s and lines[-1]["type"] != "end", "a deadlock that ended")
        print("deadlock: main_tid %d, worker_tid %d, msg_id %d" % (s["main_tid"], s["worker_tid"], s["msg_id"]))
        return
    dur = s["end_ns"] - s["begin_ns"]
    print("stall %s: %.3f ms (planned %.0f ms), msg_id %d" % (kind, dur / 1e6, planned / 1e6, s["msg_id"]))
    extra = 250e6 if kind == "io" else 100e6
    check(planned <= dur <= planned + extra, "stall lasted %.3f ms" % (dur / 1e6))
    if scenario.startswith("anr-"):
        m = msgs.get(s["msg_id"])
        if check(m is not None and m["name"] == "anr." + kind, "stall message"):
            check(m["begin_ns"] <= s["begin_ns"] and s["end_ns"] <= m["end_ns"], "stall outside its message")
        check(len(msgs) == 2 * args.count + 1, "%d messages" % len(msgs))
    if kind == "lock":
        print("  holder_tid %d held %.3f ms" % (s["holder_tid"], (s["holder_unlock_ns"] - s["holder_lock_ns"]) / 1e6))
        check(s["holder_tid"] != lines[0]["pid"], "holder is main")
        check(s["holder_lock_ns"] < s["begin_ns"] < s["holder_unlock_ns"] <= s["end_ns"], "holder times")
    if kind == "io":
        print("  %d writes, %d fsyncs, %.0f MiB" % (s["writes"], s["fsyncs"], s["bytes"] / 2**20))
        check(s["writes"] > 0 and s["fsyncs"] == s["writes"], "io counts")
    if kind == "idle_handler":
        idle = [i for i in of_type(lines, "idle") if i["idle_id"] == s["idle_id"]]
        check(s["msg_id"] == 0 and len(idle) == 1 and idle[0]["name"] == "idle.stall", "idle record")
    if kind == "input":
        inputs = of_type(lines, "input")
        check([i["seq"] for i in inputs] == list(range(1, args.count + 1)), "input seqs")
        lag = [i for i in inputs if i["seq"] == s["seq"]][0]
        lat = sorted((i["finish_ns"] - i["receive_ns"]) / 1e6 for i in inputs if i["seq"] != s["seq"])
        print("  inputs %d, seq %d receive->finish %.3f ms; others %.3f-%.3f ms"
              % (len(inputs), s["seq"], (lag["finish_ns"] - lag["receive_ns"]) / 1e6, lat[0], lat[-1]))
        check(lag["finish_ns"] - lag["receive_ns"] >= planned, "lagging input too short")
        # The events queued during the stall are handled one after another.
        check(lat[-1] < 200, "another input took %.1f ms" % lat[-1])
        for i in inputs:
            check(i["event_ns"] <= i["receive_ns"] <= i["receive_after_ns"] <= i["finish_ns"] <= i["finish_after_ns"],
                  "input %d times" % i["seq"])
            m = msgs.get(i["msg_id"])
            check(m is not None and m["name"] == "ViewRootImpl#processInputEvent", "input %d message" % i["seq"])
    if kind == "barrier_leak":
        period_sync, period_async = 100e6, 250e6
        exp_sync = int((planned - 1) // period_sync)
        exp_async = int((planned - 1) // period_async)
        print("  token %d, sync messages waited %d, ran during %d, async ran %d"
              % (s["token"], s["sync_waited"], s["sync_ran_during"], s["async_ran"]))
        check(s["sync_waited"] == exp_sync and s["sync_ran_during"] == 0 and s["async_ran"] == exp_async,
              "barrier counts (expected %d sync, %d async)" % (exp_sync, exp_async))
        during = [m for m in msgs.values() if m["name"] == "leak.sync" and m["begin_ns"] < s["end_ns"]]
        check(not during, "a sync message ran behind the barrier")
        b = [x for x in of_type(lines, "barrier") if x["token"] == s["token"]]
        check(len(b) == 1 and b[0]["post_ns"] >= s["begin_ns"] and b[0]["remove_ns"] >= s["end_ns"], "barrier record")


def idle_long(lines, args):
    sp = of_type(lines, "idle_span")
    if not check(len(sp) == 1, "%d idle_span records" % len(sp)):
        return
    s = sp[0]
    dur = s["end_ns"] - s["begin_ns"]
    planned = (args.stall_ms or 10000) * 10**6
    print("idle span: %.3f ms (planned %.0f ms)" % (dur / 1e6, planned / 1e6))
    check(planned <= dur <= planned + 50e6, "idle span %.3f ms" % (dur / 1e6))
    inside = [m for m in of_type(lines, "message") if s["begin_ns"] < m["begin_ns"] and m["end_ns"] < s["end_ns"]]
    check(not inside and not of_type(lines, "stall"), "messages or stalls inside the idle span")


def startup(lines, scenario):
    ms = of_type(lines, "milestone")
    t0 = lines[0]["start_ns"]
    names = [m["name"] for m in ms]
    for m in ms:
        print("  %-17s %9.3f ms  %-26s warm=%s" % (m["name"], (m["ts_ns"] - t0) / 1e6, m.get("activity", ""),
                                                   str(m["warm"]).lower()))
    launch = ["activity.launch", "first.frame", "activity.focus"]
    expected = {
        "startup": ["process.start", "app.create.begin", "app.create.end"] + launch + ["fully.drawn"],
        "startup-slow-create": ["process.start", "app.create.begin", "app.create.end"] + launch + ["fully.drawn"],
        "startup-splash": ["process.start", "app.create.begin", "app.create.end"] + launch + launch + ["fully.drawn"],
        "startup-warm": ["process.start", "app.create.begin", "app.create.end"] + launch + ["fully.drawn"]
                        + launch + ["fully.drawn"],
    }[scenario]
    check(names == expected, "milestones %s" % names)
    check(ms[0]["ts_ns"] == t0, "process.start != process start_ns")
    check(all(a["ts_ns"] <= b["ts_ns"] for a, b in zip(ms, ms[1:])), "milestones out of time order")
    acts = [m.get("activity") for m in ms if m["name"] == "activity.focus"]
    check(acts == {"startup-splash": ["sample.app.SplashActivity", "sample.app.MainActivity"],
                   "startup-warm": ["sample.app.MainActivity"] * 2}.get(scenario, ["sample.app.MainActivity"]),
          "focused %s" % acts)
    warm = [m["warm"] for m in ms]
    if scenario == "startup-warm":
        check(warm == [False] * 7 + [True] * 4, "warm flags %s" % warm)
    else:
        check(not any(warm), "warm flags")
    frames = {f["frame_id"]: f for f in of_type(lines, "frame")}
    for m in ms:
        if m["name"] == "first.frame":
            check(m["frame_id"] in frames and frames[m["frame_id"]]["end_ns"] == m["ts_ns"], "first.frame record")
    create = [m["ts_ns"] for m in ms if m["name"].startswith("app.create")]
    dur = (create[1] - create[0]) / 1e6
    planned = 1500 if scenario == "startup-slow-create" else 150
    print("  app create %.3f ms (planned %d), first frame %.3f ms after launch"
          % (dur, planned, (ms[names.index("first.frame")]["ts_ns"] - ms[names.index("activity.launch")]["ts_ns"]) / 1e6))
    check(planned <= dur <= planned * 1.1 + 20, "app create %.3f ms" % dur)
    meth = {m["method_id"]: m for m in of_type(lines, "method")}
    check(15 in meth and meth[15]["depth"] == 0 and all(i in meth for i in range(15, 24)),
          "SampleApplication call tree")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario")
    ap.add_argument("truth")
    ap.add_argument("--refresh-rate", type=int, default=60)
    ap.add_argument("--count", type=int)
    ap.add_argument("--stall-ms", type=int)
    args = ap.parse_args()
    defaults = {"frames-smooth": 120, "frames-jank": 150, "frames-busy-between": 120,
                "frames-refresh-change": 1000, "input-lag": 40}
    if args.count is None:
        args.count = defaults.get(args.scenario, 5)
    lines = []
    with open(args.truth) as f:
        for n, text in enumerate(f, 1):
            try:
                x = json.loads(text)
            except ValueError as e:
                fail("line %d is not JSON: %s" % (n, e))
                continue
            if not check(isinstance(x, dict) and "type" in x, "line %d has no type" % n):
                continue
            lines.append(x)
    if lines:
        common(lines, args.scenario)
        s = args.scenario
        if s.startswith("frames-"):
            frames(lines, s, args)
        elif s.startswith("anr-") or s in ("idle-stall", "input-lag", "barrier-leak"):
            stalls(lines, s, args)
        elif s == "idle-long":
            idle_long(lines, args)
        elif s.startswith("startup"):
            startup(lines, s)
        if lines[-1]["type"] == "end":
            print("run: %.3f s" % ((lines[-1]["end_ns"] - lines[0]["start_ns"]) / 1e9))
    for what in FAILURES:
        print("FAIL: " + what)
    print("%s: %s" % (args.scenario, "FAIL" if FAILURES else "ok"))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
