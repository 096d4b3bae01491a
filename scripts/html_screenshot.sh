#!/usr/bin/env bash
# Regenerates the README's screenshot of the HTML report, docs/images/html-report.png.
#
#   ./scripts/html_screenshot.sh           replay docs/images/html-report.events.jsonl.gz (the
#                                          sample target's report-tour scenario; no root needed)
#   ./scripts/html_screenshot.sh --live    record report-tour afresh first (root/BPF), and
#                                          replace that recording too
#
# The page is drawn by headless Chromium (Debian's chromium) and, when pngquant is
# installed, quantised to keep the PNG small. Needs a build (BUILD_DIR, default build).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
recording=docs/images/html-report.events.jsonl.gz
png=docs/images/html-report.png
analysis=(--method-mapping "$BUILD_DIR/looptrace-sample-app.methodMapping.txt" --evil-threshold 150
          --anr-threshold 1000 --lag-threshold 500)

for tool in "$BUILD_DIR/looptrace" "$BUILD_DIR/looptrace-sample-app"; do
  [[ -x $tool ]] || { echo "html_screenshot: $tool missing; run ./scripts/build.sh first" >&2; exit 1; }
done
chromium=$(command -v chromium || command -v chromium-browser || true)
[[ -n $chromium ]] || { echo "html_screenshot: chromium missing; run ./scripts/setup.sh" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p docs/images

if [[ ${1:-} == --live ]]; then
  if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; else SUDO=; fi
  $SUDO "$BUILD_DIR/looptrace" run --profile tests/sample_app/profiles/sample.profile \
    -f json -o "$tmp/ignored.json" --save "$tmp/recording.jsonl.gz" \
    "${analysis[@]}" -- "$BUILD_DIR/looptrace-sample-app" --scenario report-tour
  cp "$tmp/recording.jsonl.gz" "$recording"
fi

"$BUILD_DIR/looptrace" report "$recording" -f html -o "$tmp/report.html" "${analysis[@]}"
"$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync --disable-extensions \
  --user-data-dir="$tmp/profile" --virtual-time-budget=10000 --hide-scrollbars \
  --force-device-scale-factor=1 --window-size=1280,1040 --screenshot="$tmp/shot.png" \
  "file://$tmp/report.html" 2>/dev/null
if command -v pngquant >/dev/null; then
  pngquant --force --quality=70-95 --speed 1 --output "$png" "$tmp/shot.png"
else
  echo "html_screenshot: pngquant not installed, the PNG stays large" >&2
  cp "$tmp/shot.png" "$png"
fi
echo "wrote $png ($(stat -c %s "$png") bytes) from $recording"
