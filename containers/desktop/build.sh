#!/usr/bin/env bash
# Build agentgym/desktop: the env server with Xvfb, openbox and the desktop apps (Desktop-v0).
#
# Two steps, both offline apart from the Debian mirror and PyPI that the core build uses:
#
#   1. the desktop base image agentgym/desktop-base:bookworm: containers/base/build.sh
#      (debootstrap) with the desktop's Debian packages added to the base packages;
#   2. containers/build.sh desktop with BASE set to it: the agentgym wheelhouse and the
#      Dockerfile in this folder (a venv that also sees Debian's python3-pil and python3-gi).
#
# Idempotent like the scripts it calls (FORCE=1 rebuilds both). Needs root (debootstrap) and
# a running dockerd. Then:  gym.make("Desktop-v0", backend="docker", docker_image="agentgym/desktop:latest")
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# The base image's packages plus what Desktop-v0 runs: the X server, window manager, tools and apps,
# fonts (xterm needs the core "fixed" fonts of xfonts-base), Pillow with XCB screen grabs, and AT-SPI
# for the accessibility tree. debootstrap does not resolve virtual packages: dbus-x11 provides the
# dbus-session-bus that dconf-service depends on.
DESKTOP_PACKAGES="python3,procps,xvfb,xdotool,openbox,wmctrl,x11-utils,xterm,xfonts-base,mousepad,pcmanfm,\
gnumeric,fonts-dejavu-core,python3-pil,python3-gi,gir1.2-atspi-2.0,at-spi2-core,dbus,dbus-x11,libgtk-3-0"
# The tag names the package list, so that changing it builds a new base image.
DESKTOP_BASE="${DESKTOP_BASE:-agentgym/desktop-base:bookworm-$(echo "$DESKTOP_PACKAGES" | sha256sum | cut -c1-8)}"

IMAGE="$DESKTOP_BASE" PACKAGES="$DESKTOP_PACKAGES" bash "$REPO/containers/base/build.sh"
BASE="$DESKTOP_BASE" bash "$REPO/containers/build.sh" desktop
