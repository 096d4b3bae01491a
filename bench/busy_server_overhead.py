#!/usr/bin/env python3
"""What looptrace's default mode costs a busy server (issue 32), side by side in one run.

Servers (bench/servers/, everything on 127.0.0.1, one closed-loop client at the highest rate
it reaches): a tight asyncio echo server (/usr/bin/python3.11, profile python-asyncio), a
Node `http` server (/usr/bin/node, the node profile), a C epoll echo server (the epoll
profile), and an asyncio server whose handlers block (sleep, lock, disk; ~0.1-1 ms each, a few
thousand requests per second: the "realistic" server, where switch-outs happen inside
messages).

Setups, interleaved by round (round_order.py: each setup in each position and right after each
of the others equally often): untraced; the message probes alone
(`record -p PID --no-thread-tracking --sample-rate 0`); the probes alone beside the floor of
thread tracking (looptrace_tracking_floor: programs on the default mode's sched_switch,
sched_waking and cpu-clock attach points doing only the process filter and a clock read, what
any tool that sees the thread's switches, wake-ups and CPU pays); the default mode
(`record -p PID`); and with LT_BASELINE=/path/to/another/looptrace, that build's default mode
too (before/after in one run). LT_BASELINE may name several, `NAME=PATH,NAME=PATH` (a PATH may
be a wrapper script, e.g. `exec nice -n 19 looptrace "$@"`), and --setups picks the built-in
setups to run beside them. Each run attaches, lets the client load the server for --warmup
seconds (the session's first seconds under load, when the loader reads the symbols and unwind
rows of files its stacks meet for the first time: their requests a second are shown apart), then
measures the steady state an always-on session runs in. Per run: the client's requests per
second, the server's CPU per request, the loader's own CPU during the measured window (a share
of one core, and per request), its wake-ups a second (voluntary context switches) and the
machine's busy CPU; with --bpf-stats, each BPF program the traced setups hold: its runs and
time per request.
Prints medians and ratios; the machines are shared and noisy, so trust ratios of one run, and
most those paired by round (each setup against untraced on the same server process seconds
apart, with a bootstrap interval of their median). Every round's figures go to results.json.

Root. Each traced run holds /tmp/looptrace-integration.lock (the integration tests check that
no probe of looptrace is attached anywhere while they run).
  sudo bench/busy_server_overhead.py [--rounds 5] [--seconds 4] [--warmup 3] [--build build] [--servers echo,node,epoll,blocking]
                                    [--setups untraced,probes,floor,default] [--bpf-stats]
  sudo LT_BASELINE=old=/tmp/old/looptrace,niced=/tmp/nice19.sh bench/busy_server_overhead.py --setups untraced,default
"""
import argparse
import json
import fcntl
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from round_order import round_order

HERE = os.path.dirname(os.path.abspath(__file__))
SERVERS = os.path.join(HERE, "servers")
PY = "/usr/bin/python3.11"
FLOOR = "probes + tracking floor"
NODE = "/usr/bin/node"
TICK = os.sysconf("SC_CLK_TCK")
BLOCKING_CHECKS = [
    ("a slow message (evil method)", r"evil methods: [1-9]"),
    ("its sampled tree", r"\(sampled\)"),
    ("its off-CPU reason (sleep)", r"\[off CPU: sleep\]|sleep \d+%"),
    ("a LAG snapshot", r"----- LAG pid"),
]


def process_cpu_s(pid):
    """utime + stime of a whole process (every thread), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def voluntary_switches(pid):
    """Times a process's threads went to sleep by themselves (a loader's wake-ups, roughly)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/status") as f:
            total += sum(int(line.split()[1]) for line in f if line.startswith("voluntary_ctxt_switches"))
    return total


def machine_busy_s():
    """CPU seconds the machine spent not idle (all CPUs)."""
    with open("/proc/stat") as f:
        cpu = [int(v) for v in f.readline().split()[1:]]
    idle = cpu[3] + cpu[4]
    return (sum(cpu[:8]) - idle) / TICK


def bpf_program_ids(pids):
    """Ids of the BPF programs the processes `pids` hold open (their fds' fdinfo)."""
    ids = set()
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fdinfo")
        except OSError:
            continue
        for fd in fds:
            try:
                with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                    ids.update(int(line.split()[1]) for line in f if line.startswith("prog_id:"))
            except OSError:
                pass
    return ids


def bpf_program_runs(owners):
    """{program name: (runs, ns)} of the BPF programs the processes `owners` hold (bpftool;
    run counts and times need kernel.bpf_stats_enabled=1)."""
    ids = bpf_program_ids(owners)
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True).stdout
    runs = {}
    for prog in json.loads(out or "[]"):
        if prog.get("id") not in ids:
            continue
        count, ns = runs.get(prog.get("name", "?"), (0, 0))
        runs[prog.get("name", "?")] = (count + prog.get("run_cnt", 0), ns + prog.get("run_time_ns", 0))
    return runs


class Server:
    def __init__(self, name, argv, mode, options=(), checks=()):
        # options: looptrace options of every traced setup; checks: (what, regex) the default
        # mode's report must match (the sections it promises, still filled)
        self.name, self.argv, self.mode = name, argv, mode
        self.options, self.checks = list(options), list(checks)
        self.proc = None

    def start(self, port):
        self.proc = subprocess.Popen(self.argv + [str(port)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True)
        line = self.proc.stdout.readline()
        if "listening" not in line:
            sys.exit(f"{self.name}: did not start")

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def build_servers(out, names):
    epoll = os.path.join(out, "epoll_echo")
    client = os.path.join(out, "closed_loop_client")
    subprocess.check_call(["cc", "-O2", "-o", epoll, os.path.join(SERVERS, "epoll_echo.c")])
    subprocess.check_call(["cc", "-O2", "-o", client, os.path.join(SERVERS, "closed_loop_client.c")])
    all_servers = {
        "echo": Server("asyncio echo", [PY, os.path.join(SERVERS, "echo_asyncio.py")], "echo"),
        "node": Server("node http", [NODE, os.path.join(SERVERS, "http_node.js")], "http"),
        "epoll": Server("C epoll echo", [epoll], "echo"),
        # Its slow requests (100 ms, one in 2000) over lowered thresholds: a slow message with
        # its sampled tree and off-CPU reasons, and a LAG snapshot, in every default-mode report.
        "blocking": Server("asyncio blocking handlers", [PY, os.path.join(SERVERS, "blocking_asyncio.py")], "lines",
                           ["--evil-threshold", "40", "--lag-threshold", "60"], BLOCKING_CHECKS),
    }
    return [all_servers[n] for n in names], client


class Tracer:
    """A looptrace session on the server, started before the client and ended after it."""

    def __init__(self, looptrace, options, pid, report, floor=None):
        self.lock = open("/tmp/looptrace-integration.lock", "w")
        fcntl.flock(self.lock, fcntl.LOCK_EX)
        # --full: the checks below read sections the default (short) text report cuts.
        self.proc = subprocess.Popen([looptrace, "record", "-p", str(pid), "--full", "-o", report] + options,
                                     stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        while True:
            line = self.proc.stderr.readline()
            if not line:
                sys.exit(f"looptrace did not attach: {self.proc.wait()}")
            if "tracing pid" in line:
                break
        self.floor = None
        if floor:
            self.floor = subprocess.Popen([floor, str(pid)], stdout=subprocess.PIPE, text=True)
            if "attached" not in self.floor.stdout.readline():
                sys.exit(f"{floor} did not attach: {self.floor.wait()}")

    def cpu_s(self):
        return process_cpu_s(self.proc.pid)

    def wakeups(self):
        return voluntary_switches(self.proc.pid)

    def stop(self):
        if self.floor:
            self.floor.terminate()
            if self.floor.wait() != 0:
                sys.exit(f"the tracking floor exited with {self.floor.returncode}")
        self.proc.send_signal(signal.SIGINT)
        self.proc.stderr.read()
        rc = self.proc.wait()
        fcntl.flock(self.lock, fcntl.LOCK_UN)
        self.lock.close()
        if rc != 0:
            sys.exit(f"looptrace exited with {rc}")


def run_once(server, client, seconds, warmup, looptrace, options, report, floor=None, bpf_stats=False):
    tracer = Tracer(looptrace, options + server.options, server.proc.pid, report, floor) if looptrace else None
    time.sleep(1.0)  # the loader's first look at the maps, before any request
    # The client's first `warmup` seconds are the session's first seconds under load: the loader
    # reads the symbols and unwind rows of files its stacks reach for the first time (the cost
    # block's "once" figure). They are counted apart; the window after them is the steady state
    # an always-on session runs in, where every CPU figure below is measured.
    client_proc = subprocess.Popen([client, str(server.proc.server_port), server.mode, str(seconds), str(warmup)],
                                   stdout=subprocess.PIPE, text=True)
    time.sleep(warmup)
    server_cpu0, machine0 = process_cpu_s(server.proc.pid), machine_busy_s()
    loader_cpu0 = tracer.cpu_s() if tracer else 0
    wakeups0 = tracer.wakeups() if tracer else 0
    owners = {p.pid for p in (tracer.proc, tracer.floor) if p} if tracer else set()
    programs0 = bpf_program_runs(owners) if bpf_stats and tracer else {}
    out, _ = client_proc.communicate()
    programs = bpf_program_runs(owners) if bpf_stats and tracer else {}
    if client_proc.returncode != 0:
        sys.exit(f"{client} exited with {client_proc.returncode}")
    server_cpu = process_cpu_s(server.proc.pid) - server_cpu0
    machine = machine_busy_s() - machine0
    loader_cpu = tracer.cpu_s() - loader_cpu0 if tracer else 0
    wakeups = tracer.wakeups() - wakeups0 if tracer else 0
    if tracer:
        tracer.stop()
    words = out.split()
    requests, total, elapsed = int(words[1]), int(words[5]), float(words[7])
    # "lines": each kind of handler's median round trip (cpu_us C sleep_us S ...)
    round_trips = {key[:-3]: float(value) for key, value in zip(words[8::2], words[9::2]) if key.endswith("_us")}
    window = max(elapsed - warmup, 1e-3)
    bpf = {name: ((runs - programs0.get(name, (0, 0))[0]) / max(requests, 1),
                  (ns - programs0.get(name, (0, 0))[1]) / max(requests, 1))
           for name, (runs, ns) in programs.items()}
    return {
        "bpf": bpf,  # program name: (runs, ns) per request
        "round_trip_us": round_trips,  # handler kind: median round trip (the blocking server)
        "rps": requests / seconds,
        "first_rps": (total - requests) / warmup if warmup > 0 else float("nan"),
        "cpu_us_per_request": server_cpu / requests * 1e6,
        "loader_share": loader_cpu / window,
        "loader_us_per_request": loader_cpu / requests * 1e6,
        "loader_wakeups_per_s": wakeups / window,
        "machine_share": machine / window,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=4)
    parser.add_argument("--warmup", type=float, default=3,
                        help="seconds of load before the measured window (the session's first seconds, shown apart)")
    parser.add_argument("--build", default="build")
    parser.add_argument("--servers", default="echo,node,epoll,blocking")
    parser.add_argument("--port", type=int, default=18700)
    parser.add_argument("--setups", default="untraced,probes,floor,default",
                        help="the built-in setups to run (untraced, probes, floor, default), beside LT_BASELINE's")
    parser.add_argument("--bpf-stats", action="store_true",
                        help="per BPF program: runs and time per request in the measured window "
                             "(turns kernel.bpf_stats_enabled on for the run, which adds ~20 ns a run)")
    args = parser.parse_args()
    looptrace = os.path.abspath(os.path.join(args.build, "looptrace"))
    floor = os.path.abspath(os.path.join(args.build, "looptrace_tracking_floor"))
    probes_only = ["--no-thread-tracking", "--sample-rate", "0"]
    built_in = {
        "untraced": ("untraced", None, []),
        "probes": ("probes only", looptrace, probes_only),
        "floor": (FLOOR, looptrace, probes_only),
        "default": ("default", looptrace, []),
    }
    chosen = [name for name in args.setups.split(",") if name]
    unknown = [name for name in chosen if name not in built_in]
    if unknown or not chosen:
        sys.exit(f"--setups: unknown {', '.join(unknown) or 'none chosen'} (choose from {', '.join(built_in)})")
    setups = [built_in[name] for name in built_in if name in chosen]
    if "floor" in chosen and not os.access(floor, os.X_OK):
        sys.exit(f"{floor} not found: build the looptrace_tracking_floor target first")
    baselines = [b for b in os.environ.get("LT_BASELINE", "").split(",") if b]
    for baseline in baselines:
        label, path = baseline.split("=", 1) if "=" in baseline else ("LT_BASELINE", baseline)
        if not os.access(path, os.X_OK):
            sys.exit(f"LT_BASELINE: {path} is not an executable file")
        setups.append((f"default ({label})", path, []))
    if len(setups) < 2:
        sys.exit("nothing to compare: choose two setups or more (--setups, LT_BASELINE)")
    out = tempfile.mkdtemp(prefix="busy-bench-")
    servers, client = build_servers(out, args.servers.split(","))
    results = {(s.name, name): [] for s in servers for name, _, _ in setups}
    missing = []  # (server, setup, what) a default-mode report lacked
    port = args.port
    stats_switch = "/proc/sys/kernel/bpf_stats_enabled"
    stats_were = open(stats_switch).read().strip() if args.bpf_stats else None
    if args.bpf_stats:
        with open(stats_switch, "w") as f:
            f.write("1")
    try:
        run_rounds(args, servers, client, setups, floor, results, missing, port, out)
    finally:
        if stats_were is not None:
            with open(stats_switch, "w") as f:
                f.write(stats_were)
    print_results(args, servers, setups, results, missing, out)


def run_rounds(args, servers, client, setups, floor, results, missing, port, out):
    for rnd in range(args.rounds):
        for server in servers:
            port += 1
            server.start(port)
            server.proc.server_port = port
            for name, binary, options in round_order(setups, rnd):
                report = os.path.join(out, re.sub("[^a-z]+", "-", f"{server.name}-{name}".lower()).strip("-") + ".txt")
                results[(server.name, name)].append(
                    run_once(server, client, args.seconds, args.warmup, binary, options, report,
                             floor if name == FLOOR else None, args.bpf_stats))
                if name.startswith("default"):
                    text = open(report).read()
                    missing += [(server.name, name, what) for what, regex in server.checks
                                if not re.search(regex, text)]
            server.stop()
        this_round = ", ".join(f"{served} {name} {runs[-1]['rps']:.0f}" for (served, name), runs in results.items())
        print(f"round {rnd + 1}/{args.rounds} done (requests a second: {this_round})", file=sys.stderr)


def print_results(args, servers, setups, results, missing, out):
    def med(server, setup, key):
        return statistics.median(r[key] for r in results[(server.name, setup)])

    print(f"busy servers, median of {args.rounds} interleaved rounds of {args.seconds:g} s after {args.warmup:g} s of "
          f"load, one closed-loop client (first s: the {args.warmup:g} s before, the session's first seconds)")
    for server in servers:
        print(f"\n{server.name}")
        print(f"  {'setup':24} {'req/s':>9} {'x untraced':>10} {'x probes':>9} {'x floor':>8} {'server CPU/req':>15} "
              f"{'loader CPU':>10} {'loader CPU/req':>15} {'wake-ups/s':>10} {'machine CPU':>11} {'first s x untraced':>18}")
        names = [name for name, _, _ in setups]

        def ratio(rps, setup, width):  # "-" where that setup did not run
            return f"{rps / med(server, setup, 'rps'):{width}.3f}" if setup in names else f"{'-':>{width}}"

        def first(server, setup):  # the first seconds' requests a second against untraced's
            if "untraced" not in names or args.warmup <= 0:
                return "-"
            return f"{med(server, setup, 'first_rps') / med(server, 'untraced', 'first_rps'):.3f}"

        for name in names:
            rps = med(server, name, "rps")
            print(f"  {name:24} {rps:9.0f} {ratio(rps, 'untraced', 10)} {ratio(rps, 'probes only', 9)} "
                  f"{ratio(rps, FLOOR, 8)} "
                  f"{med(server, name, 'cpu_us_per_request'):12.1f} us {100 * med(server, name, 'loader_share'):9.1f}% "
                  f"{med(server, name, 'loader_us_per_request'):12.1f} us {med(server, name, 'loader_wakeups_per_s'):10.0f} "
                  f"{100 * med(server, name, 'machine_share'):10.1f}% {first(server, name):>18}")
        if "untraced" in names and args.rounds > 1:
            print_paired(server, names, results)
        if args.bpf_stats:
            print_bpf_programs(server, names, results)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({f"{server} / {setup}": runs for (server, setup), runs in results.items()}, f, indent=1)
    for server, setup, what in sorted(set(missing)):
        print(f"\nMISSING in a report of {server}, {setup}: {what}")
    print(f"\nreports of the last round: {out}")


def paired_interval(ratios, level=0.90, resamples=4000):
    """The median of per-round ratios and a bootstrap interval of it (percentile, fixed seed:
    the same rounds give the same interval)."""
    rng = random.Random(0)
    medians = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(resamples))
    tail = (1 - level) / 2
    return statistics.median(ratios), medians[int(tail * resamples)], medians[int((1 - tail) * resamples) - 1]


def print_paired(server, names, results):
    """Each setup against untraced round by round: the two ran on the same server process seconds
    apart, so the machine's drift over the run (other work, the host) cancels out of a round's
    ratio, where the medians above compare rounds minutes apart."""
    untraced = [r["rps"] for r in results[(server.name, "untraced")]]
    print("  paired by round (x untraced in the same round): median [90% bootstrap interval of the median], "
          "range of rounds")
    for name in names:
        if name == "untraced":
            continue
        ratios = [r["rps"] / u for r, u in zip(results[(server.name, name)], untraced) if u > 0]
        if len(ratios) < 2:
            continue
        mid, low, high = paired_interval(ratios)
        print(f"    {name:24} {mid:.3f} [{low:.3f}, {high:.3f}]   {min(ratios):.3f}-{max(ratios):.3f}")
    kinds = sorted({k for r in results[(server.name, "untraced")] for k in r.get("round_trip_us", {})})
    if not kinds:
        return
    print("  round trip added, by handler kind: median over rounds of (setup - untraced) in the same round, "
          "us (untraced's own median)")
    base = results[(server.name, "untraced")]
    print(f"    {'untraced':24} " + "  ".join(f"{k} {statistics.median(r['round_trip_us'][k] for r in base):7.1f}"
                                             for k in kinds))
    for name in names:
        if name == "untraced":
            continue
        added = {k: statistics.median(r["round_trip_us"][k] - u["round_trip_us"][k]
                                      for r, u in zip(results[(server.name, name)], base)) for k in kinds}
        print(f"    {name:24} " + "  ".join(f"{k} {added[k]:+7.1f}" for k in kinds))


def print_bpf_programs(server, names, results):
    """Each traced setup's BPF programs: runs and time per request (medians), heaviest first."""
    print(f"  BPF programs in the measured window (kernel.bpf_stats_enabled): runs and time per request")
    for name in names:
        runs = results[(server.name, name)]
        programs = sorted({p for r in runs for p in r["bpf"]})
        if not programs:
            continue
        rows = []
        for program in programs:
            per_run = [r["bpf"].get(program, (0, 0)) for r in runs]
            rows.append((statistics.median(ns for _, ns in per_run), statistics.median(n for n, _ in per_run), program))
        rows.sort(reverse=True)
        total = sum(ns for ns, _, _ in rows)
        print(f"    {name}: {total / 1000:.2f} us a request in BPF")
        for ns, count, program in rows:
            if count:
                print(f"      {program:24} {count:7.2f} runs {ns / max(count, 1e-9):7.0f} ns a run {ns / 1000:7.2f} us")


if __name__ == "__main__":
    main()
