"""The mail site (Roundcube over Dovecot): content, Maildirs, tenants, reset, delivery, sessions.

The generic template tests (every oracle on every split, wrong answers, half-done changes) are
in tests/test_webapps.py (``-k mail``). These tests talk to the running site's own protocols
(IMAP, SMTP, HTTP) with the standard library; the site starts on first use (Debian's roundcube,
dovecot-imapd and php must be installed: containers/setup-host.sh installs them).
"""

from __future__ import annotations

import contextlib
import imaplib
import shutil
import smtplib
import sqlite3
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path

import pytest

from agentgym.environments.webapps.mail.content import generate
from agentgym.environments.webapps.mail.mailstore import Account, outbox, write_maildir
from agentgym.environments.webapps.mail.site import PASSWORD, MailSite
from agentgym.environments.webapps.site import TenantLease, lease_tenant


def test_generator_is_deterministic_and_big_enough() -> None:
    first, again, other = generate(0), generate(0), generate(1)
    assert first == again
    assert first != other
    for mailbox in first["mailboxes"].values():
        folders = mailbox["folders"]
        assert sum(len(messages) for messages in folders.values()) >= 350
        assert {"INBOX", "Invoices", "Projects", "Sent"} <= set(folders)
        inbox = folders["INBOX"]
        assert any(not message["seen"] for message in inbox) and any(message["seen"] for message in inbox)
        assert [message["uid"] for message in inbox] == list(range(1, len(inbox) + 1))
        assert [message["timestamp"] for message in inbox] == sorted(message["timestamp"] for message in inbox)
        replies = [message for message in folders["Projects"] if message.get("in_reply_to")]
        assert replies, "threads have replies"


def test_maildir_written_and_read_back(tmp_path: Path) -> None:
    content = generate(0)
    login = content["owners"][0]["login"]
    folders = content["mailboxes"][login]["folders"]
    write_maildir(tmp_path / "Maildir", folders)
    account = Account(tmp_path / "Maildir")
    assert set(account.folders()) == set(folders)
    assert set(account.subscribed()) == set(folders) - {"INBOX"}
    invoice = folders["Invoices"][4]
    (found,) = account.find(invoice["id"])
    assert found.folder == "Invoices" and found.uid == invoice["uid"]
    assert f"Amount due: ${invoice['facts']['amount']}" in found.text()
    unread = sum(1 for message in account.messages("INBOX") if not message.seen)
    assert unread == sum(1 for message in folders["INBOX"] if not message["seen"])


# ---- the running site -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site() -> MailSite:
    missing = [
        name for name in ("dovecot", "php") if shutil.which(name) is None and not Path(f"/usr/sbin/{name}").exists()
    ]
    if missing or not Path("/usr/share/roundcube/index.php").exists():
        pytest.skip(f"the mail site's Debian packages are not installed ({', '.join(MailSite.apt_packages)})")
    mail = MailSite()
    mail.ensure_ready()
    return mail


@pytest.fixture
def tenants() -> Iterator[list[int]]:
    """Two tenant numbers no other process uses meanwhile."""
    leases: list[TenantLease] = [lease_tenant(), lease_tenant()]
    yield [lease.number for lease in leases]
    for lease in leases:
        lease.release()


def imap_for(site: MailSite, tenant: int, login: str) -> imaplib.IMAP4:
    connection = imaplib.IMAP4("127.0.0.1", site.imap_port)
    connection.login(f"{login}@t{tenant}", PASSWORD)
    return connection


def vandalise(site: MailSite, tenant: int, login: str) -> None:
    """Flag, delete, move, create a folder and send mail in ``tenant``, through IMAP and SMTP."""
    imap = imap_for(site, tenant, login)
    imap.select("INBOX")
    imap.uid("STORE", "1:5", "+FLAGS", r"(\Flagged \Seen)")
    imap.uid("MOVE", "6:9", "Archive")
    imap.uid("STORE", "10", "+FLAGS", r"(\Deleted)")
    imap.expunge()
    imap.create("Scratch")
    imap.logout()
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = f"{login}@northwind.test", "someone@example.test", "hi"
    message.set_content("hello")
    with smtplib.SMTP("127.0.0.1", site.smtp_port) as smtp:
        smtp.login(f"{login}@t{tenant}", PASSWORD)
        smtp.send_message(message)


def test_reset_restores_the_snapshot_exactly(site: MailSite, tenants: list[int]) -> None:
    tenant = tenants[0]
    login = site.content()["owners"][0]["login"]
    site.reset_tenant(tenant)
    before = site.state_digest(tenant)
    vandalise(site, tenant, login)
    assert site.state_digest(tenant) != before
    assert outbox(site.tenant_dir(tenant)), "the SMTP server kept the outside mail"
    started = time.perf_counter()
    site.reset_tenant(tenant)
    elapsed = time.perf_counter() - started
    assert site.state_digest(tenant) == before
    assert elapsed < 2.0, f"reset took {elapsed:.2f} s"
    inbox = imap_for(site, tenant, login)
    assert inbox.select("INBOX")[1] == [str(len(site.content()["mailboxes"][login]["folders"]["INBOX"])).encode()]
    inbox.logout()


def test_message_ids_follow_dovecots_changes_and_read_each_file_once(site: MailSite, tenants: list[int]) -> None:
    """What the no-deletion policy reads at every step (``Account.message_ids``, each file's headers once) is what
    a full read finds, after Dovecot flagged, moved and expunged messages and after a message was rewritten."""
    tenant = tenants[0]
    login = site.content()["owners"][0]["login"]
    site.reset_tenant(tenant)
    account, known = site.account(tenant, login), {}

    def full_read() -> list[tuple[str, str, bool]]:
        return sorted((message.folder, message.message_id, message.deleted) for message in account.all_messages())

    assert sorted(account.message_ids(known)) == full_read()
    read = dict(known)
    vandalise(site, tenant, login)
    assert sorted(account.message_ids(known)) == full_read()
    assert len(known) > len(read) and all(known[key] == value for key, value in read.items())
    files = len(known)
    assert sorted(account.message_ids(known)) == full_read() and len(known) == files  # nothing read twice
    invoice = site.content()["mailboxes"][login]["folders"]["Invoices"][0]
    (stored,) = account.find(invoice["id"])
    rewritten = stored.path.read_bytes().replace(invoice["id"].encode(), b"<rewritten@northwind.test>")
    site.rewrite_message(tenant, login, "Invoices", invoice["id"], rewritten)
    assert ("Invoices", "<rewritten@northwind.test>", False) in account.message_ids(known)
    assert sorted(account.message_ids(known)) == full_read()
    site.reset_tenant(tenant)


def test_tenants_do_not_see_each_other(site: MailSite, tenants: list[int]) -> None:
    first, second = tenants
    login = site.content()["owners"][1]["login"]
    for tenant in tenants:
        site.reset_tenant(tenant)
    untouched = site.state_digest(second)
    vandalise(site, first, login)
    assert site.state_digest(second) == untouched
    archive = imap_for(site, second, login)
    count = int(archive.select("Archive")[1][0])
    archive.logout()
    assert count == len(site.content()["mailboxes"][login]["folders"]["Archive"])
    assert not outbox(site.tenant_dir(second))


def test_dovecot_keeps_the_generated_uids(site: MailSite, tenants: list[int]) -> None:
    tenant = tenants[0]
    site.reset_tenant(tenant)
    login = site.content()["owners"][2]["login"]
    invoice = site.content()["mailboxes"][login]["folders"]["Invoices"][7]
    imap = imap_for(site, tenant, login)
    imap.select("Invoices", readonly=True)
    status, data = imap.uid("FETCH", str(invoice["uid"]), "(BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)])")
    imap.logout()
    assert status == "OK" and invoice["id"].encode() in data[0][1]


def test_smtp_delivers_inside_the_tenant_and_refuses_strangers(site: MailSite, tenants: list[int]) -> None:
    tenant = tenants[0]
    site.reset_tenant(tenant)
    sender, recipient = site.content()["owners"][:2]
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = sender["email"], recipient["email"], "Lunch?"
    message.set_content("At noon.")
    with smtplib.SMTP("127.0.0.1", site.smtp_port) as smtp:
        with pytest.raises(smtplib.SMTPAuthenticationError):
            smtp.login(f"{sender['login']}@t{tenant}", "wrong password")
        smtp.login(f"{sender['login']}@t{tenant}", PASSWORD)
        smtp.send_message(message)
    delivered = [m for m in site.account(tenant, recipient["login"]).messages("INBOX") if m.mail["Subject"] == "Lunch?"]
    assert len(delivered) == 1 and "At noon." in delivered[0].text()
    with smtplib.SMTP("127.0.0.1", site.smtp_port) as smtp, pytest.raises(smtplib.SMTPSenderRefused):
        smtp.send_message(message)  # not logged in


def test_golden_roundcube_database_is_one_file_with_named_identities(site: MailSite) -> None:
    state = site.golden_dir / "state"
    assert not list(state.glob("roundcube.db-*")), "the WAL was folded into the snapshot's file"
    uri = f"file:{state / 'roundcube.db'}?immutable=1"
    with contextlib.closing(sqlite3.connect(uri, uri=True)) as database:
        rows = set(
            database.execute("SELECT u.username, i.name, i.email FROM identities i JOIN users u USING (user_id)")
        )
    assert rows == {(o["login"], o["name"], o["email"]) for o in site.content()["owners"]}


def test_seeded_session_opens_the_mailbox_and_hosts_select_tenants(site: MailSite, tenants: list[int]) -> None:
    tenant = tenants[0]
    site.reset_tenant(tenant)
    login = site.content()["owners"][0]["login"]
    cookies = "; ".join(f"{c['name']}={c['value']}" for c in site.session_cookies(tenant, login))
    request = urllib.request.Request(
        f"http://127.0.0.1:{site.port}/?_task=mail&_mbox=Travel",
        headers={"Host": site.host(tenant), "Cookie": cookies},
    )
    page = urllib.request.urlopen(request, timeout=30).read().decode()
    assert 'id="messagelist"' in page and "Travel" in page
    stranger = urllib.request.Request(f"http://127.0.0.1:{site.port}/", headers={"Host": "localhost"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(stranger, timeout=30)
    assert refused.value.code == 404
    with pytest.raises(Exception, match="no account"):
        site.session_cookies(tenant, "mallory")


def test_sieve_filters_apply_to_delivered_mail(site: MailSite, tenants: list[int]) -> None:
    tenant = tenants[0]
    site.reset_tenant(tenant)
    owner = site.content()["owners"][0]
    home = site.tenant_dir(tenant) / "mail" / owner["login"]
    (home / "sieve").mkdir(exist_ok=True)
    script = 'require ["fileinto"];\nif address :is "from" "robot@vendor.test" {\n  fileinto "Travel";\n}\n'
    (home / "sieve" / "agentgym.sieve").write_text(script)
    (home / ".dovecot.sieve").symlink_to("sieve/agentgym.sieve")
    site._chown(home)
    probe = f"From: Robot <robot@vendor.test>\nTo: {owner['email']}\nSubject: Filtered\n\nBody.\n".encode()
    assert site.sieve_folders(tenant, owner["login"], probe) == ["Travel"]
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "Robot <robot@vendor.test>", owner["email"], "Filtered"
    message.set_content("Body.")
    with smtplib.SMTP("127.0.0.1", site.smtp_port) as smtp:
        smtp.login(f"{owner['login']}@t{tenant}", PASSWORD)
        smtp.send_message(message, from_addr="robot@vendor.test")
    account = site.account(tenant, owner["login"])
    assert [m.folder for m in account.all_messages() if m.mail["Subject"] == "Filtered"] == ["Travel"]
