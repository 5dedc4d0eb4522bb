#!/usr/bin/env bash
# Build agentgym/webapps: the env server of the web-apps family with its sites installed and seeded inside.
#
#   1. the base image agentgym/webapps-base:bookworm-<hash>: containers/base/build.sh (debootstrap) with
#      containers/webapps/packages.txt (Python, Chromium, fonts) and every site's Debian packages (the
#      `apt_packages` of each Site class, read from its source);
#   2. the sites image agentgym/webapps-sites:latest, FROM that base: containers/build.sh with a wheelhouse of
#      its own (agentgym[server,webapps] and each site's requirements.txt, downloaded from PyPI on this machine)
#      and containers/webapps/sites.Dockerfile, which installs each site and seeds its golden snapshot at build
#      time, offline (minutes). Its label hashes only what the sites are built from (SOURCES: environments/webapps
#      and this folder, but for ./Dockerfile, with the agentgym modules they import, such as agentgym/contract/core.py;
#      the dependencies of agentgym[server,webapps] and the sites' requirements; the base image): a change
#      elsewhere (agentgym/train/, README.md, another family) leaves it as it is;
#   3. agentgym/webapps:latest FROM the sites image: containers/webapps/Dockerfile installs the agentgym wheel of
#      this checkout over the sites image's (seconds); its label hashes every source, so the image the docker
#      backend runs always has the current agentgym. The image it replaces, and a sites image replaced by a new
#      one, are removed (their layers with them).
#
# The sites built are those of environments/webapps/sites.yaml whose site.py exists, or those SITES names:
# SITES=shop,wiki, or SITES=turn:N, the N-th site in turn (the test command's image, TAG=tests: one site a day).
# Idempotent like the scripts it calls: an up-to-date image is left as it is in seconds (FORCE=1 rebuilds both
# images; the base image is rebuilt only when the package list changes, or with FORCE_BASE=1). Needs root
# (debootstrap), a running dockerd, a Debian mirror and PyPI. Then:
#
#   gym.make("WebApps-Shop-v0", backend="docker")            # the docker backend picks agentgym/webapps:latest
#   docker compose -f containers/webapps-compose.yaml up -d  # the whole suite on 127.0.0.1:8710
#
# Settings: SITES (above; the base image then has the Debian packages of those sites only), PREFIX, TAG, PYTHON,
# FORCE (see containers/build.sh); WEBAPPS_WHEELHOUSE (default ${AGENTGYM_CACHE:-~/.cache/agentgym}/wheelhouse-webapps);
# FORCE_BASE=1 rebuilds the base image.
# The log's lines "built <image> in N s" and the sites' "[webapps-image]" lines are what
# benchmarks/webapps_image.py reads.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CACHE="${AGENTGYM_CACHE:-$HOME/.cache/agentgym}"
log() { printf '[containers/webapps/build.sh] %s\n' "$*" >&2; }
start=$(date +%s)

# The sites present, and the Debian packages and requirements files of those named in argv[2] (default all)
# (read from the sources: nothing imported).
read -r -d '' SCAN <<'PY' || true
import ast, pathlib, re, sys
repo = pathlib.Path(sys.argv[1])
registry = (repo / "environments/webapps/sites.yaml").read_text()
wanted = sys.argv[2].split() if len(sys.argv) > 2 and sys.argv[2] != "all" else None
sites, packages, requirements = [], set(), []
for name, module in re.findall(r"^  (\w+): agentgym\.environments\.webapps\.([\w.]+):\w+$", registry, re.M):
    source = repo / "environments/webapps" / (module.replace(".", "/") + ".py")
    if not source.exists():
        continue
    sites.append(name)
    if wanted is not None and name not in wanted:
        continue
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
{ read -r all_sites; read -r site_packages; read -r requirements; } < <(python3 -c "$SCAN" "$REPO")
[ -n "$all_sites" ] || { log "error: no site of environments/webapps/sites.yaml has its site.py yet"; exit 1; }
read -r -a present <<< "$all_sites"
# SITES: the sites to build (default all); "turn:N" is the N-th of them in turn (N modulo their number).
case "${SITES:-all}" in
    all) sites="$all_sites" ;;
    turn:*)
        turn="${SITES#turn:}"
        [[ "$turn" =~ ^[0-9]+$ ]] || { log "error: SITES=turn:N needs a whole number N, got '$SITES'"; exit 1; }
        sites="${present[$((turn % ${#present[@]}))]}" ;;
    *)
        sites="${SITES//,/ }"
        for site in $sites; do
            [[ " $all_sites " == *" $site "* ]] || { log "error: SITES names '$site'; the sites are: $all_sites"; exit 1; }
        done ;;
esac
if [ "$sites" != "$all_sites" ]; then
    # The base image gets the Debian packages of the sites built only; the wheelhouse keeps every site's
    # requirements (one wheelhouse whichever sites are built).
    site_packages="$(python3 -c "$SCAN" "$REPO" "$sites" | sed -n 2p)"
fi
own_packages="$(grep -v '^#' "$REPO/containers/webapps/packages.txt" | grep . | paste -sd, -)"
packages="$(printf '%s\n' "${own_packages//,/$'\n'}" "${site_packages//,/$'\n'}" | grep . | sort -u | paste -sd, -)"
log "sites: $sites"
log "Debian packages: $packages"

# The tag names the package list, so that changing it builds a new base image.
WEBAPPS_BASE="${WEBAPPS_BASE:-agentgym/webapps-base:bookworm-$(echo "$packages" | sha256sum | cut -c1-8)}"
IMAGE="$WEBAPPS_BASE" PACKAGES="$packages" FORCE="${FORCE_BASE:-0}" bash "$REPO/containers/base/build.sh"

# Both builds share the wheelhouse (the same EXTRAS and REQUIREMENTS: nothing is downloaded for the second).
export EXTRAS=server,webapps REQUIREMENTS="$requirements" WHEELHOUSE="${WEBAPPS_WHEELHOUSE:-$CACHE/wheelhouse-webapps}"
SITES_IMAGE="${PREFIX:-agentgym}/webapps-sites:${TAG:-latest}"
# What the sites image is built from: this folder but for ./Dockerfile (the layer on top), and the family.
SITES_SOURCES="environments/webapps containers/webapps/build.sh containers/webapps/sites.Dockerfile \
containers/webapps/context containers/webapps/packages.txt"
BASE="$WEBAPPS_BASE" IMAGE="$SITES_IMAGE" DOCKERFILE=containers/webapps/sites.Dockerfile \
    SOURCES="$SITES_SOURCES" WHEELS="" BUILD_ARGS="--build-arg SITES=${sites// /,}" \
    bash "$REPO/containers/build.sh" webapps
BASE="$SITES_IMAGE" IMAGE="${PREFIX:-agentgym}/webapps:${TAG:-latest}" DOCKERFILE=containers/webapps/Dockerfile \
    SOURCES="" WHEELS="agentgym-*.whl pip-*.whl" BUILD_ARGS="" \
    bash "$REPO/containers/build.sh" webapps
log "done in $(($(date +%s) - start)) s"
