# agentgym/webapps-sites: the env server of the web-apps family (WebApps-*-v0) with its five sites inside:
# PostgreSQL, the shop (django-oscar), forum (Misago), wiki (MediaWiki), forge (Trac + git), mail
# (Roundcube over Dovecot), and Debian's Chromium that the envs drive through Playwright. The image the
# envs run, agentgym/webapps, is this one with the current agentgym wheel on top (./Dockerfile).
#
# Built by containers/webapps/build.sh, which makes the base image (debootstrap with Chromium and every
# site's Debian packages) and the wheelhouse (agentgym[server,webapps] plus each site's requirements.txt)
# that is this build's context. Nothing is downloaded while building (--network none). Its label hashes
# only what the sites are built from (environments/webapps, containers/webapps, the agentgym modules they
# import, the dependencies, the base image): a change elsewhere leaves this image as it is.
#
# The sites are installed and their golden snapshots seeded HERE, at build time (one layer per site),
# as an unprivileged user: a container only copies its state (a second or so) and starts the servers.
#
#   bash containers/webapps/build.sh
#   python -c 'import gymnasium as gym, agentgym; env = gym.make("WebApps-Shop-v0", backend="docker"); \
#       print(env.reset(options={"task_id": 0})[0])'
#   docker compose -f containers/webapps-compose.yaml up -d          # the whole suite on 127.0.0.1:8710
# BASE: the webapps base image; containers/webapps/build.sh passes it (agentgym/webapps-base:bookworm-<hash>).
ARG BASE

FROM ${BASE} AS install
LABEL agentgym.build-stage=install
COPY . /wheels
# The sites' install() makes their venvs with `pip install -r requirements.txt`: these make pip use the wheelhouse.
ENV PIP_NO_INDEX=1 PIP_FIND_LINKS=/wheels PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/agentgym/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    AGENTGYM_WEBAPPS_HOME=/tmp/agentgym-webapps \
    HOME=/tmp \
    LANG=C.UTF-8
RUN set -eu; \
    python3 -m venv --without-pip /opt/agentgym; \
    pip_wheel="$(ls /wheels/pip-*.whl)"; \
    /opt/agentgym/bin/python "$pip_wheel/pip" install --quiet "agentgym[server,webapps]"; \
    install -d -o 65534 -g 65534 "$AGENTGYM_WEBAPPS_HOME"
# Each site: install (its venv from the wheelhouse, its configuration), seed the golden snapshot, start once
# (so that whatever a first start prepares is in the image), stop. As nobody, as the containers run.
# SITES (from build.sh, comma-separated): the sites to build; a site left out gets an empty folder.
ARG SITES=shop,forum,wiki,forge,mail
USER 65534:65534
COPY context/build_site.py /opt/agentgym/build_site.py
RUN python /opt/agentgym/build_site.py shop $SITES
RUN python /opt/agentgym/build_site.py forum $SITES
RUN python /opt/agentgym/build_site.py wiki $SITES
RUN python /opt/agentgym/build_site.py forge $SITES
RUN python /opt/agentgym/build_site.py mail $SITES
USER 0:0
# The image keeps the state under /opt/agentgym/webapps, nobody's (the uid of a root caller's containers) and
# readable by every uid: agentgym-webapps-home makes $AGENTGYM_WEBAPPS_HOME a link to it for nobody, a copy for
# any other uid (the docker backend runs containers as the caller's uid). <site>/venv is a link to the site's venv.
RUN python /opt/agentgym/build_site.py --pack /opt/agentgym/parts /opt/agentgym/venvs

FROM ${BASE}
COPY --from=install /opt/agentgym/bin /opt/agentgym/bin
COPY --from=install /opt/agentgym/lib /opt/agentgym/lib
COPY --from=install /opt/agentgym/pyvenv.cfg /opt/agentgym/pyvenv.cfg
# One layer per site (`docker history agentgym/webapps` shows each one's size): its venv, then its state.
COPY --from=install /opt/agentgym/venvs/shop /opt/agentgym/venvs/shop
COPY --from=install --chown=65534:65534 /opt/agentgym/parts/shop /opt/agentgym/webapps/shop
COPY --from=install /opt/agentgym/venvs/forum /opt/agentgym/venvs/forum
COPY --from=install --chown=65534:65534 /opt/agentgym/parts/forum /opt/agentgym/webapps/forum
COPY --from=install /opt/agentgym/venvs/wiki /opt/agentgym/venvs/wiki
COPY --from=install --chown=65534:65534 /opt/agentgym/parts/wiki /opt/agentgym/webapps/wiki
COPY --from=install /opt/agentgym/venvs/forge /opt/agentgym/venvs/forge
COPY --from=install --chown=65534:65534 /opt/agentgym/parts/forge /opt/agentgym/webapps/forge
COPY --from=install /opt/agentgym/venvs/mail /opt/agentgym/venvs/mail
COPY --from=install --chown=65534:65534 /opt/agentgym/parts/mail /opt/agentgym/webapps/mail
# The shared PostgreSQL cluster (the shop's and forum's golden databases) and the rest (markers, content caches).
COPY --from=install --chown=65534:65534 /opt/agentgym/parts/shared/ /opt/agentgym/webapps/
COPY context/agentgym-webapps-home /opt/agentgym/home-bin/agentgym
# Writable for the wrapper to name a uid or gid that has no name here (no capability is gained by it: no setuid works).
RUN chmod 666 /etc/passwd /etc/group
# /opt/agentgym/home-bin/agentgym comes first on PATH: it makes $AGENTGYM_WEBAPPS_HOME from the image's state, then
# runs agentgym. Every way of starting the server goes through it (the docker backend's `agentgym serve`, compose).
ENV PATH=/opt/agentgym/home-bin:/opt/agentgym/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    AGENTGYM_WEBAPPS_HOME=/tmp/agentgym-webapps \
    AGENTGYM_WEBAPPS_IMAGE_STATE=/opt/agentgym/webapps \
    HOME=/tmp \
    LANG=C.UTF-8 \
    PYTHONUNBUFFERED=1
# The sites run as the container's user (never root: PostgreSQL refuses root). Five sites, PostgreSQL and Chromium
# need about 2 GB and many threads: the docker backend gives this family more memory and pids (FAMILY_DEFAULTS).
USER 65534:65534
EXPOSE 8000
ENTRYPOINT ["agentgym", "serve"]
CMD ["WebApps-*", "--host", "0.0.0.0", "--port", "8000"]
