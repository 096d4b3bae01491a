#!/usr/bin/env bash
# Fault tests (root, not in CI): targets that churn processes and threads, die by SIGKILL
# in the middle of a message or exit while looptrace attaches; every output on a full disk;
# looptrace itself SIGKILLed at random points. After every case: no looptrace BPF program
# loaded or attached (bpftool prog/link/perf show: names lt_*) and no temporary file left in
# the output directory. Prints a table: case / expected / observed / PASS-FAIL.
# Usage: sudo scripts/faults.sh [SEED]        (BUILD_DIR=build by default)
# Holds /tmp/looptrace-integration.lock for the whole run: other BPF tests wait.
set -uo pipefail
BUILD=${BUILD_DIR:-build}
LOCK=/tmp/looptrace-integration.lock
if [[ -z "${LOOPTRACE_FAULTS_LOCKED:-}" ]]; then
  echo "faults: waiting for $LOCK" >&2
  LOOPTRACE_FAULTS_LOCKED=1 exec flock "$LOCK" "$0" "$@"
fi
[[ $(id -u) == 0 ]] || { echo "faults: needs root (BPF, mount)" >&2; exit 2; }
LT=$(realpath "$BUILD/looptrace")
APP=$(realpath "$BUILD/looptrace-sample-app")
PROFILE=$(realpath "$(dirname "$0")/../tests/sample_app/profiles/sample.profile")
SEED=${1:-$$}
RANDOM=$SEED
out=$(mktemp -d /tmp/looptrace-faults.XXXXXX)
full=$out/full
# SIGKILLs, by pid, the sample targets this script started whose arguments contain $1 (a
# path under this run's unique $out).
kill_targets() {
  local p
  for p in /proc/[0-9]*; do
    [[ $(readlink "$p/exe" 2>/dev/null) == "$APP" ]] || continue
    tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -qF -- "$1" && kill -9 "${p#/proc/}" 2>/dev/null
  done
  return 0
}
cleanup() {
  mountpoint -q "$full" && umount "$full"
  kill_targets "$out/"
  rm -rf "$out"
}
trap cleanup EXIT
rows=()
failures=0

# Names of looptrace BPF programs loaded, or attached through links or perf events.
leftover_bpf() {
  local ids names=()
  ids=$( { bpftool -j link show; bpftool -j perf show; bpftool -j prog show; } 2>/dev/null |
    python3 -c '
import json, sys
ids = set()
for doc in sys.stdin.read().replace("][", "]\n[").splitlines():
    doc = doc.strip()
    if not doc: continue
    try: arr = json.loads(doc)
    except Exception: continue
    for e in arr if isinstance(arr, list) else []:
        name = e.get("name", "")
        if "prog_id" in e: ids.add(str(e["prog_id"]))
        elif name.startswith("lt_"): print("prog:" + name)
for i in sorted(ids): print("id:" + i)
')
  for x in $ids; do
    case $x in
      prog:*) names+=("${x#prog:}") ;;
      id:*) n=$(bpftool -j prog show id "${x#id:}" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin).get("name",""))' 2>/dev/null)
            [[ $n == lt_* ]] && names+=("attached:$n") ;;
    esac
  done
  echo "${names[*]:-}"
}
temps_in() { find "$1" -maxdepth 1 -name '*.tmp*' -printf '%f ' 2>/dev/null; }
# row CASE EXPECTED OBSERVED OK(0/1)
row() {
  rows+=("$1"$'\t'"$2"$'\t'"$3"$'\t'"$([[ $4 == 0 ]] && echo PASS || echo FAIL)")
  [[ $4 == 0 ]] || failures=$((failures + 1))
}
json_count() {  # FILE TYPE: lines of that type
  [[ -s $1 ]] || { echo 0; return; }
  python3 -c 'import json,sys; print(sum(1 for l in open(sys.argv[1]) if json.loads(l).get("type")==sys.argv[2]))' "$1" "$2" 2>/dev/null || echo "?"
}
completed_count() {
  [[ -s $1 ]] || { echo 0; return; }
  python3 -c 'import json,sys; print(sum(r["count"] for r in map(json.loads, open(sys.argv[1])) if r["type"]=="message_summary"))' "$1" 2>/dev/null || echo "?"
}
truth_messages() { python3 -c 'import json,sys; print(sum(1 for l in open(sys.argv[1]) if json.loads(l).get("type")=="message"))' "$1" 2>/dev/null || echo "?"; }
after_checks() {  # DIR: "bpf=... temps=..." and 0 when clean
  sleep 0.3
  local b t
  b=$(leftover_bpf); t=$(temps_in "$1")
  echo "bpf left: ${b:-none}; temps: ${t:-none}"
  [[ -z $b && -z $t ]]
}

echo "faults: seed $SEED, output in $out"

# 1. Process and thread churn in the target while it is traced.
d=$out/churn; mkdir -p "$d"
"$LT" -q run --profile "$PROFILE" -f json -o "$d/r.json" -- "$APP" --scenario churn --count 3000 --truth "$d/truth.jsonl" 2>"$d/err"
st=$?
made=$(truth_messages "$d/truth.jsonl"); got=$(completed_count "$d/r.json")
churn=$(grep -o '"forks".*' "$d/truth.jsonl" 2>/dev/null | tr -d '}"' | head -1)
clean=$(after_checks "$d"); c=$?
row "churn: fork/exec/spawn/threads for 3 s" "exit 0, messages = truth, clean" \
  "exit $st, messages $got/$made ($churn), $clean" $([[ $st == 0 && $made == "$got" && $made != 0 && $c == 0 ]]; echo $?)

# 2. Target SIGKILLed in the middle of a 4 s message.
d=$out/killed-target; mkdir -p "$d"
"$LT" -q run --profile "$PROFILE" -f json -o "$d/r.json" -- "$APP" --scenario anr-busy --stall-ms 4000 --truth "$d/truth.jsonl" 2>"$d/err" &
lt=$!
sleep 1.5
kill_targets "$d/truth.jsonl"
wait $lt; st=$?
unf=$(json_count "$d/r.json" unfinished_message); got=$(completed_count "$d/r.json")
clean=$(after_checks "$d"); c=$?
row "target SIGKILLed mid-message" "exit 0, 5 completed + 1 unfinished, clean" \
  "exit $st, $got completed + $unf unfinished, $clean" $([[ $st == 0 && $got == 5 && $unf == 1 && $c == 0 ]]; echo $?)

# 3. Target exits while `record -p` attaches (0-40 ms after it started; ~40 ms lifetime).
for delay in 0 0.01 0.02 0.04; do
  d=$out/exit-during-attach-$delay; mkdir -p "$d"
  "$APP" --scenario quick --truth "$d/truth.jsonl" &
  app=$!
  sleep "$delay"
  "$LT" -q record --profile "$PROFILE" -p "$app" -f json -o "$d/r.json" 2>"$d/err"; st=$?
  wait "$app" 2>/dev/null
  err=$(head -c 120 "$d/err" | tr '\n' ' ')
  clean=$(after_checks "$d"); c=$?
  row "target exits during attach (+${delay}s)" "exit 0 or 3 with a message, clean" \
    "exit $st ${err:+($err)}, $clean" $([[ ($st == 0 || ($st == 3 && -n $err)) && $c == 0 ]]; echo $?)
done

# 4. Disk full on every output: a 64 KiB tmpfs filled up before the session.
mkdir -p "$full"
mount -t tmpfs -o size=64k looptrace-faults "$full"
dd if=/dev/zero of="$full/filler" bs=4k 2>/dev/null
for fmt in text json chrome html folded; do
  "$LT" -q run --profile "$PROFILE" -f "$fmt" -o "$full/report.$fmt" -- "$APP" --scenario quick 2>"$out/err.$fmt"; st=$?
  err=$(grep -m1 -o 'cannot write.*' "$out/err.$fmt" | sed "s|$full/||")
  clean=$(after_checks "$full"); c=$?
  size=$(stat -c %s "$full/report.$fmt" 2>/dev/null)
  left=$( [[ -n $size ]] && echo "report.$fmt exists ($size bytes)" || echo "no report file")
  # An empty report (folded: no slow span in this scenario) needs no space: exit 0 is right.
  row "disk full: -f $fmt -o" "exit 7 + ENOSPC and no file, or exit 0 if the report is empty; clean" \
    "exit $st ${err:+($err)}, $left, $clean" \
    $([[ ( ($st == 7 && $err == *"No space left"* && -z $size) || ($st == 0 && $size == 0) ) && $c == 0 ]]; echo $?)
done
"$LT" -q run --profile "$PROFILE" -f json -o "$out/ok.json" --save "$full/rec.jsonl" -- "$APP" --scenario quick 2>"$out/err.save"; st=$?
err=$(grep -m1 -o 'cannot write.*' "$out/err.save" | sed "s|$full/||")
got=$(completed_count "$out/ok.json")
clean=$(after_checks "$full"); c=$?
row "disk full: --save (report elsewhere)" "exit 7, ENOSPC named, report still written, clean" \
  "exit $st ($err), report: $got messages, $clean" \
  $([[ $st == 7 && $err == *"No space left"* && $got == 20 && ! -e $full/rec.jsonl && $c == 0 ]]; echo $?)
"$LT" -q run --profile "$PROFILE" -f json -o "$full/r.json" --save "$full/rec.jsonl.gz" -- "$APP" --scenario quick 2>"$out/err.both"; st=$?
err=$(grep -m1 -o 'cannot write.*' "$out/err.both" | sed "s|$full/||")
clean=$(after_checks "$full"); c=$?
row "disk full: --save .gz and -o" "exit 7, ENOSPC named, clean" "exit $st ($err), $clean" \
  $([[ $st == 7 && $err == *"No space left"* && $c == 0 ]]; echo $?)
umount "$full"

# 5. looptrace SIGKILLed at random points of a session (start, attach, running, drain).
d=$out/killed-looptrace; mkdir -p "$d"
for i in 1 2 3 4 5 6; do
  delay=$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", r / 32767 * 3 }')
  "$LT" -q run --profile "$PROFILE" -f json -o "$d/r.json" --save "$d/rec.jsonl.gz" -- "$APP" --scenario storm --rate 20000 \
    --count 4000 --truth "$d/truth.$i.jsonl" 2>/dev/null &
  lt=$!
  sleep "$delay"
  kill -9 $lt 2>/dev/null; wait $lt 2>/dev/null
  kill_targets "$d/truth.$i.jsonl"
  clean=$(after_checks "$d"); c=$?
  row "looptrace SIGKILLed at +${delay}s" "nothing attached, no temporary left" "$clean" $c
done
"$LT" -q run --profile "$PROFILE" -f json -o "$d/r.json" --save "$d/rec.jsonl.gz" -- "$APP" --scenario quick 2>"$out/err.next"; st=$?
got=$(completed_count "$d/r.json")
files=$(ls "$d" | grep -v '^truth' | tr '\n' ' ')
clean=$(after_checks "$d"); c=$?
row "next run in the same directory" "exit 0, 20 messages, only r.json + rec.jsonl.gz" \
  "exit $st, $got messages, files: $files; $clean" $([[ $st == 0 && $got == 20 && $files == "r.json rec.jsonl.gz " && $c == 0 ]]; echo $?)

echo
printf '%s\n' "case"$'\t'"expected"$'\t'"observed"$'\t'"result" "${rows[@]}" | column -t -s $'\t'
echo
echo "faults: ${#rows[@]} cases, $failures failed (seed $SEED)"
[[ $failures == 0 ]]
