"""Opening RemoteEnvs on one local server: the shared TLS context against one made per client, in one run.

httpx makes a TLS context for every client, reading the CA bundle (tens of ms of CPU), even for plain HTTP on
loopback. ``RemoteEnv`` passes the process's shared one (``agentgym.serving.client.tls_context``). This opens,
resets and closes N envs each way against the same ``FrozenLake-v0`` server, alternating rounds, and reports the
CPU time of this process per env and the ratio (shared / per client).

    python benchmarks/remote_env_open.py            # writes results/remote_env_open.{md,json}
    python benchmarks/remote_env_open.py --no-write
"""

from __future__ import annotations

import argparse
import json
import ssl
import time
from pathlib import Path
from unittest import mock

from agentgym.serving import client
from agentgym.serving.backends.process import ServerProcess
from agentgym.serving.client import RemoteEnv

RESULTS = Path(__file__).with_name("results")
SHARED_CONTEXT = client.tls_context


def per_client_context() -> ssl.SSLContext:
    """What httpx does by itself: a new context for every client."""
    client._tls_context.cache_clear()
    return SHARED_CONTEXT()


def cpu_per_env(url: str, count: int) -> float:
    """CPU seconds of this process per env opened, reset once and closed."""
    start = time.process_time()
    for _ in range(count):
        with RemoteEnv(url, "FrozenLake-v0") as env:
            env.reset(seed=0)
    return (time.process_time() - start) / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=100, help="envs per round and way")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-write", action="store_true", help="print only; do not update results/")
    args = parser.parse_args()
    server = ServerProcess(["FrozenLake-v0"])
    shared, separate = [], []
    try:
        for _ in range(args.rounds):
            shared.append(cpu_per_env(server.url, args.envs))
            with mock.patch.object(client, "tls_context", per_client_context):
                separate.append(cpu_per_env(server.url, args.envs))
    finally:
        server.stop()
    result = {
        "envs_per_round": args.envs,
        "rounds": args.rounds,
        "shared_ms_per_env": round(1000 * min(shared), 2),
        "per_client_ms_per_env": round(1000 * min(separate), 2),
        "ratio_shared_to_per_client": round(min(shared) / min(separate), 3),
    }
    print(json.dumps(result, indent=2))
    if not args.no_write:
        (RESULTS / "remote_env_open.json").write_text(json.dumps(result, indent=2) + "\n")
        (RESULTS / "remote_env_open.md").write_text(
            "# Opening RemoteEnvs: a shared TLS context against one per client\n\n"
            f"CPU of the client process per env (opened, reset once, closed; best of {args.rounds} rounds of "
            f"{args.envs}), one local FrozenLake-v0 server, 2-core machine:\n\n"
            "| TLS context | ms per env |\n|---|---:|\n"
            f"| one per client (httpx's default) | {result['per_client_ms_per_env']} |\n"
            f"| shared (`tls_context()`) | {result['shared_ms_per_env']} |\n\n"
            f"Ratio shared / per client: **{result['ratio_shared_to_per_client']}**.\n"
        )


if __name__ == "__main__":
    main()
