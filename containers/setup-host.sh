#!/usr/bin/env bash
# Prepare this machine for agentgym's whole test suite (the README's test command runs it first):
#
#   1. Debian packages the families and tests need, installed when missing: Chromium's headless shell (browser envs,
#      the leaderboard page's test), bubblewrap (the code sandbox), docker.io (the docker backend),
#      debootstrap (the offline base image), Java 17 (ScienceWorld), Xvfb, a window manager, xdotool
#      and the desktop apps (Desktop-v0), and python3-venv when python3 can neither pip nor make a venv;
#   2. dockerd, started when it is not answering, and waited for (its log: /var/log/agentgym-dockerd.log);
#   3. the images: agentgym/base:bookworm (containers/base/build.sh, debootstrap + docker import),
#      agentgym/core:latest (containers/build.sh, from a wheelhouse built here) and agentgym/webapps:latest
#      (containers/webapps/build.sh: its own debootstrap base, the sites installed and seeded; WEBAPPS_IMAGE=0
#      leaves it out); with --background-images, the base and core images and the tests' agentgym/webapps:tests
#      instead, built by a background job (below).
#
# Idempotent: what is there already is checked and left alone (a second run takes seconds).
# Prints what it does; exits non-zero with the reason when a step fails. Installing packages and
# starting dockerd need root (or sudo). Debian or Ubuntu.
#
#   bash containers/setup-host.sh                      # all three steps
#   bash containers/setup-host.sh --packages-only      # step 1 only (the README's main-job command)
#   bash containers/setup-host.sh --background-images  # the tests' images in the background (the README's
#                                                      # test command: pip and the tests go on meanwhile)
#
# With --background-images, step 3 starts containers/test-images.sh as a background job and returns, so that
# installing the venv and running the tests overlap its builds: agentgym/core (and the base image) first, then
# the tests' web-apps image, agentgym/webapps:tests. That one holds one site, in turn by the tests' rotation (the
# UTC day, or $AGENTGYM_TEST_ROTATION; all five with AGENTGYM_TEST_SAMPLE=all), so that the suite checks each
# site in a container every five days without building five sites each run (the tests install them on this host
# too); agentgym/webapps:latest, with every site, is what the plain form builds. Each build's log and state
# ("building PID", then "ok" or "failed EXIT") are in $CORE_LOG and $CORE_STATUS, $IMAGES_LOG and $IMAGES_STATUS:
# the tests (tests/images.py) wait for the core image before they are collected and for the web-apps image in
# the tests that use it, and a failed build fails a test with the end of its log.
#
# Settings (environment variables): BASE, PREFIX, TAG, WHEELHOUSE, PYTHON (see containers/build.sh),
# DOCKERD_TIMEOUT (seconds to wait for dockerd, default 60), WEBAPPS_IMAGE=0 (no web-apps image),
# WEBAPPS_IMAGE_NICENESS (the background web-apps build's nice value, default 10: see containers/test-images.sh),
# CORE_STATUS, CORE_LOG, IMAGES_STATUS and IMAGES_LOG (default ${AGENTGYM_CACHE:-~/.cache/agentgym}/
# core-image.{status,log} and webapps-image.{status,log}).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DOCKERD_TIMEOUT="${DOCKERD_TIMEOUT:-60}"
CACHE="${AGENTGYM_CACHE:-$HOME/.cache/agentgym}"
IMAGES_STATUS="${IMAGES_STATUS:-$CACHE/webapps-image.status}"
IMAGES_LOG="${IMAGES_LOG:-$CACHE/webapps-image.log}"
CORE_STATUS="${CORE_STATUS:-$CACHE/core-image.status}"
CORE_LOG="${CORE_LOG:-$CACHE/core-image.log}"
MODE="${1:-}"
case "$MODE" in
    ""|--packages-only|--background-images) ;;
    *) printf '[setup-host] unknown option %s (--packages-only, --background-images)\n' "$MODE" >&2; exit 2 ;;
esac
start=$(date +%s)

log() { printf '[setup-host] %s\n' "$*" >&2; }
fail() { log "FAILED: $*"; exit 1; }
on_exit() {
    local status=$?
    [ "$status" = 0 ] || log "FAILED (exit $status) after $(($(date +%s) - start)) s; see the messages above"
}
trap on_exit EXIT

as_root() {
    if [ "$(id -u)" = 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        fail "'$*' needs root: run this script as root or install sudo"
    fi
}

# ---- 1. packages ----------------------------------------------------------------------
# Commands the families and tests run, and the Debian package of each.
declare -A PACKAGE_OF=(
    [chromium-headless-shell]=chromium-headless-shell  # browser envs, the leaderboard page's test
    [bwrap]=bubblewrap                  # the code sandbox
    [docker]=docker.io [dockerd]=docker.io
    [debootstrap]=debootstrap           # the offline base image
    [java]=openjdk-17-jre-headless      # ScienceWorld's engine
    [Xvfb]=xvfb [xdotool]=xdotool [openbox]=openbox [wmctrl]=wmctrl [xwininfo]=x11-utils
    [xterm]=xterm [mousepad]=mousepad [pcmanfm]=pcmanfm [gnumeric]=gnumeric [ssconvert]=gnumeric
    [dbus-launch]=dbus-x11
)
missing=()
for command in "${!PACKAGE_OF[@]}"; do
    command -v "$command" >/dev/null 2>&1 || missing+=("${PACKAGE_OF[$command]}")
done
# Files the desktop family needs besides commands: xterm's core fonts, AT-SPI (the accessibility
# tree, read by Debian's python3 with python3-gi), DejaVu for legible screenshots.
for package in xfonts-base at-spi2-core gir1.2-atspi-2.0 python3-gi fonts-dejavu-core; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" || missing+=("$package")
done
# The web apps' servers (environments/webapps; each site's Site.apt_packages, checked by
# tests/test_webapps_sites.py): PostgreSQL (shop, forum), MediaWiki and PHP (wiki), git (forge),
# Roundcube over Dovecot with Sieve (mail).
WEBAPPS_PACKAGES="postgresql python3-venv git mediawiki php-cli php-sqlite3 php-intl php-mbstring php-xml \
roundcube roundcube-sqlite3 roundcube-plugins dovecot-imapd dovecot-sieve dovecot-managesieved"
for package in $WEBAPPS_PACKAGES; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" || missing+=("$package")
done
# python3 must make venvs with pip (the test command's `python3 -m venv .venv`, and containers/build.sh
# when python3 has no pip): Debian splits that off into python3-venv.
if ! command -v python3 >/dev/null 2>&1; then
    missing+=(python3 python3-venv)
elif ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
    missing+=(python3-venv)
fi
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u | sed '/^$/d')
if [ "${#missing[@]}" -gt 0 ]; then
    log "installing ${missing[*]} (apt-get)"
    as_root apt-get update -qq || fail "apt-get update failed"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 \
        || fail "apt-get install ${missing[*]} failed"
else
    log "packages present (browser, sandbox, docker, Java, X server and desktop apps)"
fi
if [ "$MODE" = --packages-only ]; then
    log "packages ready in $(($(date +%s) - start)) s (--packages-only: no dockerd, no images)"
    exit 0
fi

# ---- 2. dockerd -----------------------------------------------------------------------
if docker info >/dev/null 2>&1; then
    log "dockerd is running"
elif [ "$(id -u)" != 0 ] && as_root docker info >/dev/null 2>&1; then
    fail "dockerd runs but $(id -un) cannot reach it: add the user to the docker group (usermod -aG docker $(id -un))"
else
    log "starting dockerd (log: /var/log/agentgym-dockerd.log)"
    as_root sh -c 'setsid nohup dockerd >/var/log/agentgym-dockerd.log 2>&1 </dev/null &'
    waited=0
    until docker info >/dev/null 2>&1; do
        if [ "$waited" -ge "$DOCKERD_TIMEOUT" ]; then
            tail -n 20 /var/log/agentgym-dockerd.log >&2 2>/dev/null || true
            fail "dockerd did not answer within $DOCKERD_TIMEOUT s (its log's end is above)"
        fi
        sleep 1
        waited=$((waited + 1))
    done
    log "dockerd answered after ${waited} s"
fi

# ---- 3. images ------------------------------------------------------------------------
if [ "$MODE" = --background-images ]; then
    job=""
    for status_file in "$CORE_STATUS" "$IMAGES_STATUS"; do
        if [ -f "$status_file" ] && read -r state pid < "$status_file" && [ "$state" = building ] \
            && kill -0 "$pid" 2>/dev/null; then
            job="$pid"
        fi
    done
    if [ -n "$job" ]; then
        log "the tests' images are already being built (job $job; logs: $CORE_LOG, $IMAGES_LOG)"
    else
        rm -f "$CORE_STATUS" "$IMAGES_STATUS"
        # setsid: the job outlives this script; its status files say when each image is done and how it went.
        # The tests' sampling settings pick the web-apps image's site (test-images.sh).
        as_root env CORE_STATUS="$CORE_STATUS" CORE_LOG="$CORE_LOG" IMAGES_STATUS="$IMAGES_STATUS" \
            IMAGES_LOG="$IMAGES_LOG" WEBAPPS_IMAGE="${WEBAPPS_IMAGE:-1}" ${BASE:+BASE="$BASE"} \
            ${WEBAPPS_IMAGE_NICENESS:+WEBAPPS_IMAGE_NICENESS="$WEBAPPS_IMAGE_NICENESS"} \
            ${AGENTGYM_TEST_ROTATION:+AGENTGYM_TEST_ROTATION="$AGENTGYM_TEST_ROTATION"} \
            ${AGENTGYM_TEST_SAMPLE:+AGENTGYM_TEST_SAMPLE="$AGENTGYM_TEST_SAMPLE"} \
            setsid bash "$REPO/containers/test-images.sh" < /dev/null > /dev/null 2>&1 &
        for _ in 1 2 3 4 5 6 7 8 9 10; do [ -s "$CORE_STATUS" ] && break; sleep 1; done
        [ -s "$CORE_STATUS" ] || fail "the background build of the tests' images did not start"
        then_webapps=", then agentgym/webapps:tests (log: $IMAGES_LOG)"
        [ "${WEBAPPS_IMAGE:-1}" != 0 ] || then_webapps=""
        log "building the tests' images in the background ($(cat "$CORE_STATUS")): agentgym/core (log: $CORE_LOG)$then_webapps"
    fi
else
    BASE="${BASE:-agentgym/base:bookworm}"
    if [ "$BASE" = agentgym/base:bookworm ] && ! docker image inspect "$BASE" >/dev/null 2>&1; then
        log "building the base image $BASE (containers/base/build.sh: debootstrap needs root)"
        as_root env IMAGE="$BASE" bash "$REPO/containers/base/build.sh" || fail "building the base image $BASE failed"
    fi
    BASE="$BASE" bash "$REPO/containers/build.sh" core || fail "building the agentgym/core image failed"
    if [ "${WEBAPPS_IMAGE:-1}" != 0 ]; then
        # Up to date: about a second. From scratch: minutes (its debootstrap, the sites' wheels, seeding every site).
        as_root bash "$REPO/containers/webapps/build.sh" || fail "building the agentgym/webapps image failed"
    fi
fi

log "ready in $(($(date +%s) - start)) s"
