#!/usr/bin/env bash
# Build agentgym's env-server images: agentgym/<GROUP>:latest from containers/<GROUP>/Dockerfile.
#
#   bash containers/build.sh                              # every group (a folder here with a Dockerfile
#                                                         # and no build.sh of its own): core
#   bash containers/build.sh core                         # one group
#   BASE=python:3.11-slim bash containers/build.sh        # on a machine with a registry: FROM python:3.11-slim
#
# No image registry is needed. Python packages reach the images only through a wheelhouse
# made on this machine, which the Dockerfiles install from with `pip install --no-index`:
#
#   1. the base image: agentgym/base:bookworm (the default BASE) is built offline by
#      containers/base/build.sh (debootstrap + docker import) when it is missing; any other
#      BASE must already exist (docker pull it) and have python3 (>= 3.10, glibc);
#   2. the wheelhouse, for the base image's Python (version, machine and glibc are asked from
#      the image itself): the agentgym wheel, built from this checkout, plus every runtime
#      dependency of agentgym[server] and a pip wheel, downloaded from PyPI as binary wheels;
#   3. `docker build --network none` with the wheelhouse as the build context (plus, as context/, the
#      group's containers/<GROUP>/context folder when it has one: scripts its Dockerfile copies in).
#
# Idempotent and fast when nothing changed: each image carries a label with a hash of the
# sources (agentgym/, environments/, benchmarks/ without results, pyproject.toml, setup.py,
# README.md), its Dockerfile and context folder, its BUILD_ARGS and the base image's id; an image whose label
# matches is left as it is (well under a second). With SOURCES, the label hashes only what those
# paths' files are (and what they import, see containers/build_inputs.py) and the dependencies: an
# image whose expensive part is built from a few sources (containers/webapps/) is not rebuilt when
# other code changes. The dependency wheels are downloaded again only when the dependencies of
# agentgym[EXTRAS] or the REQUIREMENTS files change.
#
# Settings (environment variables):
#   BASE        base image                         (default agentgym/base:bookworm)
#   PREFIX      image name prefix                  (default agentgym: images agentgym/<GROUP>)
#   TAG         image tag                          (default latest)
#   WHEELHOUSE  where wheelhouses are kept         (default ${AGENTGYM_CACHE:-~/.cache/agentgym}/wheelhouse)
#   PYTHON      host Python that runs pip          (default python3; a venv is made when it has no pip)
#   EXTRAS      the agentgym extras whose dependencies go into the wheelhouse (default server)
#   REQUIREMENTS requirement files (paths relative to the checkout, space-separated) whose packages also
#               go into the wheelhouse, each resolved on its own (for venvs of their own in the image): with
#               `pip wheel` when PYTHON is the image's Python version on the same machine (a package without a
#               wheel is built here; the result is then checked offline against the image's exact version),
#               else downloaded as binary wheels only
#   BUILD_ARGS  more `docker build` options, space-separated (e.g. --build-arg NAME=VALUE)
#   IMAGE       with one GROUP: the image to build (default $PREFIX/<GROUP>:$TAG)
#   DOCKERFILE  with one GROUP: its Dockerfile, relative to the checkout (default containers/<GROUP>/Dockerfile)
#   SOURCES     paths (relative to the checkout, space-separated) whose files, with the agentgym modules their
#               Python files import, the dependencies and the packaging settings for them, are all the sources
#               the up-to-date label hashes (default: every source; the agentgym wheel has them all regardless)
#   WHEELS      the wheelhouse's files in the build context, glob patterns (default all; "agentgym-*.whl
#               pip-*.whl" for a Dockerfile that installs only the agentgym wheel)
#   FORCE=1     rebuild even when up to date
#
# Needs: a running dockerd, and PyPI reachable from this machine (not from containers).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BASE="${BASE:-agentgym/base:bookworm}"
PREFIX="${PREFIX:-agentgym}"
TAG="${TAG:-latest}"
CACHE="${AGENTGYM_CACHE:-$HOME/.cache/agentgym}"
WHEELHOUSE="${WHEELHOUSE:-$CACHE/wheelhouse}"
PYTHON="${PYTHON:-python3}"
FORCE="${FORCE:-0}"
EXTRAS="${EXTRAS:-server}"
read -r -a REQUIREMENTS <<< "${REQUIREMENTS:-}"
read -r -a BUILD_ARGS <<< "${BUILD_ARGS:-}"
read -r -a SOURCES <<< "${SOURCES:-}"
read -r -a WHEELS <<< "${WHEELS:-}"

log() { printf '[containers/build.sh] %s\n' "$*" >&2; }
fail() { log "error: $*"; exit 1; }

if [ "$#" -gt 0 ]; then
    GROUPS_TO_BUILD=("$@")
else
    GROUPS_TO_BUILD=()
    for dockerfile in "$REPO"/containers/*/Dockerfile; do
        folder="$(dirname "$dockerfile")"
        # A group with a build.sh of its own (desktop: its own base image) is built by that script.
        [ -f "$folder/build.sh" ] || GROUPS_TO_BUILD+=("$(basename "$folder")")
    done
fi
if [ -n "${IMAGE:-}${DOCKERFILE:-}" ] && [ "${#GROUPS_TO_BUILD[@]}" != 1 ]; then
    fail "IMAGE and DOCKERFILE name one group's image: name that group alone"
fi
image_of() { echo "${IMAGE:-$PREFIX/$1:$TAG}"; }
dockerfile_of() { echo "$REPO/${DOCKERFILE:-containers/$1/Dockerfile}"; }
for group in "${GROUPS_TO_BUILD[@]}"; do
    [ -f "$(dockerfile_of "$group")" ] || fail "no $(dockerfile_of "$group")"
done

command -v docker >/dev/null 2>&1 || fail "no docker CLI: apt-get install docker.io (or run containers/setup-host.sh)"
docker info >/dev/null 2>&1 || fail "cannot reach dockerd: start it ('dockerd > /tmp/dockerd.log 2>&1 &' as root)"

# ---- 1. the base image ----------------------------------------------------------------
if ! docker image inspect "$BASE" >/dev/null 2>&1; then
    if [ "$BASE" = agentgym/base:bookworm ]; then
        log "base image $BASE is missing: building it with containers/base/build.sh"
        IMAGE="$BASE" bash "$REPO/containers/base/build.sh" || fail "building the base image $BASE failed"
    else
        fail "base image $BASE does not exist here: 'docker pull $BASE' first" \
            "(or leave BASE unset to build agentgym/base:bookworm offline)"
    fi
fi
base_id="$(docker image inspect -f '{{.Id}}' "$BASE")"

# ---- what the image's Python installs ---------------------------------------------------
probe='import platform, sys
print(f"{sys.version_info[0]}.{sys.version_info[1]}", platform.machine(), platform.libc_ver()[1] or "none", platform.python_version())'
read -r py_version py_machine py_glibc py_full < <(docker run --rm --network none --entrypoint python3 "$BASE" -c "$probe") \
    || fail "cannot run python3 in $BASE"
[ "$py_glibc" != none ] || fail "$BASE's python3 is not linked with glibc (musl images are not supported)"
py_tag="cp${py_version/./}"
platforms=()
glibc_minor="${py_glibc#2.}"
for ((minor = glibc_minor; minor >= 5; minor--)); do
    platforms+=(--platform "manylinux_2_${minor}_${py_machine}")
done
for legacy in manylinux2014 manylinux2010 manylinux1; do  # the old names of 2_17, 2_12 and 2_5
    platforms+=(--platform "${legacy}_${py_machine}")
done
wheels="$WHEELHOUSE/$py_tag-$py_machine-glibc$py_glibc"

# ---- the sources and their hash -------------------------------------------------------
source_files() {
    (cd "$REPO" && find pyproject.toml setup.py README.md agentgym environments benchmarks \
        -path benchmarks/results -prune -o -name __pycache__ -prune -o -name '*.pyc' -o -type f -print | LC_ALL=C sort)
}
# What the wheelhouse's packages are downloaded for (pyproject.toml's other settings do not matter to it).
deps_stamp="$("$PYTHON" "$REPO/containers/build_inputs.py" dependencies "$EXTRAS" "${REQUIREMENTS[@]}" | sha256sum | cut -c1-16)" \
    || fail "containers/build_inputs.py could not read the dependencies"
deps_stamp="$deps_stamp [$EXTRAS] $py_tag $py_full $py_machine $py_glibc"
if [ "${#SOURCES[@]}" -gt 0 ]; then
    inputs="$("$PYTHON" "$REPO/containers/build_inputs.py" inputs "${SOURCES[@]}")" \
        || fail "containers/build_inputs.py could not list the inputs of ${SOURCES[*]}"
    sources_hash="$(printf '%s\n%s\n' "$inputs" "$deps_stamp" | sha256sum | cut -c1-16)"
    log "the label hashes ${SOURCES[*]}, $(grep -c '^[0-9a-f]\{64\}  ' <<< "$inputs") files in all with the agentgym" \
        "modules they import, and the dependencies of agentgym[$EXTRAS]"
else
    sources_hash="$(cd "$REPO" && source_files | xargs -d '\n' sha256sum | sha256sum | cut -c1-16)"
fi

image_hash() {  # the label an up-to-date image of group $1 carries
    {
        echo "$sources_hash $base_id $py_tag $py_machine $py_glibc"
        [ "${#BUILD_ARGS[@]}" = 0 ] || echo "build options: ${BUILD_ARGS[*]}"  # another SITES is another image
        cat "$(dockerfile_of "$1")"
        [ ! -d "$REPO/containers/$1/context" ] || (cd "$REPO/containers/$1/context" && find . -type f | LC_ALL=C sort | xargs -d '\n' sha256sum)
    } | sha256sum | cut -c1-16
}

todo=()
for group in "${GROUPS_TO_BUILD[@]}"; do
    image="$(image_of "$group")"
    label="$(docker image inspect -f '{{ index .Config.Labels "agentgym.build-hash" }}' "$image" 2>/dev/null || true)"
    if [ "$FORCE" != 1 ] && [ "$label" = "$(image_hash "$group")" ]; then
        log "$image is up to date (FORCE=1 rebuilds)"
    else
        todo+=("$group")
    fi
done
[ "${#todo[@]}" -gt 0 ] || exit 0

# ---- 2. the wheelhouse ----------------------------------------------------------------
if ! "$PYTHON" -m pip --version >/dev/null 2>&1; then
    venv="$CACHE/build-venv"
    if [ ! -x "$venv/bin/pip" ]; then
        log "$PYTHON has no pip: making $venv"
        "$PYTHON" -m venv "$venv" || fail "cannot make a venv with $PYTHON: apt-get install python3-venv"
    fi
    PYTHON="$venv/bin/python"
fi
pip=("$PYTHON" -m pip --disable-pip-version-check)
mkdir -p "$wheels"
stage="$(mktemp -d "${TMPDIR:-/tmp}/agentgym-build.XXXXXX")"
trap 'rm -rf "$stage"' EXIT

start=$(date +%s)
log "building the agentgym wheel from $REPO"
mkdir -p "$stage/src" "$stage/dist"
(cd "$REPO" && source_files | tar -c -T - | tar -C "$stage/src" -x)
"${pip[@]}" wheel --quiet --no-deps --wheel-dir "$stage/dist" "$stage/src" >&2
rm -f "$wheels"/agentgym-*.whl
cp "$stage"/dist/agentgym-*.whl "$wheels/"
agentgym_wheel="$(ls "$wheels"/agentgym-*.whl)"

if [ "$(cat "$wheels/.deps-stamp" 2>/dev/null || true)" != "$deps_stamp" ]; then
    log "downloading agentgym[$EXTRAS]'s dependencies for Python $py_version ($py_machine, glibc $py_glibc) into $wheels"
    rm -f "$wheels/.deps-stamp"
    find "$wheels" -name '*.whl' ! -name 'agentgym-*' -delete  # no stale versions left behind
    download=("${pip[@]}" download --quiet --dest "$wheels" --only-binary=:all: --implementation cp
        --python-version "$py_full" --abi "$py_tag" "${platforms[@]}")  # markers may name the micro version
    "${download[@]}" "$agentgym_wheel[$EXTRAS]" pip >&2
    host="$("$PYTHON" -c 'import platform, sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}", platform.machine())')"
    for requirements in "${REQUIREMENTS[@]}"; do
        if [ "$host" = "$py_version $py_machine" ]; then
            # This Python is the image's version on the same machine: one resolution, `pip wheel`, fetches the
            # wheels and builds those of the packages that have none (a site's sdist-only dependency).
            log "the wheels of $requirements (pip wheel: a package without one is built here)"
            "${pip[@]}" wheel --quiet --wheel-dir "$wheels" -r "$REPO/$requirements" >&2 \
                || fail "fetching or building the wheels of $requirements failed"
            # This Python's micro version or glibc may differ from the image's: check offline that the wheelhouse
            # resolves for the image's (a dependency under a marker such as python_full_version <= "3.11.2", a
            # wheel for a newer glibc), else fetch what the image's needs.
            if ! "${download[@]}" --no-index --find-links "$wheels" -r "$REPO/$requirements" >/dev/null 2>&1; then
                log "resolving $requirements again for Python $py_full (glibc $py_glibc)"
                "${download[@]}" --find-links "$wheels" -r "$REPO/$requirements" >&2 \
                    || fail "downloading the wheels of $requirements failed"
            fi
        else
            log "downloading the packages of $requirements"
            "${download[@]}" -r "$REPO/$requirements" >&2 \
                || fail "$requirements: some package may have no wheel, and $PYTHON ($host) is not the image's Python" \
                    "($py_version $py_machine) to build it with: run with PYTHON=python$py_version"
        fi
    done
    echo "$deps_stamp" > "$wheels/.deps-stamp"
else
    log "dependency wheels are up to date in $wheels"
fi
log "wheelhouse ready in $(($(date +%s) - start)) s"

# ---- 3. the images --------------------------------------------------------------------
remove_leftovers() {  # the builds' first stages, and images replaced by new ones (unless a container uses them)
    docker image prune --force --filter dangling=true --filter label=agentgym.build-stage=install >/dev/null || true
    docker image prune --force --filter dangling=true --filter label=agentgym.build-hash >/dev/null || true
}
for group in "${todo[@]}"; do
    image="$(image_of "$group")"
    start=$(date +%s)
    log "building $image FROM $BASE"
    context="$wheels"
    if [ -d "$REPO/containers/$group/context" ] || [ "${#WHEELS[@]}" -gt 0 ]; then
        # The wheels (hard links where possible; those of WHEELS only when it is set) and context/.
        context="$stage/context-$group"
        mkdir -p "$context"
        if [ "${#WHEELS[@]}" -gt 0 ]; then
            wanted=()
            for pattern in "${WHEELS[@]}"; do
                matches=("$wheels"/$pattern)
                [ -e "${matches[0]}" ] || fail "no $pattern in $wheels (WHEELS)"
                wanted+=("${matches[@]}")
            done
            cp -al "${wanted[@]}" "$context/" 2>/dev/null || cp -a "${wanted[@]}" "$context/"
        else
            cp -al "$wheels/." "$context/" 2>/dev/null || cp -a "$wheels/." "$context/"
        fi
        [ ! -d "$REPO/containers/$group/context" ] || cp -r "$REPO/containers/$group/context" "$context/context"
    fi
    # --network none: everything comes from the wheelhouse (and no bridge network is needed).
    if ! docker build --force-rm --network none --file "$(dockerfile_of "$group")" --build-arg "BASE=$BASE" \
        "${BUILD_ARGS[@]}" --label "agentgym.build-hash=$(image_hash "$group")" --tag "$image" "$context" >&2; then
        remove_leftovers
        fail "docker build of $image failed (its output is above)"
    fi
    remove_leftovers
    docker run --rm --network none --entrypoint agentgym "$image" list >/dev/null \
        || fail "$image was built but 'agentgym list' fails in it"
    log "built $image in $(($(date +%s) - start)) s"
done
