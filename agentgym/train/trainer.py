"""The training loop: rollout -> score -> advantages -> clipped policy-gradient update -> log, repeated.

Read top to bottom, as CleanRL's ``ppo.py``: ``Trainer.__init__`` loads the model (LoRA or full),
the optional value head and reference, and the sampler; ``train`` repeats ``step`` with
evaluation, logging and checkpoints; ``step`` is one iteration, one visible call per stage, each
defined below it in that order: ``rollout`` plays the iteration's groups of episodes,
``collate`` pads them into a ``Batch`` (:mod:`agentgym.train.batch`), ``score`` takes the logprobs, values and reference
logprobs before the update (``Scores``), ``advantages`` turns rewards into per-token advantages
(and PPO's returns), ``update`` runs the minibatch epochs, and ``log`` gathers the metrics.
Supervised fine-tuning (``algorithm.name: sft``) replaces all of that with ``sft_step``: one step
of cross-entropy on the assistant's tokens of expert episodes (:mod:`agentgym.train.sft_data`).
With ``selfplay`` the rollouts are multi-agent games (self-play, opponent pools, teams of roles) and
GRPO's baselines are kept per game and role (:mod:`agentgym.train.selfplay`); the rest is the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import shutil
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch
from torch import nn
from transformers import AutoModelForCausalLM, AutoModelForImageTextToText, AutoTokenizer

from agentgym.contract.registry import env_info
from agentgym.evaluation.plan import stable_seed
from agentgym.evaluation.records import EpisodeRecord
from agentgym.evaluation.runner import EvalItem, run_eval
from agentgym.llm.generation import Generator, SamplingParams, autocast
from agentgym.llm.models import resolve_model
from agentgym.llm.policies.base import Policy
from agentgym.llm.prefix_cache import PrefixCache
from agentgym.llm.vision import VisionGenerator, VisionProcessor, is_vision_model, load_processor
from agentgym.train.advantages import gigpo_advantages, grpo_advantages
from agentgym.train.batch import Batch, Scores, collate, rows_of, spread_over_turns, token_gae
from agentgym.train.config import TrainConfig, to_dict
from agentgym.train.loss import (
    aggregate,
    clipped_policy_loss,
    kl_k3,
    predicting_positions,
    token_logprobs_and_entropy,
    value_loss,
)
from agentgym.train.metrics import MetricsLog
from agentgym.train.rollout import (
    ChatTokens,
    GeneratorPolicy,
    HFSampler,
    Sampler,
    ServerSampler,
    Trajectory,
    VisionChatTokens,
    chat_env,
    make_slots,
    play_episodes,
)
from agentgym.train.selfplay import SelfPlay, selfplay_metrics
from agentgym.train.sft_data import batch_indices, training_trajectories
from agentgym.train.weights import checkpoint_model, load_weights, pick_device, precision
from agentgym.wrappers.chat import ChatWrapper


class Trainer:
    """GRPO / PPO / GiGPO (and SFT on expert episodes) for multi-turn agents on agentgym envs (see ``TrainConfig``)."""

    def __init__(self, config: TrainConfig) -> None:
        self.config = config
        self.algorithm = config.algorithm
        self.out = Path(config.out)
        self.out.mkdir(parents=True, exist_ok=True)
        torch.manual_seed(config.seed)
        self.device = pick_device(config.model.device)
        weights_dtype, frozen_dtype, self.compute_dtype = precision(config, self.device)

        # The policy: a causal LM or a vision-language model, with a LoRA adapter (peft) or fully trainable.
        # model.path may name a GGUF file or a packaged model: resolved to a save_pretrained folder (converted once).
        self.source = resolve_model(config.model.path)
        folder = self.source.folder
        self.processor: VisionProcessor | None = None
        model_class: Any = AutoModelForCausalLM
        if is_vision_model(folder):
            self.processor, model_class = load_processor(folder), AutoModelForImageTextToText
            self.tokenizer = self.processor.tokenizer
        else:
            self.tokenizer = AutoTokenizer.from_pretrained(folder)
        # model.init_from: an earlier run's weights (RL from SFT), a full model or an adapter merged in.
        start = checkpoint_model(config.model.init_from) if config.model.init_from else None
        model = load_weights(model_class, folder, start, weights_dtype).to(self.device)
        if config.model.gradient_checkpointing:
            # transformers >= 5.25 calls it activation checkpointing (the old name warns); older ones, gradient.
            enable = getattr(model, "activation_checkpointing_enable", None) or model.gradient_checkpointing_enable
            enable()
            model.enable_input_require_grads()
        if config.model.lora is not None:
            from peft import LoraConfig, get_peft_model

            lora = config.model.lora
            model = get_peft_model(
                model,
                LoraConfig(
                    r=lora.r,
                    lora_alpha=lora.alpha,
                    lora_dropout=lora.dropout,
                    target_modules=lora.target_modules,
                    task_type="CAUSAL_LM",
                ),
            )
        self.model = model
        # PPO's critic: a linear value head on the policy's last hidden state.
        self.value_head: nn.Linear | None = None
        if self.algorithm.name == "ppo":
            self.value_head = nn.Linear(model.config.get_text_config().hidden_size, 1).to(self.device)
            nn.init.zeros_(self.value_head.weight)
            nn.init.zeros_(self.value_head.bias)
        # The KL reference: the base model (the adapter switched off under LoRA); none at weight 0.
        self.reference: nn.Module | None = None
        if self.algorithm.kl_weight > 0 and config.model.lora is None:
            reference = load_weights(model_class, folder, start, frozen_dtype)
            self.reference = reference.to(self.device).eval().requires_grad_(False)
        parameters = [p for p in self.model.parameters() if p.requires_grad]
        if self.value_head is not None:
            parameters += list(self.value_head.parameters())
        self.optimizer = torch.optim.AdamW(parameters, lr=config.learning_rate, weight_decay=config.weight_decay)

        # The sampler: in-process generation, or a server that hot-loads our adapter.
        if self.processor is not None:
            self.generator: Generator = VisionGenerator(self.model, self.processor, compute_dtype=self.compute_dtype)
            self.chat_tokens: ChatTokens = VisionChatTokens(self.processor, sorted(self.generator.eos_token_ids))
        else:
            self.generator = Generator(self.model, self.tokenizer, compute_dtype=self.compute_dtype)
            self.chat_tokens = ChatTokens(self.tokenizer, sorted(self.generator.eos_token_ids))
        rollout = config.rollout
        params = SamplingParams(
            temperature=rollout.temperature, top_p=rollout.top_p, max_new_tokens=rollout.max_new_tokens
        )
        self.sampler: Sampler
        if rollout.backend == "hf":
            self.sampler = HFSampler(self.generator, params, rollout.max_batch_size)
        else:
            self.sampler = ServerSampler(
                rollout.base_url, self.source.name, params, self.generator.context_length, rollout.timeout_s
            )
        # Multi-agent games instead of envs: self-play, opponent pools, role teams (config.selfplay).
        self.selfplay = SelfPlay(config, self.model, self.generator, self.chat_tokens) if config.selfplay else None
        # SFT's expert episodes, as the rollouts would render them (loss mask 1 on the assistant's tokens).
        self.examples: list[Trajectory] = []
        if self.algorithm.name == "sft":
            self.examples = training_trajectories(
                config.data.path, self.chat_tokens, rollout.system_prompt, rollout.action_format, config.eval_split
            )
        self.envs: list[list[ChatWrapper]] = [[] for _ in config.envs]
        self.iteration = 0
        self.metrics = MetricsLog(self.out, config.tensorboard, config.wandb_project, to_dict(config))
        (self.out / "config.json").write_text(json.dumps(to_dict(config), indent=2), encoding="utf-8")

    # -------------------------------------------------------------------------------- loop
    def train(self, on_iteration: Callable[[dict[str, float]], None] | None = None) -> None:
        """Run iterations until ``config.iterations``, evaluating, logging and checkpointing.

        ``on_iteration(metrics)`` is called after each iteration (e.g. to print progress).
        """
        config = self.config
        self.metrics.truncate(self.iteration)  # rows from here on are this run's (a killed run may have left some)
        while self.iteration < config.iterations:
            metrics = self.step()
            if config.eval_every and self.iteration % config.eval_every == 0:
                metrics |= self.evaluate()
            self.metrics.write(metrics, self.iteration)
            if on_iteration is not None:
                on_iteration(metrics)
            if self.iteration % config.checkpoint_every == 0 or self.iteration == config.iterations:
                self.save_checkpoint()

    def step(self) -> dict[str, float]:
        """One iteration, in CleanRL's order: rollout, score, advantages, update, log; returns its metrics.

        SFT has no rollout: its iteration is one supervised step on expert episodes (``sft_step``).
        """
        if self.algorithm.name == "sft":
            return self.sft_step()
        clock = time.perf_counter()
        with self.prefix_cached():
            trajectories = self.rollout()
        rolled = time.perf_counter()
        batch = collate(trajectories, self.tokenizer.pad_token_id or 0)
        # A vision-language model's image inputs, per episode, for the forward passes (None: text).
        images = [self.chat_tokens.model_inputs(t) for t in trajectories] if self.processor is not None else None
        scores = self.score(batch, images)
        advantages, returns = self.advantages(trajectories, scores.values)
        losses = self.update(batch, scores, advantages, returns, images)
        timings = {"rollout_s": rolled - clock, "update_s": time.perf_counter() - rolled}
        metrics = self.log(trajectories, batch, scores, advantages, losses) | timings
        self.iteration += 1
        return metrics

    # ----------------------------------------------------------------------------- rollout
    def rollout(self) -> list[Trajectory]:
        """Play ``groups_per_iteration`` groups of ``group_size`` episodes (or games); one task per group."""
        config, iteration = self.config, self.iteration
        rng = random.Random(stable_seed(config.seed, "rollout", iteration))
        if self.selfplay is not None:  # each of the learner's moves in the games is a one-turn trajectory
            self.model.eval()
            return self.selfplay.rollout(
                iteration,
                config.groups_per_iteration,
                self.algorithm.group_size,
                rng,
                config.rollout.turns_at(iteration),
                lambda game, move: stable_seed(config.seed, iteration, game, move),
            )
        tasks, envs = [], []
        used = [0] * len(config.envs)
        for group in range(config.groups_per_iteration):
            which = group % len(config.envs)
            env_config = config.envs[which]
            task_id = rng.choice(env_info(env_config.id).splits.ids(env_config.split))
            for _ in range(self.algorithm.group_size):
                if used[which] == len(self.envs[which]):
                    self.envs[which].append(
                        chat_env(
                            env_config.id,
                            env_config.kwargs,
                            config.rollout.system_prompt,
                            config.rollout.action_format,
                            config.rollout.images(),
                        )
                    )
                envs.append(self.envs[which][used[which]])
                used[which] += 1
                tasks.append((env_config.id, task_id, group))
        if isinstance(self.sampler, ServerSampler) and iteration > 0:
            self.sampler.load_adapter(config.rollout.adapter_name, str(self._save_adapter()))
        self.model.eval()
        return play_episodes(
            make_slots(envs, tasks, rng),
            self.sampler,
            self.chat_tokens,
            config.rollout.turns_at(iteration),
            lambda slot, turn: stable_seed(config.seed, iteration, slot, turn),
            config.rollout.env_workers,
        )

    # ------------------------------------------------------------------------------- score
    def score(self, batch: Batch, images: list[dict[str, Any]] | None = None) -> Scores:
        """Score the batch before updating: the trainer's own logprobs ("old"), the critic's values, the reference's.

        ``images``: each row's image inputs (a vision-language model's); None for a text model.
        """
        rows_total = len(batch.token_ids)
        size = self.config.minibatch_size
        old_logprobs, values = torch.zeros_like(batch.sampler_logprobs), torch.zeros_like(batch.sampler_logprobs)
        ref_logprobs = torch.zeros_like(batch.sampler_logprobs) if self.algorithm.kl_weight > 0 else None
        with torch.no_grad():
            self.model.eval()
            for rows in (list(range(i, min(i + size, rows_total))) for i in range(0, rows_total, size)):
                ids, att = batch.token_ids[rows].to(self.device), batch.attention[rows].to(self.device)
                mask = batch.mask[rows].to(self.device)
                logprobs, _, chunk_values = self.forward(ids, att, rows_of(images, rows), mask)
                old_logprobs[rows], values[rows] = logprobs.cpu(), chunk_values.cpu()
                if ref_logprobs is not None:
                    ref_logprobs[rows] = self.reference_logprobs(ids, att, rows_of(images, rows), mask).cpu()
        return Scores(old_logprobs, values, ref_logprobs)

    def forward(
        self,
        token_ids: torch.Tensor,
        attention: torch.Tensor,
        images: list[dict[str, Any]] | None = None,
        mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, ...]:
        """Token logprobs, entropies and (PPO) values for a padded batch (``images``: each row's image inputs).

        With ``mask`` (the loss mask), a text model computes logits only where they predict a masked token: the
        vocabulary's logits over every position would dominate the memory of a long episode; other tokens get 0.
        """
        positions = predicting_positions(mask) if mask is not None and not images else None
        with autocast(self.device, self.compute_dtype):
            output = self._run(self.model, token_ids, attention, images, self.value_head is not None, positions)
            logprobs, entropy = token_logprobs_and_entropy(output.logits, token_ids, positions)
            values = torch.zeros_like(logprobs)
            if self.value_head is not None:
                # The value of the state before token k comes from the hidden state at k - 1.
                hidden = output.hidden_states[-1].float()
                values = torch.cat([values[:, :1], self.value_head(hidden)[:, :-1, 0].float()], dim=1)
        return logprobs, entropy, values

    def reference_logprobs(
        self,
        token_ids: torch.Tensor,
        attention: torch.Tensor,
        images: list[dict[str, Any]] | None = None,
        mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Token logprobs under the reference (the base model with the adapter switched off under LoRA)."""
        positions = predicting_positions(mask) if mask is not None and not images else None
        with autocast(self.device, self.compute_dtype):
            if self.reference is not None:
                logits = self._run(self.reference, token_ids, attention, images, positions=positions).logits
            else:
                with self.model.disable_adapter():
                    logits = self._run(self.model, token_ids, attention, images, positions=positions).logits
            return token_logprobs_and_entropy(logits, token_ids, positions)[0]

    def _run(
        self,
        model: nn.Module,
        token_ids: torch.Tensor,
        attention: torch.Tensor,
        images: list[dict[str, Any]] | None,
        hidden: bool = False,
        positions: torch.Tensor | None = None,
    ) -> Any:
        """``model``'s output (logits, and the last hidden states if ``hidden``) for a right-padded batch; the
        logits of ``positions`` only where given (text models).

        Rows with images run one at a time, unpadded, with their image inputs (the model places
        each image's features and positions from its own ids); the outputs are padded back.
        """
        if not images:
            keep = {} if positions is None else {"logits_to_keep": positions}
            return model(input_ids=token_ids, attention_mask=attention, output_hidden_states=hidden, **keep)
        logits, states = [], []
        for row, inputs in enumerate(images):
            length = int(attention[row].sum())
            inputs = {key: value.to(self.device) for key, value in inputs.items()}
            if "pixel_values" in inputs:
                inputs["pixel_values"] = inputs["pixel_values"].to(self.model.dtype)
            output = model(input_ids=token_ids[row : row + 1, :length], output_hidden_states=hidden, **inputs)
            pad = token_ids.shape[1] - length
            logits.append(nn.functional.pad(output.logits, (0, 0, 0, pad)))
            if hidden:
                states.append(nn.functional.pad(output.hidden_states[-1], (0, 0, 0, pad)))
        return SimpleNamespace(logits=torch.cat(logits), hidden_states=[torch.cat(states)] if hidden else None)

    # -------------------------------------------------------------------------- advantages
    def advantages(
        self, trajectories: list[Trajectory], values: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Per-token advantages shaped like the padded batch, and the critic's returns (PPO; else None)."""
        algorithm = self.algorithm
        groups = [t.group for t in trajectories]
        if algorithm.name == "ppo":  # GAE over each episode's model tokens
            return token_gae(trajectories, values, algorithm.gamma, algorithm.lam, algorithm.std_normalize)
        if algorithm.name == "grpo" and self.selfplay is not None:  # each seat's reward less its role's baseline
            turn_advantages = self.selfplay.advantages(trajectories, algorithm.std_normalize)
        elif algorithm.name == "grpo":  # one advantage per episode, given to each of its turns
            episode = grpo_advantages(
                torch.tensor([t.episode_return for t in trajectories]), groups, algorithm.std_normalize
            )
            turn_advantages = [[float(episode[i])] * t.turns for i, t in enumerate(trajectories)]
        else:  # gigpo: the episode's advantage plus each turn's own
            turn_advantages = gigpo_advantages(
                [t.rewards for t in trajectories],
                [t.anchors for t in trajectories],
                groups,
                gamma=algorithm.gamma,
                step_weight=algorithm.step_weight,
                std_normalize=algorithm.std_normalize,
            )
        return spread_over_turns(trajectories, turn_advantages), None

    # ------------------------------------------------------------------------------ update
    def update(
        self,
        batch: Batch,
        scores: Scores,
        advantages: torch.Tensor,
        returns: torch.Tensor | None,
        images: list[dict[str, Any]] | None = None,
    ) -> dict[str, float]:
        """``epochs`` passes of shuffled minibatch updates; the mean of each loss term over them."""
        config, algorithm = self.config, self.algorithm
        stats: dict[str, list[float]] = defaultdict(list)
        order = random.Random(stable_seed(config.seed, "minibatches", self.iteration))
        stats["learning_rate"].append(self.set_learning_rate())
        self.model.train()
        for _ in range(config.epochs):
            rows_order = list(range(len(batch.token_ids)))
            order.shuffle(rows_order)
            for start in range(0, len(rows_order), config.minibatch_size):
                rows = rows_order[start : start + config.minibatch_size]
                batch_mask = batch.mask[rows].to(self.device)
                logprobs, entropy, values = self.forward(
                    batch.token_ids[rows].to(self.device),
                    batch.attention[rows].to(self.device),
                    rows_of(images, rows),
                    batch_mask,
                )
                how = algorithm.loss_aggregation
                loss, clip = clipped_policy_loss(
                    logprobs,
                    scores.old_logprobs[rows].to(self.device),
                    advantages[rows].to(self.device),
                    batch_mask,
                    algorithm.clip_low,
                    algorithm.clip_high,
                    how,
                )
                entropy_mean = aggregate(entropy, batch_mask, how)
                loss = loss - algorithm.entropy_weight * entropy_mean
                if scores.ref_logprobs is not None:
                    kl = aggregate(kl_k3(logprobs, scores.ref_logprobs[rows].to(self.device)), batch_mask, how)
                    loss = loss + algorithm.kl_weight * kl
                    stats["kl"].append(kl.item())
                if self.value_head is not None:
                    assert returns is not None
                    critic = value_loss(values, returns[rows].to(self.device), batch_mask, how)
                    loss = loss + algorithm.value_weight * critic
                    stats["value_loss"].append(critic.item())
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                trainable = [p for group in self.optimizer.param_groups for p in group["params"]]
                grad_norm = torch.nn.utils.clip_grad_norm_(trainable, config.max_grad_norm)
                self.optimizer.step()
                stats["loss"].append(loss.item())
                stats["entropy"].append(entropy_mean.item())
                stats["clip_fraction"].append(clip["clip_fraction"])
                stats["grad_norm"].append(float(grad_norm))
        self.model.eval()
        return {key: sum(values) / len(values) for key, values in stats.items()}

    def set_learning_rate(self) -> float:
        """Set and return the schedule's learning rate for this iteration."""
        learning_rate = self.config.learning_rate_at(self.iteration)
        for group in self.optimizer.param_groups:
            group["lr"] = learning_rate
        return learning_rate

    # -------------------------------------------------------------------------- supervised
    def sft_step(self) -> dict[str, float]:
        """SFT's iteration: one optimizer step of cross-entropy on the assistant's tokens of ``data.batch_size``
        expert examples.

        The batch's minibatches (``minibatch_size`` examples) each add their share of the batch's mean
        loss to the gradient: their tokens' share of the batch's tokens (``loss_aggregation: token``) or
        their episodes' share (``sequence``).
        """
        config, clock = self.config, time.perf_counter()
        rows_all = batch_indices(len(self.examples), config.data.batch_size, config.seed, self.iteration)
        batch = collate([self.examples[row] for row in rows_all], self.tokenizer.pad_token_id or 0)
        how = self.algorithm.loss_aggregation

        def size(mask: torch.Tensor) -> torch.Tensor:
            return mask.sum() if how == "token" else (mask.sum(-1) > 0).sum()

        learning_rate, total = self.set_learning_rate(), size(batch.mask)
        stats: dict[str, float] = defaultdict(float)
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        for start in range(0, len(rows_all), config.minibatch_size):
            rows = slice(start, start + config.minibatch_size)
            mask = batch.mask[rows].to(self.device)
            ids, attention = batch.token_ids[rows].to(self.device), batch.attention[rows].to(self.device)
            logprobs, entropy, _ = self.forward(ids, attention, mask=mask)
            share = float(size(mask) / total)
            loss = aggregate(-logprobs, mask, how) * share  # the negative log-likelihood of the expert's tokens
            loss.backward()
            stats["loss"] += loss.item()
            stats["entropy"] += aggregate(entropy, mask, how).item() * share
        trainable = [p for group in self.optimizer.param_groups for p in group["params"]]
        grad_norm = torch.nn.utils.clip_grad_norm_(trainable, config.max_grad_norm)
        self.optimizer.step()
        self.model.eval()
        metrics = {
            **stats,
            "grad_norm": float(grad_norm),
            "learning_rate": learning_rate,
            "iteration": self.iteration,
            "epoch": (self.iteration + 1) * config.data.batch_size / len(self.examples),
            "model_tokens": int(batch.mask.sum()),
            "sequence_tokens_mean": float(batch.attention.sum(-1).float().mean()),
            "update_s": time.perf_counter() - clock,
        }
        self.iteration += 1
        return metrics

    # --------------------------------------------------------------------------------- log
    def log(
        self,
        trajectories: list[Trajectory],
        batch: Batch,
        scores: Scores,
        advantages: torch.Tensor,
        losses: dict[str, float],
    ) -> dict[str, float]:
        """The iteration's metrics: sampler/trainer logprob mismatch, losses, advantages, episode statistics."""
        mismatch = (scores.old_logprobs - batch.sampler_logprobs).abs()
        n = len(trajectories)
        games = selfplay_metrics(trajectories) if self.selfplay is not None else {}
        return games | {
            "logprob_mismatch_mean": aggregate(mismatch, batch.mask, "token").item(),
            "logprob_mismatch_max": (mismatch * batch.mask).max().item(),
            **losses,
            "advantage_abs_mean": aggregate(advantages.abs(), batch.mask, "token").item(),
            "iteration": self.iteration,
            "max_turns": self.config.rollout.turns_at(self.iteration),
            "success_rate": sum(t.success for t in trajectories) / n,
            "score_mean": sum(t.score for t in trajectories) / n,
            "return_mean": sum(t.episode_return for t in trajectories) / n,
            "turns_mean": sum(t.turns for t in trajectories) / n,
            "model_tokens": sum(sum(t.loss_mask) for t in trajectories),
            "sequence_tokens_mean": sum(len(t.token_ids) for t in trajectories) / n,
        }

    # --------------------------------------------------------------------------- evaluation
    def evaluate(
        self,
        temperature: float = 0.0,
        split: str | None = None,
        items: Sequence[EvalItem] | None = None,
        label: str = "",
    ) -> dict[str, float]:
        """Episodes on ``split`` (default ``eval_split``) through the runner, greedy unless ``temperature`` > 0.

        ``items`` plays those instead of ``eval_episodes`` of each training env (other ids, task ids, kwargs:
        held-out envs). Results go to ``out/eval/iteration-N`` (``-temperature-T`` added when sampling,
        ``-SPLIT`` for another split than ``eval_split``, ``-LABEL`` for a ``label``); sampled episodes draw
        from seeds derived from the episode's seed, so they replay exactly.
        """
        config = self.config
        split = split or config.eval_split
        games = {}
        if self.selfplay is not None:  # the learner against the eval opponents, greedy unless temperature > 0
            turns = config.rollout.turns_at(self.iteration)
            games = self.selfplay.evaluate(split, config.eval_episodes, turns, temperature)
            if not config.envs:
                return games
        if items is None:
            items = [
                EvalItem(env.id, config.eval_episodes, split, config.rollout.turns_at(self.iteration), env.kwargs)
                for env in config.envs
            ]
        records: list[EpisodeRecord] = []
        name = f"iteration-{self.iteration:06d}" + (f"-temperature-{temperature:g}" if temperature > 0 else "")
        name += (f"-{split}" if split != config.eval_split else "") + (f"-{label}" if label else "")

        async def run() -> None:
            policy = self._eval_policy(temperature)
            try:
                await run_eval(
                    "trainer",
                    policy,
                    items,
                    self.out / "eval" / name,
                    seed=config.seed,
                    concurrency=config.eval_concurrency,
                    system_prompt=config.rollout.system_prompt,
                    action_format=config.rollout.action_format,
                    images=config.rollout.images(),
                    on_episode=records.append,
                )
            finally:
                await policy.aclose()

        with self.prefix_cached():
            asyncio.run(run())
        ok = [record for record in records if record.status == "ok"]
        return games | {
            "eval_success_rate": sum(r.success for r in ok) / max(len(ok), 1),
            "eval_score_mean": sum(r.score for r in ok) / max(len(ok), 1),
            "eval_errors": len(records) - len(ok),
        }

    @contextlib.contextmanager
    def prefix_cached(self) -> Iterator[None]:
        """While the weights hold still (one rollout, one evaluation), the in-process generator reuses the keys
        and values of a prompt's prefix computed before (an episode's last turn): ``rollout.prefix_cache_tokens``."""
        tokens = self.config.rollout.prefix_cache_tokens
        if tokens > 0 and isinstance(self.sampler, HFSampler) and self.processor is None:
            self.generator.prefix_cache = PrefixCache(tokens)
        try:
            yield
        finally:
            self.generator.prefix_cache = None

    def _eval_policy(self, temperature: float) -> Policy:
        rollout = self.config.rollout
        if isinstance(self.sampler, ServerSampler):
            from agentgym.llm.policies.openai_compat import OpenAIPolicy

            if self.iteration > 0:
                self.sampler.load_adapter(rollout.adapter_name, str(self._save_adapter()))
            return OpenAIPolicy(
                self.sampler.model, rollout.base_url, temperature=temperature, max_tokens=rollout.max_new_tokens
            )
        params = SamplingParams(temperature=temperature, max_new_tokens=rollout.max_new_tokens)
        return GeneratorPolicy(self.generator, params)

    # ------------------------------------------------------------------------ checkpoints
    def _save_adapter(self) -> Path:
        """Save the current adapter for the server to load; older copies are removed."""
        folder = self.out / "adapters" / f"iteration-{self.iteration:06d}"
        if not folder.exists():
            self.model.save_pretrained(folder)
        for old in sorted((self.out / "adapters").iterdir())[:-2]:
            shutil.rmtree(old, ignore_errors=True)
        return folder.resolve()

    def save_checkpoint(self) -> Path:
        """Write ``out/checkpoints/iteration-N``: the model (adapter or full) for serving, and the state to resume."""
        folder = self.out / "checkpoints" / f"iteration-{self.iteration:06d}"
        folder.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(folder / "model")
        (self.processor or self.tokenizer).save_pretrained(folder / "model")
        trainable = {name: p.detach().cpu() for name, p in self.model.named_parameters() if p.requires_grad}
        state = {
            "iteration": self.iteration,
            "model": trainable,
            "value_head": self.value_head.state_dict() if self.value_head is not None else None,
            "optimizer": self.optimizer.state_dict(),
            "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state_all() if self.device.type == "cuda" else None,
            "selfplay": self.selfplay.state() if self.selfplay is not None else None,
        }
        torch.save(state, folder / "trainer_state.pt")
        (folder / "config.json").write_text(json.dumps(to_dict(self.config), indent=2), encoding="utf-8")
        return folder

    def load_checkpoint(self, folder: Path | None = None) -> bool:
        """Resume from ``folder`` (default: the latest checkpoint in ``out``); False if there is none."""
        if folder is None:
            found = sorted((self.out / "checkpoints").glob("iteration-*"))
            if not found:
                return False
            folder = found[-1]
        state = torch.load(folder / "trainer_state.pt", map_location=self.device, weights_only=False)
        missing = set(state["model"]) - {name for name, _ in self.model.named_parameters()}
        if missing:
            raise ValueError(f"the checkpoint does not fit the model: unknown parameters {sorted(missing)[:3]}")
        self.model.load_state_dict(state["model"], strict=False)
        if self.value_head is not None and state["value_head"] is not None:
            self.value_head.load_state_dict(state["value_head"])
        self.optimizer.load_state_dict(state["optimizer"])
        # RNG states are CPU byte tensors whatever map_location moved them to.
        torch.set_rng_state(state["torch_rng"].cpu())
        if state.get("cuda_rng") is not None and self.device.type == "cuda":
            torch.cuda.set_rng_state_all([rng.cpu() for rng in state["cuda_rng"]])
        if self.selfplay is not None and state.get("selfplay") is not None:
            self.selfplay.load_state(state["selfplay"])
        self.iteration = state["iteration"]
        self.metrics.truncate(self.iteration)
        return True

    def close(self) -> None:
        """Close the envs (and games) and the metric writers."""
        if self.selfplay is not None:
            self.selfplay.close()
        for envs in self.envs:
            for env in envs:
                with contextlib.suppress(Exception):
                    env.close()
        self.metrics.close()
