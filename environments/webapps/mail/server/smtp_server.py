"""A small SMTP server that delivers agentgym's mail site's mail into its tenants' Maildirs.

Standard library only (it runs under the system Python as the mail site's service user).
Roundcube submits with SMTP AUTH as ``<user>@<tenant>``; the tenant names where a message
goes: to an account's address (``--addresses``: lines ``address login``), through Dovecot's
LDA (``dovecot-lda -d <login>@<tenant>``, which runs the account's Sieve filters) into its
Maildir; to anyone else, into ``<tenants>/<tenant>/outbox/`` (the world outside, kept so that
checkers can see what was sent, with the envelope as headers on top).

It stands in for Postfix, which needs root to run; see docs/webapps.md ("Mail").

Usage: smtp_server.py --port 8712 --tenants DIR --users FILE --addresses FILE --dovecot-config FILE
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import binascii
import itertools
import os
import re
import socket
import time
from pathlib import Path

_ADDRESS = re.compile(r"<\s*([^<>\s]*)\s*>")
_TENANT = re.compile(r"^(t\d+|golden)$")
_counter = itertools.count()
LDA = "/usr/lib/dovecot/dovecot-lda"


def read_users(path: Path) -> dict[str, str]:
    """``name -> password`` from a Dovecot passwd-file whose passwords are ``{PLAIN}``."""
    users = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, password = line.split(":")[:2]
            users[name] = password.removeprefix("{PLAIN}")
    return users


def unique_name() -> str:
    """A Maildir file name: ``<seconds>.M<micro>P<pid>Q<n>.<host>``."""
    now = time.time()
    return f"{int(now)}.M{int(now % 1 * 1e6)}P{os.getpid()}Q{next(_counter)}.{socket.gethostname()}"


def write_atomically(folder: Path, name: str, data: bytes) -> None:
    """Write ``data`` as ``folder/name`` by way of ``tmp/`` beside it (as Maildir delivery does)."""
    tmp = folder.parent / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    folder.mkdir(parents=True, exist_ok=True)
    partial = tmp / name
    partial.write_bytes(data)
    partial.replace(folder / name)


class Delivery:
    """Where one tenant's mail goes (see the module docstring)."""

    def __init__(self, tenants: Path, addresses: dict[str, str], users: dict[str, str], dovecot_config: Path) -> None:
        self.tenants, self.addresses, self.users = tenants, addresses, users
        self.dovecot_config = dovecot_config

    async def deliver(self, tenant: str, sender: str, recipients: list[str], message: bytes) -> str | None:
        """Deliver to every recipient; an error message when Dovecot's LDA refused one."""
        body = message.replace(b"\r\n", b"\n")
        for recipient in recipients:
            login = self.addresses.get(recipient.lower())
            if login is not None:
                process = await asyncio.create_subprocess_exec(
                    LDA,
                    "-c",
                    str(self.dovecot_config),
                    "-d",
                    f"{login}@{tenant}",
                    "-f",
                    sender,
                    "-a",
                    recipient,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.STDOUT,
                )
                output, _ = await process.communicate(body)
                if process.returncode != 0:
                    return f"delivery to {recipient} failed: {output.decode(errors='replace').strip()[-300:]}"
            else:
                head = f"X-Envelope-From: <{sender}>\nX-Envelope-To: <{recipient}>\n".encode()
                outbox = self.tenants / tenant / "outbox"
                write_atomically(outbox / "new", unique_name(), head + body)
        return None


class Session:
    """One SMTP conversation (RFC 5321 subset: EHLO/HELO, AUTH PLAIN/LOGIN, MAIL, RCPT, DATA, RSET, NOOP, QUIT)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delivery: Delivery) -> None:
        self.reader, self.writer, self.delivery = reader, writer, delivery
        self.tenant: str | None = None
        self.sender: str | None = None
        self.recipients: list[str] = []

    async def reply(self, line: str) -> None:
        self.writer.write(line.encode() + b"\r\n")
        await self.writer.drain()

    async def read_line(self) -> str:
        line = await self.reader.readline()
        if not line:
            raise ConnectionResetError
        return line.decode("utf-8", "replace").rstrip("\r\n")

    def login(self, user: str, password: str) -> bool:
        name, _, tenant = user.partition("@")
        if _TENANT.match(tenant) and self.delivery.users.get(name) == password:
            self.tenant = tenant
            return True
        return False

    async def auth(self, argument: str) -> None:
        mechanism, _, initial = argument.partition(" ")
        try:
            if mechanism.upper() == "PLAIN":
                if not initial:
                    await self.reply("334 ")
                    initial = await self.read_line()
                _, user, password = base64.b64decode(initial).decode().split("\0")
            elif mechanism.upper() == "LOGIN":
                if initial:
                    user = base64.b64decode(initial).decode()
                else:
                    await self.reply("334 VXNlcm5hbWU6")
                    user = base64.b64decode(await self.read_line()).decode()
                await self.reply("334 UGFzc3dvcmQ6")
                password = base64.b64decode(await self.read_line()).decode()
            else:
                await self.reply("504 5.5.4 Unrecognized authentication type")
                return
        except (ValueError, binascii.Error, UnicodeDecodeError):
            await self.reply("501 5.5.2 Cannot decode the authentication data")
            return
        if self.login(user, password):
            await self.reply("235 2.7.0 Authentication successful")
        else:
            await self.reply("535 5.7.8 Authentication credentials invalid")

    async def data(self) -> None:
        await self.reply("354 End data with <CR><LF>.<CR><LF>")
        lines = []
        while True:
            line = await self.reader.readline()
            if not line:
                raise ConnectionResetError
            if line in (b".\r\n", b".\n"):
                break
            lines.append(line[1:] if line.startswith(b"..") else line)
        assert self.tenant is not None and self.sender is not None
        error = await self.delivery.deliver(self.tenant, self.sender, self.recipients, b"".join(lines))
        self.sender, self.recipients = None, []
        await self.reply("451 4.3.0 " + " ".join(error.split()) if error else "250 2.0.0 Ok: delivered")

    async def serve(self) -> None:
        await self.reply("220 agentgym-mail ESMTP")
        while True:
            line = await self.read_line()
            verb, _, argument = line.partition(" ")
            verb = verb.upper()
            if verb in ("EHLO", "HELO"):
                if verb == "EHLO":
                    await self.reply("250-agentgym-mail\r\n250-AUTH PLAIN LOGIN\r\n250-8BITMIME\r\n250 SIZE 52428800")
                else:
                    await self.reply("250 agentgym-mail")
            elif verb == "AUTH":
                await self.auth(argument)
            elif verb == "MAIL":
                if self.tenant is None:
                    await self.reply("530 5.7.0 Authentication required")
                    continue
                found = _ADDRESS.search(argument)
                self.sender, self.recipients = (found.group(1) if found else ""), []
                await self.reply("250 2.1.0 Ok")
            elif verb == "RCPT":
                found = _ADDRESS.search(argument)
                if self.sender is None or not found or "@" not in found.group(1):
                    await self.reply("503 5.5.1 Bad sequence or address")
                    continue
                self.recipients.append(found.group(1))
                await self.reply("250 2.1.5 Ok")
            elif verb == "DATA":
                if not self.recipients:
                    await self.reply("503 5.5.1 No valid recipients")
                    continue
                await self.data()
            elif verb == "RSET":
                self.sender, self.recipients = None, []
                await self.reply("250 2.0.0 Ok")
            elif verb == "NOOP":
                await self.reply("250 2.0.0 Ok")
            elif verb == "QUIT":
                await self.reply("221 2.0.0 Bye")
                return
            else:
                await self.reply("502 5.5.2 Command not recognized")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tenants", type=Path, required=True)
    parser.add_argument("--users", type=Path, required=True)
    parser.add_argument("--addresses", type=Path, required=True)
    parser.add_argument("--dovecot-config", type=Path, required=True)
    args = parser.parse_args()
    addresses = dict(line.lower().split()[:2] for line in args.addresses.read_text().splitlines() if line.strip())
    delivery = Delivery(args.tenants, addresses, read_users(args.users), args.dovecot_config)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await Session(reader, writer, delivery).serve()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", args.port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
