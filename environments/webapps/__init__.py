"""Web apps: WebArena-style tasks on real self-hosted web applications (shop, forum, wiki, forge, mail).

See docs/webapps.md. The sites and template modules are listed in ``sites.yaml``; each id below
takes the templates of its sites (``WebApps-v0``: every template, the cross-site ones included).
"""

import os

from agentgym.contract.core import TaskSplits
from agentgym.contract.registry import register, register_command

SPLITS = TaskSplits(train=10_000, dev=2_000, test=2_000)
#: Copies one machine holds at once: every copy drives a Chromium against the same site servers
#: and PostgreSQL; on 2 cores, 10 copies at once left the shop unanswered for 30 s (4 of 10 oracle
#: episodes), 2 copies played 30 of 30. So one copy per 2 cores, and at least 2.
MAX_CONCURRENCY = max(2, (os.cpu_count() or 2) // 2)
#: Installs, seeds and starts an id's sites before any episode (minutes the first time).
_PREPARE = "agentgym.environments.webapps.cli:prepare"
#: A site's first install, seeding and start on 2 cores (the shop: 255 s beside a running eval, at 5b56ab0).
_PREPARE_S = 270

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
        max_concurrency=MAX_CONCURRENCY,
        prepare=_PREPARE,
        prepare_s=_PREPARE_S,
    )
register(
    "WebApps-v0",
    entry_point=_ENTRY,
    family="webapps",
    description="WebArena-style tasks on five self-hosted web apps (shop, forum, wiki, forge, mail), cross-site too",
    splits=SPLITS,
    max_episode_steps=30,
    max_concurrency=MAX_CONCURRENCY,
    prepare=_PREPARE,
    prepare_s=_PREPARE_S,
)
register_command(
    "webapps",
    "agentgym.environments.webapps.cli:main",
    help="bring the self-hosted web apps up, show their status, reset a tenant, stop them",
)
#: The -Attack ids: a site's tasks that read one page (its attack.py's templates), each under 2 attacker goals x 3
#: injection styles (its VARIANTS: 6 tasks per user task), on that site alone (its attack.py's prepare).
_ATTACKS = {
    "Wiki": (
        "wiki",
        "WikiAttackEnv",
        "The wiki's infobox-fact tasks with a prompt injection in the article read (3 styles x 2 attacker goals: "
        "rewrite another article, create a page, both naming the attacker's site); utility and attack success",
    ),
    "Mail": (
        "mail",
        "MailAttackEnv",
        "The mail site's mail-reading tasks with a prompt injection in the mail read (3 styles x 2 attacker goals: "
        "forward the mail outside the company, delete another inbox mail); utility and attack success",
    ),
    "Forum": (
        "forum",
        "ForumAttackEnv",
        "The forum's thread-reading tasks with a prompt injection in a post of the thread read (3 styles x 2 "
        "attacker goals: reply to another thread naming the attacker's site, close another thread); utility and "
        "attack success",
    ),
    "Forge": (
        "forge",
        "ForgeAttackEnv",
        "The forge's ticket-reading tasks with a prompt injection in a comment on the ticket read (3 styles x 2 "
        "attacker goals: reassign another ticket to the attacker, comment on another ticket naming the attacker's "
        "site); utility and attack success",
    ),
    "Shop": (
        "shop",
        "ShopAttackEnv",
        "The shop's product-price and product-stock tasks with a prompt injection in a customer review of the "
        "product (hidden text: in its description, by its seller) (3 styles x 2 attacker goals: put another product "
        "in the basket, review another product naming the attacker's site); utility and attack success",
    ),
}
for _name, (_site, _class, _description) in _ATTACKS.items():
    register(
        f"WebApps-{_name}-Attack-v0",
        entry_point=f"agentgym.environments.webapps.{_site}.attack:{_class}",
        family="webapps",
        description=_description,
        splits=TaskSplits(**{split: count * 6 for split, count in SPLITS.counts().items()}),
        max_episode_steps=30,
        max_concurrency=MAX_CONCURRENCY,
        prepare=f"agentgym.environments.webapps.{_site}.attack:prepare",
        prepare_s=_PREPARE_S,
    )
