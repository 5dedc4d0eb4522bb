"""Web environments in a real browser: the shared Chromium layer, WebShop-Browser and live sites."""

from agentgym.environments.webshop import SPLITS as WEBSHOP_SPLITS
from agentgym.registry import register

register(
    "WebShop-Browser-v0",
    entry_point="agentgym.environments.web.webshop:WebShopBrowserEnv",
    family="web",
    description="WebShop's website in headless Chromium: WebShop-v0's goals and reward, browser commands",
    splits=WEBSHOP_SPLITS,
    max_episode_steps=30,
)
