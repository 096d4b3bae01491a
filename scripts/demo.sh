#!/usr/bin/env bash
# Installs dependencies, builds, then profiles the bundled sample target from outside:
# `looptrace run` starts it with probes attached and prints the reports: every message of
# the `messages` scenario, then a slow message with its reconstructed call tree.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh >/dev/null
SUDO=
[[ $(id -u) -ne 0 ]] && SUDO=sudo
# The sample target's profile is a test file, not a built-in: passed by path.
PROFILE=tests/sample_app/profiles/sample.profile
echo "== looptrace run --profile $PROFILE -- build/looptrace-sample-app --scenario messages" >&2
$SUDO ./build/looptrace run --profile "$PROFILE" -- ./build/looptrace-sample-app --scenario messages
echo >&2
echo "== looptrace run --profile $PROFILE --method-mapping ... -- build/looptrace-sample-app --scenario evil" >&2
$SUDO ./build/looptrace run --profile "$PROFILE" --method-mapping build/looptrace-sample-app.methodMapping.txt \
  -- ./build/looptrace-sample-app --scenario evil
