#!/usr/bin/env python3
"""What profiling a busy Node `http` server costs it: looptrace side by side with 0x (issue 29).

One run, interleaved rounds (round_order.py: each setup in each position and right after each of
the others equally often), a fresh server per run, one closed-loop client at the highest rate
it reaches (bench/servers/closed_loop_client.c):
  - untraced: `node http_node.js PORT`;
  - 0x (npm, the flame-graph profiler clinic.js builds on): the server restarted under
    `0x -- node http_node.js PORT` (V8's --prof sampler in the process), as 0x must;
  - looptrace default: `looptrace record -p PID` attached to the running server, no restart;
  - looptrace probes only: the same with `--no-thread-tracking --sample-rate 0`;
  - with LT_BASELINE=/path/to/another/looptrace, that build's default mode too.
Prints medians of the client's requests per second and their ratio to untraced, and the
profiler's own CPU during the window (0x's is in the server: V8's sampler thread).

Root (looptrace). 0x is installed by scripts/setup.sh into bench/peers/node_modules.
  sudo bench/node_peers.py [--rounds 5] [--seconds 4] [--build build]
"""
import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import busy_server_overhead as busy  # noqa: E402  (its Tracer, process CPU and client)
from round_order import round_order  # noqa: E402

NODE = "/usr/bin/node"
SERVER = os.path.join(HERE, "servers", "http_node.js")
ZEROX = os.path.join(HERE, "peers", "node_modules", ".bin", "0x")


def start(argv):
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            start_new_session=True)
    line = proc.stdout.readline()
    if "listening" not in line:
        sys.exit(f"{' '.join(argv)}: the server did not start")
    return proc


def node_pid(proc):
    """The node process serving: the process itself, or 0x's child."""
    out = subprocess.run(["pgrep", "-f", "-P", str(proc.pid), "http_node.js"], capture_output=True, text=True).stdout
    return int(out.split()[0]) if out.split() else proc.pid


def run_once(setup, looptrace, client, port, seconds, out):
    if "LT_BASELINE" in setup:
        looptrace = os.environ["LT_BASELINE"]
    argv = [NODE, SERVER, str(port)]
    if setup == "0x":
        argv = [ZEROX, "--output-dir", os.path.join(out, f"0x-{port}"), "--"] + argv
    proc = start(argv)
    pid = node_pid(proc)
    tracer = None
    if setup.startswith("looptrace"):
        options = ["--no-thread-tracking", "--sample-rate", "0"] if "probes" in setup else []
        tracer = busy.Tracer(looptrace, options, pid, os.path.join(out, f"report-{port}.txt"))
    time.sleep(0.2)
    cpu0 = busy.process_cpu_s(pid)
    loader0 = tracer.cpu_s() if tracer else 0
    words = subprocess.check_output([client, str(port), "http", str(seconds), "0.5"], text=True).split()
    server_cpu = busy.process_cpu_s(pid) - cpu0
    loader_cpu = tracer.cpu_s() - loader0 if tracer else 0
    if tracer:
        tracer.stop()
    os.killpg(proc.pid, signal.SIGINT)  # 0x writes its profile on the way out: not measured
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    requests, elapsed = int(words[1]), float(words[7])
    return {"rps": requests / seconds, "server_cpu": server_cpu / elapsed, "loader_cpu": loader_cpu / elapsed}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=4)
    parser.add_argument("--build", default="build")
    parser.add_argument("--port", type=int, default=18800)
    args = parser.parse_args()
    if not os.access(ZEROX, os.X_OK):
        sys.exit(f"{ZEROX} is missing: run scripts/setup.sh (it installs bench/peers with npm)")
    looptrace = os.path.abspath(os.path.join(args.build, "looptrace"))
    out = tempfile.mkdtemp(prefix="node-peers-")
    client = os.path.join(out, "closed_loop_client")
    subprocess.check_call(["cc", "-O2", "-o", client, os.path.join(HERE, "servers", "closed_loop_client.c")])
    setups = ["untraced", "0x", "looptrace default", "looptrace probes only"]
    if os.environ.get("LT_BASELINE"):
        setups.append("looptrace default (LT_BASELINE)")
    results = {s: [] for s in setups}
    port = args.port
    for rnd in range(args.rounds):
        for setup in round_order(setups, rnd):
            port += 1
            results[setup].append(run_once(setup, looptrace, client, port, args.seconds, out))
        print(f"round {rnd + 1}/{args.rounds} done", file=sys.stderr)
    base = statistics.median(r["rps"] for r in results["untraced"])
    print(f"node http server, median of {args.rounds} interleaved rounds of {args.seconds:g} s, one closed-loop client")
    print(f"  {'setup':32} {'req/s':>9} {'x untraced':>10} {'server CPU':>10} {'looptrace CPU':>13}")
    for s in setups:
        rps = statistics.median(r["rps"] for r in results[s])
        server = statistics.median(r["server_cpu"] for r in results[s])
        loader = statistics.median(r["loader_cpu"] for r in results[s])
        print(f"  {s:32} {rps:9.0f} {rps / base:10.3f} {100 * server:9.1f}% {100 * loader:12.1f}%")


if __name__ == "__main__":
    main()
