"""The trainer's configuration: dataclasses read from one YAML file (``agentgym train CONFIG.yaml``).

Every field has a default except ``model.path`` and ``envs``; unknown keys are an error, so
a typo never passes silently. See ``agentgym/train/configs/*.yaml`` for complete examples.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from agentgym.images import ImageOptions
from agentgym.wrappers.chat import DEFAULT_SYSTEM_PROMPT


@dataclass
class LoraConfig:
    """A LoRA adapter (peft) on the model; the base weights stay frozen."""

    r: int = 16
    alpha: int = 32
    dropout: float = 0.0
    target_modules: str | list[str] = "all-linear"


@dataclass
class ModelConfig:
    """The policy model: a folder (or hub name already in the local cache) for ``from_pretrained``.

    ``device`` ``auto`` is CUDA if available, else CPU. ``dtype`` is the dtype the weights
    are stored in, ``compute_dtype`` the dtype of the forward passes (autocast). By default
    (both None) the CPU uses float32 throughout; CUDA trains in bfloat16 mixed precision:
    trainable weights (and AdamW's state) stay float32, frozen base weights under LoRA are
    stored in bfloat16, and every forward pass (sampling, scoring, update) runs under bfloat16
    autocast. ``dtype: bfloat16`` with full fine-tuning stores the trained weights in bfloat16
    ("pure" bf16): half the memory, but updates smaller than bfloat16's precision (about 1/256
    of a weight) are lost, so at small learning rates most weights never move.
    ``lora`` None means full fine-tuning.

    ``init_from``: start from an earlier run's weights (RL from an SFT run): its output folder (the
    latest checkpoint), a checkpoint folder, or a checkpoint's ``model/``. A full model there is loaded
    instead of ``path``'s weights; a LoRA adapter there is merged into them. Either way the weights
    loaded are then the base: a new ``lora`` adapter is trained on them, and the KL reference is them.
    """

    path: str = ""
    device: str = "auto"
    dtype: str | None = None
    compute_dtype: str | None = None
    lora: LoraConfig | None = None
    gradient_checkpointing: bool = False
    init_from: str | None = None


@dataclass
class EnvConfig:
    """One training env: its id, the split its tasks are drawn from, ``gym.make`` kwargs.

    ``kwargs`` may name a backend like any ``gym.make`` call: ``{backend: ray}`` runs each
    of the trainer's envs of this id in a Ray actor on the cluster at ``ray_address`` (else
    ``$RAY_ADDRESS``, else a new local instance), with ``ray_options`` merged over the
    family's actor options (see :mod:`agentgym.serving.backends.ray`); the trajectories are the
    same as with local envs.
    """

    id: str = ""
    split: Literal["train", "dev", "test"] = "train"
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass
class AlgorithmConfig:
    """Advantage estimator and loss.

    ``name``: ``grpo`` (group-relative episode returns), ``ppo`` (value head + GAE over the
    model's tokens) or ``gigpo`` (GRPO plus step-level groups of identical observations,
    weighted by ``step_weight``); or ``sft``: supervised fine-tuning on expert episodes
    (``TrainConfig.data``), cross-entropy on the assistant's tokens only, no rollouts (of the
    fields below only ``loss_aggregation`` applies). ``std_normalize`` divides GRPO's and GiGPO's advantages by
    their group's std, and whitens PPO's over the batch's model tokens (CleanRL's ``norm_adv``).
    ``clip_high`` above ``clip_low`` is the "clip higher"
    variant. ``kl_weight`` 0 loads no reference model. ``loss_aggregation``: ``token``
    (mean over all model tokens of the batch) or ``sequence`` (mean per episode, then over episodes).
    """

    name: Literal["grpo", "ppo", "gigpo", "sft"] = "grpo"
    group_size: int = 8
    std_normalize: bool = True
    gamma: float = 1.0
    lam: float = 0.95
    step_weight: float = 1.0
    clip_low: float = 0.2
    clip_high: float = 0.2
    kl_weight: float = 0.0
    entropy_weight: float = 0.0
    value_weight: float = 0.5
    loss_aggregation: Literal["token", "sequence"] = "token"


@dataclass
class DataConfig:
    """Expert episodes for ``algorithm.name: sft``: a data set folder written by ``agentgym train data``.

    Each iteration is one optimizer step on ``batch_size`` examples, taken in a seeded order that is
    reshuffled each epoch (in minibatches of ``minibatch_size`` whose gradients add up). The examples
    are rendered as the rollouts render episodes, with ``rollout.system_prompt`` whatever prompt they
    were played with; a data set holding tasks of ``eval_split`` is refused.
    """

    path: str = ""
    batch_size: int = 16


@dataclass
class RolloutConfig:
    """How episodes are sampled.

    ``backend`` ``hf`` generates in-process with the model being trained; ``openai`` sends
    token-id prompts to an OpenAI-compatible server at ``base_url`` (vLLM with LoRA enabled,
    or ``agentgym serve-model``) and hot-loads the LoRA adapter after each update
    (needs ``model.lora``). ``max_turns`` is the horizon schedule: ``[[iteration, turns], ...]``,
    each entry applying from its iteration on (ScalingInter-RL style growth).
    ``env_workers``: threads that reset and step the envs of one turn concurrently, for
    envs that wait on something (remote backends such as ``kwargs: {backend: ray}``,
    browsers, JVMs); pure-Python local envs (``metadata["inline_safe"]``) are stepped one
    after another on the trainer's thread whatever its value; 1: every env in turn.
    ``action_format``: ``text`` replies, or native ``tools`` calls (the prompt offers the
    env's function tools and the model's ``<tool_call>`` blocks are its actions; the
    tokenizer's chat template must render ``tools`` and ``tool`` messages); evaluation plays
    the same format. ``observation`` and ``max_pixels``: what a vision-language model is shown
    of screen envs (``text``, ``screenshot`` or ``both``; the image budget in pixels), as
    ``agentgym eval --observation`` (docs/vlm.md); with ``openai``, each prompt's images go beside its
    ids (``multi_modal_data``, which ``agentgym serve-model`` takes; vLLM's HTTP server does not).
    ``prefix_cache_tokens``: with ``hf`` (text models), the keys and values of that many recent tokens kept
    during one rollout or one evaluation, while the weights hold still, so that a turn's prompt runs only
    what follows the episode's last turn; emptied before each update. 0: off.
    """

    backend: Literal["hf", "openai"] = "hf"
    base_url: str = "http://127.0.0.1:8000/v1"
    adapter_name: str = "agentgym-policy"
    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 256
    max_batch_size: int = 64
    system_prompt: str | None = DEFAULT_SYSTEM_PROMPT
    max_turns: list[list[int]] = field(default_factory=lambda: [[0, 10]])
    timeout_s: float = 600.0
    env_workers: int = 32
    action_format: Literal["text", "tools"] = "text"
    observation: Literal["text", "screenshot", "both"] = "text"
    max_pixels: int | None = 1024 * 768
    prefix_cache_tokens: int = 32_768  # as agentgym eval's hf: policy

    def images(self) -> ImageOptions:
        """What the model is shown of screen envs (every image of an episode is kept: prompts only grow)."""
        return ImageOptions(self.observation, self.max_pixels)

    def turns_at(self, iteration: int) -> int:
        """The turn limit that applies at ``iteration``."""
        turns = self.max_turns[0][1]
        for start, limit in sorted(self.max_turns):
            if iteration >= start:
                turns = limit
        return turns


@dataclass
class RoleConfig:
    """One role of a team (``GameConfig.roles``): its name, which is its seat, and its system prompt."""

    name: str = ""
    prompt: str = ""


@dataclass
class GameConfig:
    """A game the learner plays (``SelfPlayConfig.games``).

    ``id`` is a registered game id (:func:`agentgym.multiagent.make_game`: ``KuhnPoker-v0``, TextArena's
    ``TextArena-TicTacToe-v0``, OpenSpiel's ``OpenSpiel-Hanabi-v0``) or the ``"module:function"`` entry point
    of a function that makes a game from ``kwargs`` (a plugin's engine that registers no id).
    With ``roles``, ``id`` is instead a single-agent env id played by a team of those roles of the one
    model (:class:`agentgym.train.roles.RoleTeam`, ``kwargs`` its ``gym.make`` kwargs), on tasks of ``split``.
    """

    id: str = ""
    kwargs: dict[str, Any] = field(default_factory=dict)
    roles: list[RoleConfig] = field(default_factory=list)
    split: Literal["train", "dev", "test"] = "train"


@dataclass
class SelfPlayConfig:
    """Rollouts on multi-agent games instead of ``envs`` (:mod:`agentgym.train.selfplay`, docs/training.md).

    Each group of ``algorithm.group_size`` games draws one entry of ``opponents`` for the seats the
    learner does not take: ``self`` (the learner plays every seat and every seat is trained: SPIRAL's
    self-play), ``snapshot`` (an earlier copy of the learner: the pool holds its weights at every
    ``snapshot_every``-th iteration, the latest ``pool_size`` of them, and a group draws one), a scripted
    player of the game (``random``, ``nash``, ...) or ``model:PATH`` (a fixed model, sampled in process).
    Against an opponent the learner takes one seat, rotating with the task. A team game (``roles``) is
    played by the learner in every role. Every seat's reward comes from the game (zero-sum,
    general-sum or cooperative alike) and is the reward of each of its moves.

    ``baseline`` (with ``algorithm.name: grpo``): ``rae`` is SPIRAL's role-conditioned advantage, a
    seat's reward minus an exponential moving average (``rae_decay``) of the earlier rewards of its
    game and role, taken before that reward updates it; ``group`` is GRPO's, normalised among the
    group's games within each role. ``algorithm.name: ppo`` uses its critic instead. Every
    ``eval_every`` iterations the learner plays ``eval_episodes`` greedy games of each game against
    each of ``eval_opponents`` (scripted players), seats alternating, on the games' ``eval_split``.
    """

    games: list[GameConfig] = field(default_factory=list)
    opponents: list[str] = field(default_factory=lambda: ["self"])
    baseline: Literal["rae", "group"] = "rae"
    rae_decay: float = 0.95
    snapshot_every: int = 10
    pool_size: int = 4
    eval_opponents: list[str] = field(default_factory=lambda: ["random"])

    def check(self, config: TrainConfig) -> None:
        """Refuse settings the self-play rollouts cannot honour."""
        if not self.games or any(not game.id for game in self.games):
            raise ValueError("selfplay.games must name at least one game, each with an id")
        if config.algorithm.name not in ("grpo", "ppo"):
            raise ValueError("selfplay trains with algorithm grpo or ppo")
        if not self.opponents or not 0.0 <= self.rae_decay < 1.0:
            raise ValueError("selfplay.opponents must not be empty and rae_decay must lie in [0, 1)")
        if self.snapshot_every < 1 or self.pool_size < 1:
            raise ValueError("selfplay.snapshot_every and pool_size must be >= 1")
        if config.rollout.backend != "hf" or config.rollout.action_format != "text":
            raise ValueError("selfplay samples in process (rollout.backend hf) with text replies")


@dataclass
class TrainConfig:
    """A whole training run.

    Each iteration plays ``groups_per_iteration`` groups of ``algorithm.group_size``
    episodes (one task per group), then makes ``epochs`` passes over them in minibatches of
    ``minibatch_size`` episodes (SFT instead takes one step on ``data.batch_size`` expert
    examples: see ``DataConfig``). Every ``eval_every`` iterations (0: never) the runner plays
    ``eval_episodes`` greedy episodes per env on ``eval_split``; every ``checkpoint_every``
    iterations (and at the end) a checkpoint is written to ``out/checkpoints``.
    The learning rate rises linearly over the first ``warmup_iterations`` (from
    ``learning_rate / warmup_iterations``), then stays at ``learning_rate`` (``lr_schedule:
    constant``) or falls along a half cosine to ``min_lr_ratio * learning_rate`` at the last
    iteration (``cosine``); it is a function of the iteration, so a resumed run follows it.
    """

    model: ModelConfig = field(default_factory=ModelConfig)
    envs: list[EnvConfig] = field(default_factory=list)
    algorithm: AlgorithmConfig = field(default_factory=AlgorithmConfig)
    data: DataConfig = field(default_factory=DataConfig)
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    selfplay: SelfPlayConfig | None = None
    out: str = "runs/train"
    iterations: int = 100
    groups_per_iteration: int = 8
    learning_rate: float = 1e-5
    lr_schedule: Literal["constant", "cosine"] = "constant"
    warmup_iterations: int = 0
    min_lr_ratio: float = 0.0
    weight_decay: float = 0.0
    epochs: int = 1
    minibatch_size: int = 8
    max_grad_norm: float = 1.0
    seed: int = 0
    eval_every: int = 0
    eval_episodes: int = 50
    eval_split: Literal["train", "dev", "test"] = "dev"
    eval_concurrency: int = 32
    checkpoint_every: int = 10
    tensorboard: bool = True
    wandb_project: str | None = None

    def __post_init__(self) -> None:
        if not self.model.path:
            raise ValueError("model.path is required")
        if not self.envs and self.selfplay is None:
            raise ValueError("envs must name at least one env (or selfplay its games)")
        if self.selfplay is not None:
            self.selfplay.check(self)
        if self.algorithm.group_size < 1 or self.groups_per_iteration < 1 or self.minibatch_size < 1:
            raise ValueError("group_size, groups_per_iteration and minibatch_size must be >= 1")
        if (self.algorithm.name == "sft") != bool(self.data.path):
            raise ValueError("algorithm sft trains on data.path (and only sft does): set both or neither")
        if self.algorithm.name == "sft" and (self.algorithm.kl_weight > 0 or self.data.batch_size < 1):
            raise ValueError("algorithm sft takes no kl_weight and a data.batch_size >= 1")
        if self.rollout.backend == "openai" and self.model.lora is None:
            raise ValueError("the openai rollout backend hot-loads LoRA adapters: set model.lora")
        if self.rollout.action_format not in ("text", "tools"):
            raise ValueError("rollout.action_format must be text or tools")
        if self.rollout.env_workers < 1:
            raise ValueError("rollout.env_workers must be >= 1")
        if not self.rollout.max_turns or any(len(entry) != 2 for entry in self.rollout.max_turns):
            raise ValueError("rollout.max_turns must be a list of [iteration, turns] pairs")
        if self.lr_schedule not in ("constant", "cosine"):
            raise ValueError("lr_schedule must be constant or cosine")
        if self.warmup_iterations < 0 or not 0.0 <= self.min_lr_ratio <= 1.0:
            raise ValueError("warmup_iterations must be >= 0 and min_lr_ratio in [0, 1]")

    def learning_rate_at(self, iteration: int) -> float:
        """The learning rate of iteration ``iteration`` (0-based): warm-up, then the schedule."""
        if iteration < self.warmup_iterations:
            return self.learning_rate * (iteration + 1) / self.warmup_iterations
        if self.lr_schedule == "constant":
            return self.learning_rate
        decay = max(self.iterations - 1 - self.warmup_iterations, 1)
        progress = min((iteration - self.warmup_iterations) / decay, 1.0)
        floor = self.min_lr_ratio * self.learning_rate
        return floor + (self.learning_rate - floor) * 0.5 * (1.0 + math.cos(math.pi * progress))


def from_dict(cls: type, data: Any, where: str = "config") -> Any:
    """Build the dataclass ``cls`` from plain data, checking keys and nesting."""
    if not isinstance(data, dict):
        raise ValueError(f"{where} must be a mapping, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        expected = ", ".join(sorted(names))
        raise ValueError(f"unknown key(s) in {where}: {', '.join(unknown)}; expected some of {expected}")
    values = {}
    for key, value in data.items():
        values[key] = _convert(hints[key], value, f"{where}.{key}")
    return cls(**values)


def _convert(hint: Any, value: Any, where: str) -> Any:
    """Nested dataclasses (also optional ones and lists of them) from their mappings."""
    options = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, type(int | None)) else (hint,)
    for option in options:
        if dataclasses.is_dataclass(option) and value is not None:
            return from_dict(option, value, where)
        if typing.get_origin(option) is list and typing.get_args(option) and value is not None:
            (item,) = typing.get_args(option)
            if dataclasses.is_dataclass(item):
                return [from_dict(item, entry, f"{where}[{i}]") for i, entry in enumerate(value)]
    return value


def load_config(path: str | Path) -> TrainConfig:
    """Read a training config from a YAML file."""
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    return from_dict(TrainConfig, data)


def to_dict(config: TrainConfig) -> dict[str, Any]:
    """The config as plain data (recorded with each run and checkpoint)."""
    return dataclasses.asdict(config)
