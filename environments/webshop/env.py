"""WebShop (Yao et al., 2022): find, configure and buy the product an instruction asks for.

Observation: the current page of the shop (see :mod:`.engine`), rendered by
``observation_mode``: ``"text"`` (default; the visible texts joined by `` [SEP] `` as the
original ``WebAgentTextEnv``), ``"text_rich"`` (one text per line, ``[button] ... [button_]``
around clickables) or ``"html"``. Every page shows the instruction. The first observation
also holds the action syntax; every later one starts with feedback on the last action.

Action: ``search[keywords]`` on the search page, ``click[text]`` for a clickable of the
page: a button (``back to search``, ``next >``, ``< prev``, ``description``, ``features``,
``reviews``, ``attributes``, ``buy now``), a product's ASIN on a results page, an option
value on a product page. Case and spacing do not matter. A trailing ``Action: ...`` line
is used when the reply has one; otherwise the last ``search[...]``/``click[...]`` in the
reply. Anything else, or a command the page does not offer, is an invalid action (reward
0, ``info["invalid_action"]``) whose feedback lists what the page offers.

``info["available_actions"]`` is a dict, as the original text env's
``get_available_actions()``: ``{"has_search_bar": bool, "clickables": [...]}`` (the
lowercased clickables; unlike the original, the search button itself is not listed, as
``click[search]`` does nothing: searching is ``search[...]``). ``available_actions()``
returns the same dict.

Reward: 0 until ``buy now``, which ends the episode with the original reward formula
(:mod:`.reward`, equal to the original ``get_reward`` on every input) at the price that
kwarg ``price`` picks: ``"low"`` (default), the single price or the low end of a price
range; ``"drawn"``, the original's charge, a seeded uniform draw in the range (see
docs/webshop.md for why ``"low"`` is the default). Title nouns are typed by kwarg
``noun_tagger`` (:func:`.reward.noun_tagger`): ``"auto"`` (default) uses spaCy's
``en_core_web_sm`` (or ``$WEBSHOP_SPACY_MODEL``) when installed, as the original, else a
rule-based tagger; ``"rules"``; a spaCy pipeline name or folder; or a ``NounTagger``.
``info["score"]`` is the reward, ``info["success"]`` is ``reward == 1``, and
``info["reward_breakdown"]`` holds ``r_type``, ``r_att``, ``r_option``, ``r_price``,
``query_match``, ``category_match``, ``title_score``, ``weights``, ``noun_tagger`` (the
tagger's name), ``price`` and ``price_mode``; ``info["purchase"]`` the ASIN, options and
price bought. Truncation comes from the registered step limit (15).

Tasks: one per goal of the catalog. Goals follow the original split convention (goal
index 0-499 test, 500-1499 dev, the rest train); task ids follow agentgym's (train ids
first, then dev, then test), so task ``t`` plays goal ``info["goal_index"]``: the train
tasks play goals 1500 onwards, the dev tasks goals 500-1499, the test tasks goals 0-499.
``splits`` is an instance attribute computed from the loaded catalog's goals.

Catalog (kwarg ``catalog``): ``None`` means ``$WEBSHOP_DATA`` if set (a folder of the
original files, loaded by ``catalog.load_catalog``), else the generated catalog of
``num_products`` products; a string is a source for ``load_catalog``; any object with the
:class:`~.data.Catalog` interface is used as it is. The catalog, its search index (cached
on disk under ``cache_dir``, ``$AGENTGYM_CACHE`` or ``~/.cache/agentgym``) and its goals are
loaded once per process and shared by every env copy; an env holds only its session.

``metadata["inline_safe"]`` is True: a step is pure Python and numpy on memory-mapped
files already in the page cache; a search takes about 0.5 ms at 20,000 products and a
few ms at 1,000,000, every other step tens of microseconds.

Oracle: searches the goal's query, attributes and option values (or, if that misses the
target, the target's title), pages to the target, opens it, selects the goal's options and
buys; from any state. Random baseline: a random clickable, or on the search page a
search for random words of the instruction.
"""

from __future__ import annotations

import os
import random
import re
from typing import Any, ClassVar

from agentgym.contract.core import InvalidAction, TaskSplits, TextEnv, parse_action
from agentgym.environments.webshop.data import Catalog
from agentgym.environments.webshop.engine import OBSERVATION_MODES, PRICE_MODES, Session, Shop, load_shop
from agentgym.environments.webshop.reward import NounTagger
from agentgym.environments.webshop.reward import noun_tagger as _noun_tagger

_LAST_COMMAND = re.compile(r"(?:search|click)\s*\[[^\]\n]*\]", re.IGNORECASE)

ACTION_SYNTAX = (
    "You are shopping on WebShop. Actions (one per reply, e.g. `Action: search[red running shoes]`):\n"
    "- search[keywords]: search the catalog (only on the search page, which has the search bar);\n"
    "- click[text]: click a button, a product (by its ASIN) or an option value shown on the page, "
    "e.g. click[next >], click[b0a1b2c3d4], click[large], click[buy now].\n"
    "The episode ends when you click Buy Now; your score is how well the purchase matches the instruction."
)


class WebShopEnv(TextEnv):
    """WebShop on a generated or original catalog (see the module docstring)."""

    metadata: ClassVar[dict[str, Any]] = {**TextEnv.metadata, "inline_safe": True}

    def __init__(
        self,
        catalog: Catalog | str | os.PathLike[str] | None = None,
        num_products: int | None = None,
        observation_mode: str = "text",
        cache_dir: str | os.PathLike[str] | None = None,
        show_attributes: bool = True,
        render_mode: str | None = None,
        price: str = "low",
        noun_tagger: str | os.PathLike[str] | NounTagger | None = "auto",
    ) -> None:
        if observation_mode not in OBSERVATION_MODES:
            raise ValueError(f"observation_mode must be one of {OBSERVATION_MODES}, got {observation_mode!r}")
        if price not in PRICE_MODES:
            raise ValueError(f"price must be one of {PRICE_MODES}, got {price!r}")
        super().__init__(render_mode)
        self.observation_mode = observation_mode
        self.show_attributes = show_attributes
        self.price = price
        self.tagger: NounTagger = _noun_tagger(noun_tagger)
        self.shop: Shop = load_shop(catalog, num_products, cache_dir)
        self.splits: TaskSplits = self.shop.splits  # type: ignore[misc]  (per catalog, not per class)
        self.session: Session | None = None
        self.goal_index = 0

    @property
    def action_syntax(self) -> str:
        return ACTION_SYNTAX

    def _generate(self, task_id: int) -> str:
        self.goal_index = self.shop.goal_index(task_id)
        goal = self.shop.goals[self.goal_index]
        self.session = Session(
            self.shop, goal, show_attributes=self.show_attributes, price=self.price, tagger=self.tagger
        )
        return goal.instruction_text

    def _current(self) -> Session:
        if self.session is None:
            raise RuntimeError("call reset() first")
        return self.session

    def _describe(self) -> str:
        return self._current().render(self.observation_mode)

    def extract_action(self, reply: str) -> str:
        command = parse_action(reply)
        if command.lower().startswith(("search", "click")):
            return command
        found = _LAST_COMMAND.findall(command)
        return found[-1] if found else command

    def _execute(self, command: str) -> str:
        session = self._current()
        if session.done:
            raise InvalidAction("the purchase is done")
        feedback = session.act(command)
        if session.purchase is not None:
            self.score = session.purchase.reward
            self.success = session.purchase.reward == 1.0
            self.terminated = True
        return feedback

    def available_actions(self) -> dict[str, Any]:  # type: ignore[override]
        """``{"has_search_bar": bool, "clickables": [...]}`` (a dict, as the original)."""
        return self._current().available_actions()

    def oracle_action(self) -> str:
        return self._current().oracle_action()

    def random_action(self, rng: random.Random) -> str:
        return self._current().random_action(rng)

    def _info(self, command: str, invalid: bool) -> dict[str, Any]:
        info = super()._info(command, invalid)
        session = self._current()
        info["goal_index"] = self.goal_index
        info["page"] = session.page
        if session.purchase is not None:
            purchase = session.purchase
            info["reward_breakdown"] = purchase.breakdown
            info["purchase"] = {"asin": purchase.asin, "options": purchase.options, "price": purchase.price}
        return info

    def close(self) -> None:
        """Drop this env's session; the shared catalog and index stay for other copies."""
        self.session = None
        super().close()
