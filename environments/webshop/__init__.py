"""WebShop: shop for what an instruction asks on a generated (or the original) catalog."""

from agentgym.contract.core import TaskSplits
from agentgym.contract.registry import register, register_command

#: The goal splits of the default catalog (20,000 generated products, 12,087 goals as the
#: original's human instructions), by the original convention: test = the first 500
#: goals, dev = the next 1,000, train = the rest.
SPLITS = TaskSplits(train=10_587, dev=1_000, test=500)
#: Loads the catalog and builds its search index into the cache before any episode (~10 s for the default).
_PREPARE = "agentgym.environments.webshop.engine:prepare"
#: WebShop-Attack-v0's variants per goal: 2 attacker goals x 3 injection styles (attack.py's VARIANTS).
ATTACK_VARIANTS = 6

register(
    "WebShop-v0",
    entry_point="agentgym.environments.webshop.env:WebShopEnv",
    family="webshop",
    description="WebShop: search, pick options and buy; BM25 search, the original reward; generated catalog",
    splits=SPLITS,
    max_episode_steps=15,
    prepare=_PREPARE,
)

register(
    "WebShop-Browser-v0",
    entry_point="agentgym.environments.webshop.browser:WebShopBrowserEnv",
    family="webshop",
    description="WebShop's website in headless Chromium: WebShop-v0's goals and reward, browser commands",
    splits=SPLITS,
    max_episode_steps=30,
    prepare=_PREPARE,
)

register(
    "WebShop-Attack-v0",
    entry_point="agentgym.environments.webshop.attack:WebShopAttackEnv",
    family="webshop",
    description=(
        "WebShop-v0's goals with a prompt injection in a sponsored listing (3 styles x 2 attacker goals per goal: "
        "buy the seller's item, send the request to its site); utility and attack success"
    ),
    splits=TaskSplits(**{split: count * ATTACK_VARIANTS for split, count in SPLITS.counts().items()}),
    max_episode_steps=20,
    prepare=_PREPARE,
)

register_command(
    "webshop-site",
    "agentgym.environments.webshop.website:main",
    help="serve WebShop as a website (search, results, item pages, Buy Now) for people and browser agents",
)
