#!/usr/bin/env bash
# Build agentgym/webapps: the env server of the web-apps family with its sites installed and seeded inside.
#
#   1. the base image agentgym/webapps-base:bookworm-<hash>: containers/base/build.sh (debootstrap) with
#      containers/webapps/packages.txt (Python, Chromium, fonts) and every site's Debian packages (the
#      `apt_packages` of each Site class, read from its source);
#   2. containers/build.sh webapps with BASE set to it: a wheelhouse of its own (agentgym[server,webapps] and
#      each site's requirements.txt, downloaded from PyPI on this machine) and containers/webapps/Dockerfile,
#      which installs each site and seeds its golden snapshot at build time, offline.
#
# The sites built are those of environments/webapps/sites.yaml whose site.py exists. Idempotent like the
# scripts it calls: an up-to-date image is left as it is in about a second (FORCE=1 rebuilds it; the base
# image is rebuilt only when the package list changes, or with FORCE_BASE=1). Needs root (debootstrap), a
# running dockerd, a Debian mirror and PyPI. Then:
#
#   gym.make("WebApps-Shop-v0", backend="docker")            # the docker backend picks agentgym/webapps:latest
#   docker compose -f containers/webapps-compose.yaml up -d  # the whole suite on 127.0.0.1:8710
#
# Settings: PREFIX, TAG, PYTHON, FORCE (see containers/build.sh); WEBAPPS_WHEELHOUSE (default
# ${AGENTGYM_CACHE:-~/.cache/agentgym}/wheelhouse-webapps); FORCE_BASE=1 rebuilds the base image.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CACHE="${AGENTGYM_CACHE:-$HOME/.cache/agentgym}"
log() { printf '[containers/webapps/build.sh] %s\n' "$*" >&2; }
start=$(date +%s)

# The sites present, their Debian packages and their requirements files (read from the sources: nothing imported).
read -r -d '' SCAN <<'PY' || true
import ast, pathlib, re, sys
repo = pathlib.Path(sys.argv[1])
registry = (repo / "environments/webapps/sites.yaml").read_text()
sites, packages, requirements = [], set(), []
for name, module in re.findall(r"^  (\w+): agentgym\.environments\.webapps\.([\w.]+):\w+$", registry, re.M):
    source = repo / "environments/webapps" / (module.replace(".", "/") + ".py")
    if not source.exists():
        continue
    sites.append(name)
    for node in ast.walk(ast.parse(source.read_text())):
        targets = [node.target] if isinstance(node, ast.AnnAssign) else getattr(node, "targets", [])
        if any(getattr(target, "id", None) == "apt_packages" for target in targets) and node.value is not None:
            packages.update(ast.literal_eval(node.value))
    if (source.parent / "requirements.txt").exists():
        requirements.append(str((source.parent / "requirements.txt").relative_to(repo)))
print(" ".join(sites))
print(",".join(sorted(packages)))
print(" ".join(requirements))
PY
{ read -r sites; read -r site_packages; read -r requirements; } < <(python3 -c "$SCAN" "$REPO")
[ -n "$sites" ] || { log "error: no site of environments/webapps/sites.yaml has its site.py yet"; exit 1; }
own_packages="$(grep -v '^#' "$REPO/containers/webapps/packages.txt" | grep . | paste -sd, -)"
packages="$(printf '%s\n' "${own_packages//,/$'\n'}" "${site_packages//,/$'\n'}" | grep . | sort -u | paste -sd, -)"
log "sites: $sites"
log "Debian packages: $packages"

# The tag names the package list, so that changing it builds a new base image.
WEBAPPS_BASE="${WEBAPPS_BASE:-agentgym/webapps-base:bookworm-$(echo "$packages" | sha256sum | cut -c1-8)}"
IMAGE="$WEBAPPS_BASE" PACKAGES="$packages" FORCE="${FORCE_BASE:-0}" bash "$REPO/containers/base/build.sh"
BASE="$WEBAPPS_BASE" EXTRAS=server,webapps REQUIREMENTS="$requirements" \
    WHEELHOUSE="${WEBAPPS_WHEELHOUSE:-$CACHE/wheelhouse-webapps}" BUILD_ARGS="--build-arg SITES=${sites// /,}" \
    bash "$REPO/containers/build.sh" webapps
log "done in $(($(date +%s) - start)) s"
