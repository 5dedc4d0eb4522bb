"""Desktop-v0 in its container (containers/desktop/): the docker backend plays an oracle episode with screenshots."""

from __future__ import annotations

import shutil
import subprocess

import gymnasium as gym
import numpy as np
import pytest
from episodes import play_oracle
from images import existing_containers

IMAGE = "agentgym/desktop:latest"


def docker_skip_reason() -> str | None:
    if shutil.which("docker") is None:
        return "no docker CLI (apt-get install docker.io)"
    if subprocess.run(["docker", "info"], capture_output=True, timeout=30).returncode != 0:
        return "dockerd is not running (start it: dockerd > /tmp/dockerd.log 2>&1 &)"
    if subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True, timeout=30).returncode != 0:
        return f"{IMAGE} is not built (bash containers/desktop/build.sh)"
    return None


def test_desktop_runs_in_its_container() -> None:
    reason = docker_skip_reason()
    if reason is not None:
        pytest.skip(reason)
    env = gym.make("Desktop-v0", backend="docker", docker_image=IMAGE, docker_cpus=2.0)
    name = env.unwrapped.owned_server.name
    try:
        observation, info = env.reset(options={"task_id": 35})  # a spreadsheet task: Gnumeric in the container
        assert env.observation_space.contains(observation)
        assert observation["screenshot"].shape == (768, 1024, 3) and observation["screenshot"].dtype == np.uint8
        assert observation["screenshot"].std() > 10  # Gnumeric is drawn, not a blank screen
        assert "Gnumeric" in observation["text"]
        assert play_oracle(env, 35).success
        assert play_oracle(env, 0).success  # the terminal
    finally:
        env.close()
    assert existing_containers([name]) == [], "the container outlived the env"
