"""Web apps: WebArena-style tasks on real self-hosted web applications (shop, forum, wiki, forge, mail).

See docs/webapps.md. The sites and template modules are listed in ``sites.yaml``; each id below
takes the templates of its sites (``WebApps-v0``: every template, the cross-site ones included).
"""

from agentgym.core import TaskSplits
from agentgym.registry import register, register_command

SPLITS = TaskSplits(train=10_000, dev=2_000, test=2_000)

_ENTRY = "agentgym.environments.webapps.env:WebAppEnv"
_SITES = {
    "Shop": ("shop", "the shop and its admin dashboard (django-oscar)"),
    "Forum": ("forum", "the forum (Misago)"),
    "Wiki": ("wiki", "the wiki (MediaWiki)"),
    "Forge": ("forge", "the code forge and issue tracker (Trac with git)"),
    "Mail": ("mail", "webmail (Roundcube over Dovecot and Postfix)"),
}

for _name, (_site, _what) in _SITES.items():
    register(
        f"WebApps-{_name}-v0",
        entry_point=_ENTRY,
        family="webapps",
        description=f"WebArena-style tasks on {_what}, self-hosted, in headless Chromium",
        splits=SPLITS,
        max_episode_steps=30,
        kwargs={"sites": [_site]},
    )
register(
    "WebApps-v0",
    entry_point=_ENTRY,
    family="webapps",
    description="WebArena-style tasks on five self-hosted web apps (shop, forum, wiki, forge, mail), cross-site too",
    splits=SPLITS,
    max_episode_steps=30,
)
register_command(
    "webapps",
    "agentgym.environments.webapps.cli:main",
    help="bring the self-hosted web apps up, show their status, reset a tenant, stop them",
)
