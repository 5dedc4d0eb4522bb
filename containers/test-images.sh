#!/usr/bin/env bash
# The images the README's test command needs, built one after the other by the job that
# `bash containers/setup-host.sh --background-images` starts, so that installing the venv and running the tests
# overlap the builds:
#
#   1. agentgym/core:latest (containers/build.sh core, which first builds the base image agentgym/base:bookworm
#      when it is missing): the docker backend's and the docker sandbox's tests need it;
#   2. the tests' web-apps image agentgym/webapps:tests (containers/webapps/build.sh): one site, in turn by the
#      tests' rotation (tests/episodes.py: $AGENTGYM_TEST_ROTATION, else the UTC day), or every site with
#      AGENTGYM_TEST_SAMPLE=all; WEBAPPS_IMAGE=0 leaves it out. It runs at a lower CPU priority (nice
#      $WEBAPPS_IMAGE_NICENESS, default 10): the tests need it only near their end, so it takes the CPU time the
#      tests leave idle (waits on pages, sites and subprocesses) rather than slowing them down.
#
# Each build has a status file, "building PID" from the job's start, then "ok" or "failed EXIT", and a log:
# $CORE_STATUS and $CORE_LOG, $IMAGES_STATUS and $IMAGES_LOG (defaults under ${AGENTGYM_CACHE:-~/.cache/agentgym}:
# core-image.{status,log} and webapps-image.{status,log}). tests/images.py waits on them. Needs root (debootstrap)
# and a running dockerd; run it directly to build the same images in the foreground.
set -uo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${AGENTGYM_CACHE:-$HOME/.cache/agentgym}"
CORE_STATUS="${CORE_STATUS:-$CACHE/core-image.status}"
CORE_LOG="${CORE_LOG:-$CACHE/core-image.log}"
IMAGES_STATUS="${IMAGES_STATUS:-$CACHE/webapps-image.status}"
IMAGES_LOG="${IMAGES_LOG:-$CACHE/webapps-image.log}"
mkdir -p "$(dirname "$CORE_STATUS")" "$(dirname "$CORE_LOG")" "$(dirname "$IMAGES_STATUS")" "$(dirname "$IMAGES_LOG")"

echo "building $$" > "$CORE_STATUS"
if [ "${WEBAPPS_IMAGE:-1}" != 0 ]; then echo "building $$" > "$IMAGES_STATUS"; else rm -f "$IMAGES_STATUS"; fi

# run_logged STATUS LOG COMMAND...: run COMMAND with its output in LOG; STATUS then says how it ended.
run_logged() {
    local status_file="$1" log="$2"
    shift 2
    "$@" > "$log" 2>&1
    local status=$?
    if [ "$status" = 0 ]; then echo ok > "$status_file"; else echo "failed $status" > "$status_file"; fi
}

run_logged "$CORE_STATUS" "$CORE_LOG" bash "$REPO/containers/build.sh" core
if [ "${WEBAPPS_IMAGE:-1}" != 0 ]; then
    sites="turn:${AGENTGYM_TEST_ROTATION:-$(($(date -u +%s) / 86400))}"
    [ "${AGENTGYM_TEST_SAMPLE:-}" != all ] || sites=all
    run_logged "$IMAGES_STATUS" "$IMAGES_LOG" nice -n "${WEBAPPS_IMAGE_NICENESS:-10}" \
        env SITES="$sites" TAG=tests bash "$REPO/containers/webapps/build.sh"
fi
