"""The web-apps suite in its container (containers/webapps/): the docker backend plays oracle episodes on every site.

The image ``agentgym/webapps:latest`` holds the sites installed and seeded at build time
(``bash containers/webapps/build.sh``; containers/setup-host.sh builds it, in the background with
``--background-images``, and these tests then wait for it: tests/images.py); without docker or
the image these tests are skipped, saying which is missing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time

import gymnasium as gym
import pytest
from episodes import play_oracle
from images import wait_for_background_build

import agentgym
from agentgym.environments.webapps.env import WebAppEnv, all_templates
from agentgym.serving.backends.docker import FAMILY_DEFAULTS, container_user, image_for

IMAGE = "agentgym/webapps:latest"


def docker_skip_reason() -> str | None:
    if shutil.which("docker") is None:
        return "no docker CLI (bash containers/setup-host.sh installs docker.io)"
    if subprocess.run(["docker", "info"], capture_output=True, timeout=30).returncode != 0:
        return "dockerd is not running (bash containers/setup-host.sh starts it)"
    if subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True, timeout=30).returncode != 0:
        return f"{IMAGE} is not built (bash containers/webapps/build.sh)"
    return None


@pytest.fixture(scope="module", autouse=True)
def image() -> str:
    """The image, once its background build (if one runs) has finished; skipped when it is missing."""
    wait_for_background_build()
    reason = docker_skip_reason()
    if reason is not None:
        pytest.skip(f"webapps image: {reason}")
    return IMAGE


def built_sites() -> list[str]:
    """The sites the image was built with (its sites' folders that hold a golden snapshot)."""
    script = "cd /opt/agentgym/webapps && for site in *; do [ ! -f $site/golden/built ] || echo $site; done"
    output = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", "--entrypoint", "/bin/sh", IMAGE, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return output.stdout.split()


def first_test_task(site: str) -> int:
    """A test-split task id of WebApps-v0 whose template runs on ``site`` alone."""
    templates = all_templates()
    index = next(i for i, template in enumerate(templates) if tuple(template.sites) == (site,))
    return WebAppEnv.splits.ids("test").start + index


def containers_of(image: str) -> list[str]:
    command = ["docker", "ps", "--quiet", "--filter", "label=agentgym.backend=docker", "--filter", f"ancestor={image}"]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout.split()


def test_every_site_plays_its_oracle_in_one_container() -> None:
    sites = built_sites()
    assert sites, f"{IMAGE} holds no built site"
    env = gym.make("WebApps-v0", backend="docker", docker_image=IMAGE)
    try:
        for site in sites:
            started = time.monotonic()
            result = play_oracle(env, first_test_task(site))
            assert result.success, f"{site}: the oracle failed in the container ({result})"
            print(f"{site}: oracle episode of {result.steps} steps in {time.monotonic() - started:.1f} s")
    finally:
        env.close()
    assert containers_of(IMAGE) == [], "the container outlived the env"


def test_a_site_env_gets_the_webapps_image_and_limits_and_a_wrong_answer_fails() -> None:
    site = built_sites()[0]
    env_id = next(info.id for info in agentgym.list_envs("webapps") if info.kwargs.get("sites") == [site])
    assert image_for(env_id) == IMAGE
    env = gym.make(env_id, backend="docker")  # the family's image and defaults
    try:
        name = env.unwrapped.owned_server.name
        config = json.loads(subprocess.run(["docker", "inspect", name], capture_output=True, check=True).stdout)[0]
        host = config["HostConfig"]
        assert config["Config"]["Image"] == IMAGE and config["Config"]["User"] == "{}:{}".format(*container_user())
        assert host["NetworkMode"] == "none" and host["CapDrop"] == ["ALL"]
        assert host["Memory"] == 4 * 2**30 and host["PidsLimit"] == FAMILY_DEFAULTS["webapps"]["pids_limit"]
        observation, _ = env.reset(options={"task_id": env.unwrapped.splits.ids("test").start})
        assert f"{site}.localhost" in observation["text"]  # the tenant's page of the site, served in the container
        _, reward, terminated, _, info = env.step('answer("zzz-not-an-answer 0.01")')
        assert terminated and not info["success"] and reward <= 0
    finally:
        env.close()
