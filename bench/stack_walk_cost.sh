#!/usr/bin/env bash
# What one sampled user stack costs, by walk, side by side in one run (issue 32): the sample
# app built with frame pointers (so every walk goes as deep: main to the leaf), its `messages`
# scenario (300 messages of 0.1-45 ms that spin and sleep: cpu-clock samples and switch-out
# stacks, ~3 s), under `looptrace run` with
#   eh     the default: BPF walks the stack from .eh_frame rows
#   fp     --fp-unwind: the kernel's frame-pointer walk (bpf_get_stack)
#   dwarf  --dwarf-unwind: BPF copies the stack top, the loader unwinds it (rows, then libdwfl)
#   none   --sample-rate 0: no stack samples (the baseline subtracted)
# Interleaved rounds; per walk the medians of: the scheduler programs' BPF time and the
# loader's CPU above the baseline, divided by the stacks the loader resolved
# (user_stacks_sampled), in us per stack, and the ratios to the eh walk.
#   sudo bench/stack_walk_cost.sh [-r ROUNDS] [-b BUILD_DIR]
# Root. Each run holds /tmp/looptrace-integration.lock (integration tests check that no
# looptrace probe is attached while they run).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
rounds=5
build="$here/build"
while getopts "r:b:h" opt; do
  case $opt in
    r) rounds=$OPTARG ;;
    b) build=$OPTARG ;;
    *) sed -n 2,17p "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done
[[ $(id -u) -eq 0 ]] || { echo "stack_walk_cost: needs root" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
declare -A options=([eh]="" [fp]="--fp-unwind" [dwarf]="--dwarf-unwind" [none]="--sample-rate 0")
walks=(none eh fp dwarf)

for ((round = 1; round <= rounds; ++round)); do
  for walk in "${walks[@]}"; do
    # shellcheck disable=SC2086
    flock /tmp/looptrace-integration.lock "$build/looptrace" -q run -f json -o "$work/out.json" \
      --profile "$here/tests/sample_app/profiles/sample.profile" ${options[$walk]} -- \
      "$build/looptrace-sample-app" --scenario messages >/dev/null 2>"$work/err" || {
      echo "stack_walk_cost: $walk failed: $(tail -1 "$work/err")" >&2
      continue
    }
    python3 - "$work/out.json" >>"$work/$walk" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("type") == "stats":
        c = r["counters"]
        print(c["cost_sched_bpf_ns"], c["cost_loader_cpu_ns"], c["user_stacks_sampled"])
PY
  done
done

python3 - "$work" "${walks[@]}" <<'PY'
import statistics, sys
work, walks = sys.argv[1], sys.argv[2:]
rows = {w: [list(map(int, l.split())) for l in open(f"{work}/{w}")] for w in walks}
base_bpf = statistics.median(r[0] for r in rows["none"])
base_loader = statistics.median(r[1] for r in rows["none"])
per = {}
for w in walks[1:]:
    bpf = statistics.median((r[0] - base_bpf) / max(1, r[2]) for r in rows[w]) / 1e3
    loader = statistics.median((r[1] - base_loader) / max(1, r[2]) for r in rows[w]) / 1e3
    stacks = statistics.median(r[2] for r in rows[w])
    per[w] = (bpf, loader, stacks)
print(f"{'walk':<8} {'stacks':>8} {'BPF us/stack':>14} {'loader us/stack':>16} {'total us/stack':>15} {'total / eh':>11}")
for w, (bpf, loader, stacks) in per.items():
    print(f"{w:<8} {stacks:8.0f} {bpf:14.2f} {loader:16.2f} {bpf + loader:15.2f} {(bpf + loader) / (per['eh'][0] + per['eh'][1]):11.2f}")
print(f"({len(rows['none'])} rounds; baseline --sample-rate 0: {base_bpf / 1e6:.1f} ms BPF, {base_loader / 1e6:.0f} ms loader)")
PY
