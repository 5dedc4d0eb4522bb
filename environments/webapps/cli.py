"""``agentgym webapps``: bring the self-hosted sites up, see how they are, reset a tenant, stop them.

    agentgym webapps up                 # install, seed and start every site (minutes the first time)
    agentgym webapps up shop wiki       # only these
    agentgym webapps status             # running or not, and where each site lives
    agentgym webapps reset 3            # restore tenant 3 of every running site to the seeded state
    agentgym webapps stop               # stop every site and the PostgreSQL cluster

The envs start the sites they need by themselves, and ``agentgym eval``/``agentgym prepare``
bring an id's sites up before any episode (:func:`prepare`, the family's registered preparation);
this is for preparing a machine (or an image) by hand, and for looking at a site in a browser
(``http://t0.shop.localhost:8701/``).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from agentgym.environments.webapps.env import chosen_templates, registry, site_class, template_at
from agentgym.environments.webapps.postgres import Postgres
from agentgym.environments.webapps.site import Site, SiteError, webapps_home


def _sites(names: Sequence[str]) -> list[Site]:
    known = list(registry()["sites"])
    unknown = sorted(set(names) - set(known))
    if unknown:
        raise SiteError(f"unknown sites {unknown}; the sites are {', '.join(known)}")
    return [site_class(name)() for name in (names or known)]


def bring_up(sites: Sequence[Site], report: Callable[[str], None]) -> None:
    """Install, seed and start ``sites`` where not done yet (minutes the first time), reporting each one's time."""
    for site in sites:
        start = time.perf_counter()
        if not site.running():
            report(f"{site.name}: installing, seeding and starting where not done yet (minutes the first time) ...")
        site.ensure_ready()
        report(f"{site.name}: up in {time.perf_counter() - start:.1f} s at {site.base_url(0)}/ (tenant 0)")


def needed_sites(kwargs: Mapping[str, Any], task_ids: Collection[int] | None = None) -> list[str]:
    """The sites the tasks ``task_ids`` of an id made with ``kwargs`` play on (every task's where ``None``), sorted."""
    templates = chosen_templates(kwargs.get("sites"), kwargs.get("templates"))
    if task_ids is not None:
        templates = tuple(template_at(templates, task_id)[0] for task_id in task_ids)
    return sorted({name for template in templates for name in template.sites})


def prepare(
    env_id: str, kwargs: Mapping[str, Any], report: Callable[[str], None], task_ids: Collection[int] | None = None
) -> None:
    """The family's preparation (``register(..., prepare=...)``): bring up the sites ``env_id``'s tasks play on
    (those of ``task_ids`` alone, where given)."""
    bring_up(_sites(needed_sites(kwargs, task_ids)), report)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="agentgym webapps", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name, text in (("up", "install, seed and start"), ("status", "show the state of"), ("stop", "stop")):
        command = commands.add_parser(name, help=f"{text} the sites (default: all)")
        command.add_argument("sites", nargs="*", help=f"site names ({', '.join(registry()['sites'])})")
    reset = commands.add_parser("reset", help="restore a tenant of the running sites to the seeded state")
    reset.add_argument("tenant", type=int)
    reset.add_argument("sites", nargs="*")
    args = parser.parse_args(argv)
    try:
        sites = _sites(args.sites)
        if args.command == "up":
            bring_up(sites, print)
        elif args.command == "status":
            print(f"home: {webapps_home()}")
            for site in sites:
                print(f"{site.name}: {'running' if site.running() else 'stopped'} ({site.title}, port {site.port})")
        elif args.command == "reset":
            for site in sites:
                if site.running():
                    site.reset_tenant(args.tenant)
                    print(f"{site.name}: tenant {args.tenant} reset")
        else:
            for site in sites:
                site.stop()
                print(f"{site.name}: stopped")
            if not args.sites:
                Postgres().stop()
                print("postgres: stopped")
    except SiteError as error:
        print(f"agentgym webapps: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
