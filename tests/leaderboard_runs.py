"""Hand-written results folders for the leaderboard tests: eval runs, an arena, a training run."""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

SYSTEM_PROMPT = "You are an agent. End every reply with a line `Action: <command>`."
HOSTILE = "</script><img src=x onerror=alert(1)>"
UNICODE = "Box ☐ → 目标 ✓ 🎯 naïve"


def episode(
    env: str,
    task_id: int,
    policy: str,
    *,
    success: bool,
    score: float,
    steps: int,
    tokens: tuple[int, int] | None,
    wall_s: float,
    error: str | None = None,
    observations: list[str] | None = None,
    replies: list[str] | None = None,
    info: dict[str, Any] | None = None,
    started: str = "2026-11-22T10:00:01Z",
) -> dict[str, Any]:
    """An episode record as ``agentgym eval`` writes it, with ``steps`` turns."""
    observations = observations or [f"{env} observation {k}" for k in range(steps + 1)]
    replies = replies or [f"Let me try.\nAction: {['up', 'left', 'down', 'right'][k % 4]}" for k in range(steps)]
    messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": observations[0]}]
    turns = []
    for k, reply in enumerate(replies):
        messages += [{"role": "assistant", "content": reply}, {"role": "user", "content": observations[k + 1]}]
        last = k == len(replies) - 1
        turns.append(
            {
                "action": reply.rsplit("Action: ", 1)[-1],
                "reward": 1.0 if last and success else 0.0,
                "invalid_action": reply.endswith("fly"),
                "terminated": last and error is None,
                "truncated": False,
                "info": {"task_id": task_id, "steps": k + 1, **(info or {})},
                "policy_s": 0.5,
                "env_s": 0.0002,
                "prompt_tokens": 100,
                "completion_tokens": 20,
            }
        )
    return {
        "key": f"{env}/test/{task_id}/0",
        "env": env,
        "split": "test",
        "task_id": task_id,
        "repeat": 0,
        "seed": task_id + 7,
        "policy": policy,
        "status": "error" if error else "ok",
        "error": error,
        "success": success,
        "score": score,
        "return": 1.0 if success else 0.0,
        "steps": steps,
        "terminated": error is None,
        "truncated": False,
        "instruction": f"Solve task {task_id}.",
        "messages": messages,
        "turns": turns,
        "tokens": None if tokens is None else {"prompt": tokens[0], "completion": tokens[1]},
        "started": started,
        "wall_s": wall_s,
    }


def write_folder(
    folder: Path, spec: str, name: str, records: list[dict[str, Any]], split: str = "test", **run_fields: Any
) -> Path:
    """A results folder with ``run.json`` (plus ``run_fields``) and ``episodes.jsonl`` (records in file order)."""
    folder.mkdir(parents=True)
    envs = sorted({record["env"] for record in records})
    run = {
        "agentgym_version": "0.1.0",
        "created": "2026-11-22T10:00:00Z",
        "policy": spec,
        "policy_info": {"name": name},
        "split": split,
        "seed": 0,
        "system_prompt": SYSTEM_PROMPT,
        "history_window": None,
        "items": [{"env": env, "episodes": 20, "max_turns": 100, "kwargs": {}} for env in envs],
        "suite": None,
        **run_fields,
    }
    (folder / "run.json").write_text(json.dumps(run, indent=2))
    (folder / "episodes.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))
    return folder


def four_runs(tmp_path: Path) -> list[Path]:
    """Qwen on Sokoban and Wordle (one error redone, one not), Llama in two runs, random on Sokoban."""
    qwen, llama, rand = "Qwen2.5-7B", "Llama-3-8B", "random"
    return [
        write_folder(
            tmp_path / "qwen",
            "openai:Qwen2.5-7B@http://127.0.0.1:8000/v1",
            qwen,
            [
                episode("Sokoban-v0", 11000, qwen, success=True, score=1.0, steps=12, tokens=(1200, 300), wall_s=3.0),
                # 11001 errored first, then was redone: the later record wins.
                episode(
                    "Sokoban-v0",
                    11001,
                    qwen,
                    success=False,
                    score=0.0,
                    steps=1,
                    tokens=None,
                    wall_s=1.0,
                    error="connection refused",
                ),
                episode(
                    "Sokoban-v0",
                    11002,
                    qwen,
                    success=False,
                    score=0.0,
                    steps=3,
                    tokens=(300, 90),
                    wall_s=2.0,
                    error="server timeout after 60 s",
                ),
                episode("Sokoban-v0", 11003, qwen, success=True, score=1.0, steps=20, tokens=(2000, 500), wall_s=5.0),
                episode(
                    "Sokoban-v0", 11001, qwen, success=False, score=0.5, steps=100, tokens=(9000, 1000), wall_s=20.0
                ),
                episode("Wordle-v0", 20000, qwen, success=True, score=1.0, steps=4, tokens=(800, 100), wall_s=2.5),
                episode("Wordle-v0", 20001, qwen, success=False, score=0.0, steps=6, tokens=(1000, 150), wall_s=3.5),
            ],
        ),
        write_folder(
            tmp_path / "llama-sokoban",
            "openai:Llama-3-8B@http://127.0.0.1:8001/v1",
            llama,
            [
                episode(
                    "Sokoban-v0",
                    11000,
                    llama,
                    success=True,
                    score=1.0,
                    steps=2,
                    tokens=(1000, 200),
                    wall_s=2.0,
                    observations=[f"Push the box.\n{UNICODE}", f"You see {HOSTILE}", "Solved."],
                    replies=["I try to fly.\nAction: fly", f"Quoting {HOSTILE}\nAction: up"],
                    info={"note": HOSTILE, "ratio": float("nan")},
                ),
                episode(
                    "Sokoban-v0", 11001, llama, success=False, score=0.0, steps=100, tokens=(5000, 800), wall_s=10.0
                ),
            ],
        ),
        write_folder(
            tmp_path / "llama-wordle",
            "openai:Llama-3-8B@http://127.0.0.1:8001/v1",
            llama,
            [
                episode("Wordle-v0", 20000, llama, success=True, score=1.0, steps=3, tokens=(700, 100), wall_s=1.0),
                episode("Wordle-v0", 20001, llama, success=True, score=1.0, steps=5, tokens=(900, 100), wall_s=1.0),
            ],
        ),
        write_folder(
            tmp_path / "random",
            "random",
            rand,
            [
                episode(
                    "Sokoban-v0",
                    11000,
                    rand,
                    success=False,
                    score=0.0,
                    steps=100,
                    tokens=None,
                    wall_s=0.25,
                    info={"lone surrogate": "\ud800"},
                ),
                episode("Sokoban-v0", 11001, rand, success=False, score=0.0, steps=100, tokens=None, wall_s=0.25),
            ],
        ),
    ]


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A one-colour PNG (zlib + the PNG chunk layout; no imaging library needed)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return len(data).to_bytes(4, "big") + body + zlib.crc32(body).to_bytes(4, "big")

    header = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 2, 0, 0, 0])
    rows = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def write_arena(folder: Path, game: str, results: list[tuple[str, str, str | None]]) -> Path:
    """An arena folder: one match per (first seat, second seat, winner or None for a draw)."""
    folder.mkdir(parents=True)
    names = sorted({name for first, second, _ in results for name in (first, second)})
    run = {"kind": "arena", "agentgym_version": "0.1.0", "game": game, "policies": names, "games_per_pair": 2}
    (folder / "run.json").write_text(json.dumps(run))
    lines = []
    for number, (first, second, winner) in enumerate(results):
        rewards = {first: 0.0, second: 0.0}
        if winner is not None:
            rewards = {name: 1.0 if name == winner else -1.0 for name in (first, second)}
        lines.append(
            {
                "key": f"{first}|{second}|{number}",
                "seed": number,
                "seats": {"player_0": first, "player_1": second},
                "status": "ok",
                "error": None,
                "turns": [],
                "rewards": rewards,
                "winner": winner,
                "reason": "win" if winner else "draw",
                "game": game,
                "wall_s": 0.01,
            }
        )
    (folder / "episodes.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return folder


def write_training(folder: Path, curve: dict[int, int], episodes: int = 4) -> Path:
    """A training run: ``metrics.jsonl`` and greedy evaluations with ``curve[iteration]`` successes."""
    folder.mkdir(parents=True)
    metrics = [{"iteration": i, "success_rate": min(1.0, 0.1 * i), "loss": 1.0 / (i + 1)} for i in range(max(curve))]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(row) + "\n" for row in metrics))
    for iteration, successes in curve.items():
        records = [
            episode(
                "Maze-v0",
                task,
                "trainer",
                success=task < successes,
                score=float(task < successes),
                steps=3,
                tokens=(50, 5),
                wall_s=0.5,
            )  # fmt: skip
            for task in range(episodes)
        ]
        write_folder(folder / "eval" / f"iteration-{iteration:06d}", "trainer", "trainer", records)
    return folder
