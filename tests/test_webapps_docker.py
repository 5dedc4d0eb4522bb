"""The web-apps suite in its container (containers/webapps/): the docker backend plays oracle episodes on the
sites of the tests' image.

The tests' image ``agentgym/webapps:tests`` is the family's image built with one site, in turn by the tests'
rotation (all five with AGENTGYM_TEST_SAMPLE=all), installed and seeded at build time:
``bash containers/setup-host.sh --background-images`` builds it in the background and these tests wait for it
(tests/images.py), so that each site is played in a container every five days without each run building
five sites. Without docker or the image these tests are skipped, saying which is missing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time

import gymnasium as gym
import pytest
from episodes import play_oracle
from images import TEST_IMAGE, WAITS_FOR_BUILD, WEBAPPS_BUILD, existing_containers

import agentgym
from agentgym.serving.backends.docker import FAMILY_DEFAULTS, container_user, image_for

pytestmark = WAITS_FOR_BUILD


def docker_skip_reason() -> str | None:
    if shutil.which("docker") is None:
        return "no docker CLI (bash containers/setup-host.sh installs docker.io)"
    if subprocess.run(["docker", "info"], capture_output=True, timeout=30).returncode != 0:
        return "dockerd is not running (bash containers/setup-host.sh starts it)"
    if subprocess.run(["docker", "image", "inspect", TEST_IMAGE], capture_output=True, timeout=30).returncode != 0:
        return f"{TEST_IMAGE} is not built (SITES=turn:0 TAG=tests bash containers/webapps/build.sh)"
    return None


@pytest.fixture(scope="module", autouse=True)
def image() -> str:
    """The image, once its background build (if one runs) has finished; skipped when it is missing."""
    WEBAPPS_BUILD.wait()
    reason = docker_skip_reason()
    if reason is not None:
        pytest.skip(f"webapps image: {reason}")
    return TEST_IMAGE


def built_sites() -> list[str]:
    """The sites the image was built with (its sites' folders that hold a golden snapshot)."""
    script = "cd /opt/agentgym/webapps && for site in *; do [ ! -f $site/golden/built ] || echo $site; done"
    output = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", "--entrypoint", "/bin/sh", TEST_IMAGE, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return output.stdout.split()


def site_env_id(site: str) -> str:
    """The id of the web-apps env on ``site`` alone (``WebApps-Mail-v0``)."""
    return next(info.id for info in agentgym.list_envs("webapps") if info.kwargs.get("sites") == [site])


def test_every_built_site_plays_its_oracle_in_a_container() -> None:
    sites = built_sites()
    assert sites, f"{TEST_IMAGE} holds no built site"
    names = []
    for site in sites:
        env = gym.make(site_env_id(site), backend="docker", docker_image=TEST_IMAGE)
        names.append(env.unwrapped.owned_server.name)
        try:
            started = time.monotonic()
            result = play_oracle(env, env.unwrapped.splits.ids("test").start)
            assert result.success, f"{site}: the oracle failed in the container ({result})"
            print(f"{site}: oracle episode of {result.steps} steps in {time.monotonic() - started:.1f} s")
        finally:
            env.close()
    assert existing_containers(names) == [], "a container outlived its env"


def test_a_site_env_gets_the_family_image_and_limits_and_a_wrong_answer_fails() -> None:
    site = built_sites()[0]
    env_id = site_env_id(site)
    assert image_for(env_id) == "agentgym/webapps:latest"  # the family's image (all five sites)
    env = gym.make(env_id, backend="docker", docker_image=TEST_IMAGE)  # the family's defaults, the tests' image
    try:
        name = env.unwrapped.owned_server.name
        config = json.loads(subprocess.run(["docker", "inspect", name], capture_output=True, check=True).stdout)[0]
        host = config["HostConfig"]
        assert config["Config"]["Image"] == TEST_IMAGE and config["Config"]["User"] == "{}:{}".format(*container_user())
        assert host["NetworkMode"] == "none" and host["CapDrop"] == ["ALL"]
        assert host["Memory"] == 4 * 2**30 and host["PidsLimit"] == FAMILY_DEFAULTS["webapps"]["pids_limit"]
        observation, _ = env.reset(options={"task_id": env.unwrapped.splits.ids("test").start})
        assert f"{site}.localhost" in observation["text"]  # the tenant's page of the site, served in the container
        _, reward, terminated, _, info = env.step('answer("zzz-not-an-answer 0.01")')
        assert terminated and not info["success"] and reward <= 0
    finally:
        env.close()
