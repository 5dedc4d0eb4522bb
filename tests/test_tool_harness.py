"""Native tool calls on the harness side: parsing, ChatWrapper, the openai policy, the runner,
serve-model over HTTP and an eval of a tiny model in tools format on three families."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import pytest
from test_policies import ScriptedServer, serve  # noqa: F401  (the fixture)

import agentgym  # noqa: F401  (registers the envs)
from agentgym.contract.tool_parsing import assistant_message, parse_tool_calls, template_messages
from agentgym.evaluation.runner import EvalItem, run_eval
from agentgym.llm.policies import OraclePolicy
from agentgym.llm.policies.base import Reply
from agentgym.llm.policies.openai_compat import OpenAIPolicy
from agentgym.wrappers.chat import DEFAULT_TOOLS_SYSTEM_PROMPT, NOT_EXECUTED, ChatWrapper

MOVE_UP = '<tool_call>\n{"name": "move", "arguments": {"direction": "up"}}\n</tool_call>'


def call(name: str, arguments: dict, call_id: str = "call-1") -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


# ---- parsing model text (the Hermes / Qwen convention, as vLLM's hermes parser reads it) ------------


def test_text_without_tool_calls_is_content() -> None:
    assert parse_tool_calls("Action: up").content == "Action: up"
    assert parse_tool_calls("Action: up").tool_calls == []
    assert parse_tool_calls("  \n").content is None


def test_one_call_and_the_text_around_it() -> None:
    reply = parse_tool_calls(f"I go up.\n{MOVE_UP}\n")
    assert reply.content == "I go up."
    (only,) = reply.tool_calls
    assert only["type"] == "function" and only["id"].startswith("chatcmpl-tool-")
    assert only["function"] == {"name": "move", "arguments": '{"direction": "up"}'}


def test_several_calls_an_unclosed_last_one_and_unicode_arguments() -> None:
    text = MOVE_UP + '\n<tool_call>\n{"name": "guess", "arguments": {"word": "ÉCLAT"}}'
    reply = parse_tool_calls(text)
    assert reply.content is None
    assert [c["function"]["name"] for c in reply.tool_calls] == ["move", "guess"]
    assert reply.tool_calls[1]["function"]["arguments"] == '{"word": "ÉCLAT"}'
    assert reply.tool_calls[0]["id"] != reply.tool_calls[1]["id"]


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>\n{"name": "move", "arguments": {"direction": "up"}\n</tool_call>',  # a brace short
        '<tool_call>\n{"arguments": {"direction": "up"}}\n</tool_call>',  # no name
        '<tool_call>\n{"name": "move"}\n</tool_call>',  # no arguments
        '<tool_call>\n["move", "up"]\n</tool_call>',  # not an object
        MOVE_UP + "\n<tool_call>\nnot json\n</tool_call>",  # one bad block spoils them all
        "<tool_call>",
    ],
)
def test_malformed_blocks_leave_the_whole_text_as_content(text: str) -> None:
    reply = parse_tool_calls(text)
    assert reply.tool_calls == [] and reply.content == text.strip()
    assert assistant_message(text) == {"role": "assistant", "content": text}


def test_template_messages_give_arguments_as_mappings() -> None:
    messages = [
        {"role": "assistant", "content": None, "tool_calls": [call("move", {"direction": "up"})]},
        {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "x", "arguments": "not json"}}]},
        {"role": "user", "content": "hi"},
    ]
    converted = template_messages(messages)
    assert converted[0]["tool_calls"][0]["function"]["arguments"] == {"direction": "up"}
    assert converted[1]["tool_calls"][0]["function"]["arguments"] == "not json"
    assert converted[2] == messages[2]
    assert isinstance(messages[0]["tool_calls"][0]["function"]["arguments"], str)  # the input is not changed


# ---- ChatWrapper ---------------------------------------------------------------------------------------


def test_chat_wrapper_tools_mode_builds_tool_messages() -> None:
    env = ChatWrapper(gym.make("Sokoban-v0"), action_format="tools")
    messages, _ = env.reset(options={"task_id": 0})
    assert messages[0] == {"role": "system", "content": DEFAULT_TOOLS_SYSTEM_PROMPT}
    assert [tool["function"]["name"] for tool in env.tools] == ["move"]
    reply = {"role": "assistant", "content": None, "tool_calls": [call("move", {"direction": "left"})]}
    messages, _, _, _, info = env.step(reply)
    assert not info["invalid_action"] and info["tool_call"]["name"] == "move" and info["action"] == "left"
    assert messages[-2] == reply
    assert messages[-1]["role"] == "tool" and messages[-1]["tool_call_id"] == "call-1"
    assert messages[-1]["name"] == "move" and messages[-1]["content"].startswith("You moved left")
    # A text reply in tools mode is played as text and answered by a user message.
    messages, _, _, _, info = env.step("Action: down")
    assert not info["invalid_action"] and info["action"] == "down"
    assert messages[-2:] == [
        {"role": "assistant", "content": "Action: down"},
        {"role": "user", "content": messages[-1]["content"]},
    ]
    assert env.observation_space.contains(messages)


def test_chat_wrapper_answers_every_call_and_windows_by_turn() -> None:
    env = ChatWrapper(gym.make("Sokoban-v0"), action_format="tools", history_window=1)
    env.reset(options={"task_id": 0})
    env.step({"role": "assistant", "content": None, "tool_calls": [call("move", {"direction": "left"})]})
    two = [call("move", {"direction": "up"}, "a"), {"function": {"name": "move", "arguments": {"direction": "up"}}}]
    messages, _, _, _, info = env.step({"role": "assistant", "content": "Both.", "tool_calls": two})
    assert info["invalid_action"]  # the env executes one call per step and says so
    assistant, first, second = messages[2:]
    assert assistant["content"] == "Both." and second["tool_call_id"] == assistant["tool_calls"][1]["id"]
    assert assistant["tool_calls"][1]["function"]["arguments"] == '{"direction": "up"}'  # OpenAI's shape
    assert first["tool_call_id"] == "a" and "one tool call per step" in first["content"]
    assert second["content"] == NOT_EXECUTED
    assert len(env.transcript) == 2 + 2 + 3  # the window kept the last turn only


def test_text_mode_refuses_tool_calls_and_tools_mode_needs_tools() -> None:
    env = ChatWrapper(gym.make("Sokoban-v0"))
    env.reset(options={"task_id": 0})
    assert env.tools is None
    with pytest.raises(TypeError, match="action_format='tools'"):
        env.step({"role": "assistant", "content": None, "tool_calls": [call("move", {"direction": "up"})]})
    with pytest.raises(ValueError, match="action_format"):
        ChatWrapper(gym.make("Sokoban-v0"), action_format="json")  # type: ignore[arg-type]


def test_a_qwen_style_chat_template_renders_the_conversation(tiny_tool_model_path: Path) -> None:
    """Through transformers' apply_chat_template with tools=: arguments as JSON objects, results as tool responses."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_tool_model_path)
    env = ChatWrapper(gym.make("Sokoban-v0"), action_format="tools")
    env.reset(options={"task_id": 0})
    env.step({"role": "assistant", "content": None, "tool_calls": [call("move", {"direction": "left"})]})
    text = env.apply_chat_template(tokenizer, add_generation_prompt=True, tokenize=False)
    assert json.dumps(env.tools[0], ensure_ascii=False) in text  # the tool list in the system turn
    call_text = '<tool_call>\n{"name": "move", "arguments": {"direction": "left"}}\n</tool_call>'
    assert "<|im_start|>assistant\n" + call_text + "<|im_end|>" in text
    assert "<|im_start|>user\n<tool_response>\nYou moved left" in text
    assert text.endswith("</tool_response><|im_end|>\n<|im_start|>assistant\n")


# ---- the openai policy and the runner ---------------------------------------------------------------------


def test_openai_policy_and_runner_play_tool_calls(serve, tmp_path: Path) -> None:  # noqa: F811
    """A scripted endpoint that always calls move(up): the runner plays the calls and records them."""
    server: ScriptedServer = serve([])
    server.message = {"role": "assistant", "content": None, "tool_calls": [call("move", {"direction": "up"})]}
    policy = OpenAIPolicy("tiny", server.url)
    items = [EvalItem("Sokoban-v0", 1, max_turns=2)]
    stats = asyncio.run(run_eval("openai:tiny", policy, items, tmp_path, action_format="tools"))
    assert stats.played == 1 and stats.errored == 0
    first, second = server.requests
    assert first["tools"][0]["function"]["name"] == "move" and first["tool_choice"] == "auto"
    assert first["messages"][0]["content"] == DEFAULT_TOOLS_SYSTEM_PROMPT
    assert second["messages"][2]["tool_calls"][0]["function"] == {"name": "move", "arguments": '{"direction": "up"}'}
    assert second["messages"][3]["role"] == "tool" and second["messages"][3]["tool_call_id"] == "call-1"
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["action_format"] == "tools" and run["system_prompt"] == DEFAULT_TOOLS_SYSTEM_PROMPT
    (record,) = [json.loads(line) for line in (tmp_path / "episodes.jsonl").read_text().splitlines()]
    assert [turn["action"] for turn in record["turns"]] == ["up", "up"]
    assert record["turns"][0]["tool_calls"] == server.message["tool_calls"]
    assert record["turns"][0]["info"]["tool_call"]["arguments"] == {"direction": "up"}
    assert [message["role"] for message in record["messages"]] == ["system", "user"] + ["assistant", "tool"] * 2
    # Text runs are recorded as such, and a folder cannot be resumed in the other format.
    with pytest.raises(ValueError, match="action_format"):
        asyncio.run(run_eval("openai:tiny", OpenAIPolicy("tiny", server.url), items, tmp_path))


def test_oracle_solves_tasks_through_tool_calls(tmp_path: Path) -> None:
    items = [EvalItem("Sokoban-v0", 2), EvalItem("Wordle-v0", 1)]
    stats = asyncio.run(run_eval("oracle", OraclePolicy(), items, tmp_path, action_format="tools"))
    assert stats.played == 3 and stats.errored == 0
    for record in [json.loads(line) for line in (tmp_path / "episodes.jsonl").read_text().splitlines()]:
        assert record["success"], record["key"]
        assert all(turn["tool_calls"] and not turn["invalid_action"] for turn in record["turns"])
        assert {turn["info"]["tool_call"]["name"] for turn in record["turns"]} <= {"move", "guess"}


def test_cli_eval_action_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from agentgym.cli import main

    argv = ["eval", "--env", "Sokoban-v0", "--episodes", "1", "--action-format", "tools", "--no-progress"]
    assert main([*argv, "--out", str(tmp_path)]) == 0
    assert json.loads((tmp_path / "run.json").read_text())["action_format"] == "tools"
    assert "tools" in capsys.readouterr().out  # the summary table's format column


def test_reply_parsed_from_text() -> None:
    reply = Reply.parsed("Up.\n" + MOVE_UP, [{"type": "function", "function": {"name": "move"}}], prompt_tokens=3)
    assert reply.text == "Up." and reply.prompt_tokens == 3
    assert reply.action["tool_calls"][0]["function"]["name"] == "move"  # type: ignore[index]
    assert Reply.parsed(MOVE_UP, None).action == MOVE_UP  # no tools offered: text stays text


# ---- serve-model over HTTP, and an eval of a tiny model in tools format ---------------------------------------


@pytest.fixture(scope="module")
def model_server(tiny_tool_model_path: Path) -> Iterator[tuple[str, object]]:
    pytest.importorskip("fastapi")
    from asgi import serving_in_thread

    from agentgym.llm.generation import Generator
    from agentgym.llm.serve_model import create_app

    generator = Generator.from_pretrained(tiny_tool_model_path, device="cpu")
    with serving_in_thread(create_app(generator, "tiny-tools")) as url:
        yield url, generator


def test_serve_model_renders_tools_and_tool_messages(model_server: tuple[str, object]) -> None:
    import httpx

    url, generator = model_server
    tools = ChatWrapper(gym.make("Sokoban-v0"), action_format="tools").tools
    messages = [
        {"role": "user", "content": "Solve it."},
        {"role": "assistant", "content": None, "tool_calls": [call("move", {"direction": "up"})]},
        {"role": "tool", "tool_call_id": "call-1", "name": "move", "content": "You moved up."},
    ]
    body = {"model": "tiny-tools", "messages": messages, "tools": tools, "max_tokens": 4, "temperature": 0}
    response = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=60)
    assert response.status_code == 200, response.text
    expected = generator.tokenizer.apply_chat_template(  # type: ignore[attr-defined]
        template_messages(messages), tools=tools, add_generation_prompt=True, tokenize=False
    )
    assert '"arguments": {"direction": "up"}' in expected
    prompt_tokens = len(generator.tokenizer(expected, add_special_tokens=False).input_ids)  # type: ignore[attr-defined]
    reply = response.json()
    assert reply["usage"]["prompt_tokens"] == prompt_tokens
    (choice,) = reply["choices"]
    assert choice["message"]["role"] == "assistant"
    assert (choice["finish_reason"] == "tool_calls") == bool(choice["message"].get("tool_calls"))
    for tool_choice in ("required", {"type": "function", "function": {"name": "move"}}):
        refused = httpx.post(f"{url}/v1/chat/completions", json=body | {"tool_choice": tool_choice}, timeout=60)
        assert refused.status_code == 400 and refused.json()["error"]["param"] == "tool_choice"


def test_eval_of_a_tiny_model_in_tools_format_on_three_families(
    model_server: tuple[str, object], tmp_path: Path
) -> None:
    """Sokoban, Wordle and WebShop through serve-model with native tool calls: results written, nothing crashed."""
    url, _ = model_server
    policy = OpenAIPolicy("tiny-tools", f"{url}/v1", temperature=1.0, max_tokens=12)
    families = ("Sokoban-v0", "Wordle-v0", "WebShop-v0")
    items = [EvalItem(env, 1, max_turns=2) for env in families]

    async def main() -> None:
        try:
            await run_eval("openai:tiny-tools", policy, items, tmp_path, action_format="tools", concurrency=3)
        finally:
            await policy.aclose()

    asyncio.run(main())
    assert json.loads((tmp_path / "run.json").read_text())["action_format"] == "tools"
    records = [json.loads(line) for line in (tmp_path / "episodes.jsonl").read_text().splitlines()]
    assert sorted(record["env"] for record in records) == sorted(families)
    for record in records:
        assert record["status"] == "ok", record["error"]
        assert record["steps"] == 2 and record["tokens"]["completion"] > 0
        # The random model's replies are text or calls; either way the env answered them.
        for turn in record["turns"]:
            assert isinstance(turn["invalid_action"], bool)
    from agentgym.evaluation.leaderboard import collect, format_markdown

    rows = [line for line in format_markdown(collect([tmp_path])).splitlines() if "| tiny-tools |" in line]
    assert len(rows) >= 3 and all("| tools |" in row for row in rows)  # the leaderboard shows the format
