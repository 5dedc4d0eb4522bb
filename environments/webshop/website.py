"""WebShop as a website: the engine's pages over HTTP, for people and browser agents.

``agentgym webshop-site --port 3000`` or ``python -m agentgym.environments.webshop.website``
serves one shop (the catalog the env would load: ``--catalog``, ``$WEBSHOP_DATA`` or the
generated one) to many visitors, each with a :class:`~.engine.Session` of their own:

* ``GET /`` starts a session and redirects (303) to it: ``?goal=N`` plays goal index ``N``
  (the original's numbering: 0-499 test, 500-1499 dev), ``?task_id=T`` the goal of agentgym
  task ``T``; without either, a goal drawn from the test split by a seeded generator
  (``seed``), so a fresh site hands out the same sequence of goals.
* ``GET /{session_id}`` shows the session's current page: the search page, a results
  page, an item page, a Description/Features/Reviews/Attributes sub-page, or, after
  ``Buy Now``, the done page with the reward, its breakdown and what was bought. Every
  page shows the instruction.
* ``POST /{session_id}`` plays one command from a form: ``search_query=...`` (the search
  box) or ``action=click[...]`` / ``action=search[...]``, then redirects (303) back to
  ``GET /{session_id}`` (post/redirect/get, so reloading a page repeats nothing). A
  command the page does not offer answers 400 with the page and the engine's message.
* ``GET /{session_id}/state``: the session as JSON (page, instruction, goal index,
  available actions, and after the purchase its reward and breakdown), for harnesses that
  drive the site with a browser and score with this.
* ``GET /health``: JSON liveness with the catalog and the number of open sessions.

The pages are the engine's own HTML (:meth:`~.engine.Session.render` in ``"html"`` mode,
with the original templates' ids and classes) inside a page of this module with a little
CSS, a header and the feedback of the last command. Clicking works with plain HTML, no
script: the engine already puts each button in a ``<form method="post">`` with a hidden
``action`` field; its product links (``a.product-link``) and option radios, which need a
script in the original, are turned here into submit buttons of forms of the same shape
(``button.product-link``; ``button.option`` with ``data-option`` naming the option,
class ``selected`` and ``aria-pressed="true"`` when selected). So every element with
``data-action`` is a submit button whose form posts that command.

Sessions live in memory, at most ``max_sessions``; one idle for ``session_ttl_s`` seconds
(0: never) is dropped. When the site is full, the least recently used finished session
(purchase made) makes room; if none has finished, ``GET /`` answers 429. An unknown or
expired session id answers a 404 page linking to a new session; bad input (a goal out of
range, a missing form field, a body over ``max_body_bytes``) a 4xx page; an unexpected
error a 500 page without a traceback. Requests run one at a time on the event loop (a
step takes microseconds, a search a few milliseconds even at 1,000,000 products), so a
session is never played by two requests at once.

FastAPI and uvicorn are imported by :func:`create_app` and :func:`serve` only, the engine
by :func:`create_app`: the command-line options load with the standard library alone.
"""

import argparse
import html
import json
import logging
import random
import re
import secrets
import sys
import time
import urllib.parse
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fastapi import FastAPI

    from agentgym.environments.webshop.engine import Session, Shop

logger = logging.getLogger("agentgym.webshop.website")

DEFAULT_PORT = 3000  # the original WebShop site's
DEFAULT_MAX_SESSIONS = 1024
DEFAULT_SESSION_TTL_S = 1800.0
DEFAULT_MAX_BODY_BYTES = 64 * 1024
#: What ``agentgym webshop-site`` does, in one line.
SITE_HELP = "serve WebShop as a website (search, results, item pages, Buy Now) for people and browser agents"

_SESSION_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_BODY = re.compile(r"<body>\n?(.*?)\n?</body>", re.DOTALL)
_ATTRIBUTE = re.compile(r'([\w-]+)(?:="([^"]*)")?')
# The engine's clickables that need a script: product links and option radios (with their labels).
_LINK = re.compile(r"<a\b(?P<attributes>[^>]*\bdata-action=[^>]*)>(?P<text>.*?)</a>", re.DOTALL)
_RADIO = re.compile(
    r'<input\b(?P<attributes>[^>]*\btype="radio"[^>]*\bdata-action=[^>]*)>\s*<label\b[^>]*>(?P<text>.*?)</label>',
    re.DOTALL,
)

STYLE = """
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d2433;background:#f3f4f7}
header{display:flex;gap:1.2em;align-items:center;padding:.6em 1.2em;background:#232f3e;color:#fff}
header .brand{font-weight:700;font-size:1.15em}
header .goal{opacity:.8;flex:1}
header a{color:#ffd479}
main{max-width:980px;margin:1.2em auto;padding:1.2em 1.6em;background:#fff;border-radius:8px;
box-shadow:0 1px 3px rgba(0,0,0,.12)}
#logo h2{margin:.2em 0;font-size:2em;color:#232f3e}
#instruction-text{background:#fff8e6;border-left:4px solid #f0a500;padding:.1em 1em;margin:0 0 1em}
#instruction-text h4{font-weight:500;margin:.6em 0}
form{display:inline-block;margin:.25em .3em .25em 0}
#search_input{width:26em;max-width:70vw;padding:.45em .6em;font-size:1em;border:1px solid #aab;border-radius:4px}
button{font:inherit;cursor:pointer;padding:.35em .9em;border-radius:4px;border:1px solid #8a93a6;background:#eef0f5}
button:hover{background:#dde2ec}
.btn-success{background:#1f8a4c;border-color:#1f8a4c;color:#fff}
.btn-primary{background:#2f5fb3;border-color:#2f5fb3;color:#fff}
.btn-success:hover,.btn-primary:hover{filter:brightness(1.1);background-image:none}
.grid-item{border-top:1px solid #e3e6ec;padding:.5em 0}
.grid-item h4,.grid-item h5{margin:.15em 0}
.product-link{border:none;background:none;padding:0;color:#2f5fb3;text-decoration:underline;font-weight:600}
.product-link:hover{background:none;color:#173c80}
.radio-toolbar{margin:.6em 0}
.radio-toolbar h4{margin:.2em 0;text-transform:capitalize}
.option{background:#fff}
.option.selected{background:#f0a500;border-color:#c98900;color:#1d2433;font-weight:600}
.feedback{background:#e8f4ec;border-left:4px solid #1f8a4c;padding:.4em 1em;margin-bottom:1em}
.error{background:#fdecec;border-left:4px solid #c62828;padding:.4em 1em;margin-bottom:1em}
#reward pre{display:inline-block;margin:0 0 0 .5em;font-size:1.4em}
table{border-collapse:collapse;margin:.6em 0 1em}
td,th{border-bottom:1px solid #e3e6ec;padding:.3em .8em;text-align:left;vertical-align:top}
.actions a{margin-right:1.2em}
"""


class SiteError(Exception):
    """A client mistake or a full site: answered as an HTML page with ``status``."""

    def __init__(self, status: int, title: str, message: str, *, session_id: str | None = None) -> None:
        super().__init__(message)
        self.status, self.title, self.message, self.session_id = status, title, message, session_id


@dataclass
class Visit:
    """One visitor: the engine session, its goal and when it was last used."""

    session: "Session"
    goal_index: int
    last_seen: float
    feedback: str = ""  # the last command's feedback, shown once on the next page


class Sessions:
    """The open visits, least recently used first; expired ones are dropped on every access."""

    def __init__(self, max_sessions: int, ttl_s: float, clock: Callable[[], float]) -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, got {max_sessions}")
        self.max_sessions, self.ttl_s, self.clock = max_sessions, ttl_s, clock
        self.visits: OrderedDict[str, Visit] = OrderedDict()
        self.counts = {"created": 0, "expired": 0, "evicted": 0}

    def __len__(self) -> int:
        return len(self.visits)

    def expire(self) -> None:
        """Drop the visits idle for the TTL or longer (they are at the front)."""
        if self.ttl_s <= 0:
            return
        now = self.clock()
        while self.visits:
            session_id, visit = next(iter(self.visits.items()))
            if now - visit.last_seen < self.ttl_s:
                break
            del self.visits[session_id]
            self.counts["expired"] += 1

    def get(self, session_id: str) -> Visit:
        """The visit ``session_id``, marked as used now; ``SiteError`` 404 if unknown or expired."""
        self.expire()
        visit = self.visits.get(session_id)
        if visit is None:
            when = f"after {self.ttl_s:g} s idle, or " if self.ttl_s > 0 else ""
            raise SiteError(
                404,
                "Session not found",
                f"This shopping session does not exist or has expired (sessions close {when}when the site needs room).",
            )
        visit.last_seen = self.clock()
        self.visits.move_to_end(session_id)
        return visit

    def add(self, session: "Session", goal_index: int) -> str:
        """Open a visit and return its id; ``SiteError`` 429 when full of unfinished sessions."""
        self.expire()
        if len(self.visits) >= self.max_sessions:
            finished = next((key for key, visit in self.visits.items() if visit.session.done), None)
            if finished is None:
                raise SiteError(
                    429,
                    "Too many sessions",
                    f"The site has {len(self.visits)} open sessions, its limit; try again later.",
                )
            del self.visits[finished]
            self.counts["evicted"] += 1
        session_id = secrets.token_urlsafe(12)
        self.visits[session_id] = Visit(session, goal_index, self.clock())
        self.counts["created"] += 1
        return session_id


# ---- pages -------------------------------------------------------------------------------------


def actionable(body: str) -> str:
    """The engine's page body with every ``data-action`` element a submit button of a POST form.

    Buttons already are; product links and option radios (with their labels) become
    ``<form method="post">`` + hidden ``action`` + ``<button type="submit" data-action=...>``.
    """
    body = _LINK.sub(lambda match: _submit(match["attributes"], match["text"]), body)
    return _RADIO.sub(lambda match: _submit(match["attributes"], match["text"], option=True), body)


def _submit(attributes: str, text: str, option: bool = False) -> str:
    found = {name: value for name, value in _ATTRIBUTE.findall(attributes)}
    command = found["data-action"]  # already escaped by the engine
    if option:
        selected = "checked" in found
        classes = "option selected" if selected else "option"
        extra = f' data-option="{found.get("name", "")}" aria-pressed="{"true" if selected else "false"}"'
    else:
        classes, extra = found.get("class", "link"), ""
    return (
        f'<form method="post"><input type="hidden" name="action" value="{command}">'
        f'<button type="submit" class="{classes}" data-action="{command}"{extra}>{text}</button></form>'
    )


def _document(title: str, header: str, content: str, page: str = "") -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{html.escape(title)}</title><link rel="icon" href="data:,"><style>{STYLE}</style></head>\n'
        f'<body>\n{header}\n<main id="page" data-page="{html.escape(page)}">\n{content}\n</main>\n</body></html>\n'
    )


def _header(visit: Visit | None = None) -> str:
    brand = '<header><span class="brand">WebShop</span>'
    if visit is None:
        return brand + '<span class="goal"></span><a href="/">Start shopping</a></header>'
    goal = visit.goal_index
    return (
        f'{brand}<span class="goal">goal #{goal}</span>'
        f'<a href="/?goal={goal}">Restart this goal</a><a href="/">New goal</a></header>'
    )


def session_page(shop: "Shop", visit: Visit, error: str | None = None) -> str:
    """The visit's current page: the engine's HTML made clickable, in the site's layout."""
    session = visit.session
    rendered = session.render("html")
    found = _BODY.search(rendered)
    body = actionable(found.group(1) if found else rendered)
    notes = []
    if error is not None:
        notes.append(f'<div class="error" role="alert">{html.escape(error)}</div>')
    elif visit.feedback:
        notes.append(f'<div class="feedback" role="status">{html.escape(visit.feedback)}</div>')
    visit.feedback = ""
    if session.done:
        instruction = f'<div id="instruction-text"><h4>Instruction:<br>{html.escape(session.instruction)}</h4></div>'
        body = instruction + "\n" + body + "\n" + _purchase_html(shop, visit)
    page_name = {"search": "Search", "results": "Results", "item": "Item", "done": "Done"}
    title = f"WebShop · {page_name.get(session.page, session.page.capitalize())}"
    return _document(title, _header(visit), "\n".join([*notes, body]), session.page)


def _purchase_html(shop: "Shop", visit: Visit) -> str:
    """What was bought, what the goal asked, the reward's parts and links to shop again."""
    esc = html.escape
    session, purchase = visit.session, visit.session.purchase
    assert purchase is not None
    goal = session.goal
    product = shop.product(shop.index_of(purchase.asin))
    chosen = ", ".join(f"{name}: {value}" for name, value in purchase.options.items()) or "none"
    wanted = ", ".join(f"{name}: {value}" for name, value in goal.goal_options.items()) or "none"
    cap = "none" if goal.price_upper >= 1_000_000 else f"${goal.price_upper:.2f}"
    rows = [
        ("Bought", f"{purchase.asin}: {product.title}"),
        ("Options selected", chosen),
        ("Price paid", f"${purchase.price:.2f}"),
        ("Goal product", goal.asin),
        ("Goal attributes", ", ".join(goal.attributes) or "none"),
        ("Goal options", wanted),
        ("Price cap", cap),
    ]
    bought = "".join(f"<tr><th>{esc(name)}</th><td>{esc(value)}</td></tr>" for name, value in rows)
    parts = "".join(f"<tr><th>{esc(name)}</th><td>{esc(value)}</td></tr>" for name, value in breakdown_rows(purchase))
    return (
        f'<table id="purchase">{bought}</table>\n<h3>Reward breakdown</h3>\n'
        f'<table id="breakdown">{parts}</table>\n'
        f'<p class="actions"><a href="/?goal={visit.goal_index}">Try this goal again</a>'
        '<a href="/">Shop for another goal</a></p>'
    )


def breakdown_rows(purchase: Any) -> list[tuple[str, str]]:
    """The reward breakdown as (label, value) rows: the formula's parts first, then any other key."""
    parts = dict(purchase.breakdown)
    weights = parts.pop("weights", None) or {}

    def number(value: Any) -> str:
        if value is None:
            return "n/a (nothing asked)"
        if isinstance(value, bool):
            return "yes" if value else "no"
        return f"{value:.3f}" if isinstance(value, float) else str(value)

    rows = [("Reward", number(purchase.reward))]
    labels = [
        ("r_type", "Product type factor (r_type)"),
        ("query_match", "· same product query"),
        ("category_match", "· 2+ shared category levels"),
        ("title_score", "· title noun overlap"),
        ("noun_tagger", "· title nouns typed by"),
        ("r_att", "Attributes matched (r_att)"),
        ("attribute_matches", "· attribute matches"),
        ("r_option", "Options matched (r_option)"),
        ("option_matches", "· option matches"),
        ("r_price", "Price within the cap (r_price)"),
    ]
    for key, label in labels:
        if key in parts:
            rows.append((label, number(parts.pop(key))))
    rows += [(key, number(value)) for key, value in parts.items()]
    if weights:
        rows.append(("Weights", ", ".join(f"{name} {share:.3f}" for name, share in weights.items())))
    return rows


def error_page(status: int, title: str, message: str) -> str:
    """A 4xx/5xx page: what went wrong and a link to start shopping."""
    content = (
        f'<h2 id="error-title">{html.escape(title)}</h2>\n'
        f'<p class="error" role="alert">{html.escape(message)}</p>\n'
        '<p class="actions"><a href="/">Start a new shopping session</a></p>'
    )
    return _document(f"WebShop · {status} {title}", _header(), content, "error")


def state(shop: "Shop", session_id: str, visit: Visit) -> dict[str, Any]:
    """The JSON of ``GET /{session_id}/state``."""
    session = visit.session
    data: dict[str, Any] = {
        "session_id": session_id,
        "goal_index": visit.goal_index,
        "task_id": shop.task_id(visit.goal_index),
        "instruction": session.instruction,
        "page": session.page,
        "done": session.done,
        "available_actions": session.available_actions(),
        "reward": None,
        "success": None,
    }
    if session.purchase is not None:
        purchase = session.purchase
        data.update(
            reward=purchase.reward,
            success=purchase.reward == 1.0,
            reward_breakdown=purchase.breakdown,
            purchase={"asin": purchase.asin, "options": purchase.options, "price": purchase.price},
        )
    return data


# ---- the app -----------------------------------------------------------------------------------


def create_app(
    catalog: Any = None,
    num_products: int | None = None,
    cache_dir: Any = None,
    *,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    session_ttl_s: float = DEFAULT_SESSION_TTL_S,
    seed: int = 0,
    show_attributes: bool = True,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    clock: Callable[[], float] = time.monotonic,
) -> "FastAPI":
    """The site's app over the shop of ``catalog`` (loaded, or indexed, here; see the module docstring).

    ``catalog``, ``num_products`` and ``cache_dir`` are the env's kwargs
    (:func:`~.engine.load_shop`); ``seed`` seeds the draw of goals for ``GET /``;
    ``show_attributes=False`` hides the Attributes button, as the original site does;
    ``clock`` (seconds) times the sessions' TTL. ``app.state.shop`` and
    ``app.state.sessions`` are the shop and the :class:`Sessions`.
    """
    from fastapi import FastAPI, Request, Response
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import HTMLResponse, RedirectResponse
    from starlette.exceptions import HTTPException

    from agentgym.contract.core import InvalidAction
    from agentgym.environments.webshop.engine import Session, load_shop

    shop = load_shop(catalog, num_products, cache_dir)
    sessions = Sessions(max_sessions, session_ttl_s, clock)
    rng = random.Random(seed)
    app = FastAPI(title="WebShop", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.shop, app.state.sessions = shop, sessions

    def page(content: str, status: int = 200) -> Response:
        return HTMLResponse(content, status_code=status, headers={"Cache-Control": "no-store"})

    def fail(error: SiteError) -> Response:
        headers = {"Cache-Control": "no-store"}
        if error.status == 429:
            headers["Retry-After"] = "60"
        return HTMLResponse(error_page(error.status, error.title, error.message), error.status, headers=headers)

    @app.exception_handler(SiteError)
    async def site_error(_: Request, error: SiteError) -> Response:
        return fail(error)

    @app.exception_handler(HTTPException)
    async def http_error(_: Request, error: HTTPException) -> Response:
        titles = {404: "Page not found", 405: "Method not allowed"}
        message = "There is no such page here." if error.status_code == 404 else str(error.detail)
        return fail(SiteError(error.status_code, titles.get(error.status_code, "Request refused"), message))

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_: Request, error: RequestValidationError) -> Response:
        return fail(SiteError(400, "Bad request", "The request's parameters are not valid."))

    @app.exception_handler(Exception)
    async def internal_error(_: Request, error: Exception) -> Response:
        logger.exception("internal error")
        return fail(SiteError(500, "Internal error", f"Something went wrong on our side ({type(error).__name__})."))

    def goal_from_query(request: Request) -> int:
        params = request.query_params
        if "goal" in params and "task_id" in params:
            raise SiteError(400, "Bad request", "Give goal= or task_id=, not both.")
        if "goal" in params:
            return _integer(params["goal"], "goal", len(shop.goals))
        if "task_id" in params:
            return shop.goal_index(_integer(params["task_id"], "task_id", shop.splits.total))
        return rng.randrange(shop.splits.test)  # the test goals are goal indices 0 .. test - 1

    async def read_form(request: Request) -> dict[str, str]:
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_body_bytes:
            raise SiteError(413, "Request too large", f"Form bodies are limited to {max_body_bytes} bytes.")
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_body_bytes:
                raise SiteError(413, "Request too large", f"Form bodies are limited to {max_body_bytes} bytes.")
            chunks.append(chunk)
        kind = request.headers.get("content-type", "application/x-www-form-urlencoded").split(";")[0].strip()
        if kind != "application/x-www-form-urlencoded":
            raise SiteError(415, "Unsupported form", "Forms must be posted as application/x-www-form-urlencoded.")
        try:
            fields = urllib.parse.parse_qs(b"".join(chunks).decode(), keep_blank_values=True, max_num_fields=16)
        except (UnicodeDecodeError, ValueError):
            raise SiteError(400, "Bad request", "The form could not be read.") from None
        return {name: values[-1] for name, values in fields.items()}

    @app.get("/health")
    async def health() -> Response:
        sessions.expire()
        payload = {"status": "ok", "catalog": shop.name, "products": len(shop.catalog), "goals": len(shop.goals)}
        payload.update(sessions=len(sessions), max_sessions=sessions.max_sessions, **sessions.counts)
        return Response(json.dumps(payload), media_type="application/json")

    @app.get("/")
    async def start(request: Request) -> Response:
        """A new session for ``?goal=N``, ``?task_id=T`` or a random test goal; 303 to its page."""
        goal_index = goal_from_query(request)
        session = Session(shop, shop.goals[goal_index], show_attributes=show_attributes)
        session_id = sessions.add(session, goal_index)
        return RedirectResponse(f"/{session_id}", status_code=303, headers={"Cache-Control": "no-store"})

    def visit_of(session_id: str) -> Visit:
        if not _SESSION_ID.match(session_id):
            raise SiteError(404, "Session not found", "That is not a session id of this site.")
        return sessions.get(session_id)

    @app.get("/{session_id}")
    async def show(session_id: str) -> Response:
        """The session's current page."""
        return page(session_page(shop, visit_of(session_id)))

    @app.post("/{session_id}")
    async def act(session_id: str, request: Request) -> Response:
        """Play the posted command (``search_query`` or ``action``) and redirect to the session's page."""
        visit = visit_of(session_id)
        fields = await read_form(request)
        session = visit.session
        try:
            if "action" in fields:
                visit.feedback = session.act(fields["action"])
            elif "search_query" in fields:
                visit.feedback = session.search(fields["search_query"])
            else:
                raise InvalidAction("the form has neither an action nor a search_query field")
        except InvalidAction as error:
            return page(session_page(shop, visit, error=f"Invalid action: {error}"), 400)
        return RedirectResponse(f"/{session_id}", status_code=303)

    @app.get("/{session_id}/state")
    async def session_state(session_id: str) -> Response:
        """The session as JSON: page, instruction, available actions, reward once bought."""
        visit = visit_of(session_id)
        return Response(json.dumps(state(shop, session_id, visit), default=_plain), media_type="application/json")

    return app


def _plain(value: Any) -> Any:
    """numpy scalars (and anything else JSON lacks) in the state's JSON."""
    return value.item() if hasattr(value, "item") else str(value)


def _integer(text: str, name: str, limit: int) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value < limit:
        raise SiteError(400, "Bad request", f"{name} must be an integer from 0 to {limit - 1}, got {text[:40]!r}.")
    return value


# ---- serving -----------------------------------------------------------------------------------


def serve(
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    *,
    catalog: Any = None,
    num_products: int | None = None,
    cache_dir: Any = None,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    session_ttl_s: float = DEFAULT_SESSION_TTL_S,
    seed: int = 0,
    show_attributes: bool = True,
    log_level: str = "info",
) -> None:
    """Load the shop (building its search index on first use), then serve the site until interrupted.

    Port 0 picks a free port; the URL is printed once the socket listens.
    """
    import uvicorn

    from agentgym.utils.sockets import listening_socket

    print("agentgym webshop-site: loading the shop (the first run builds the search index) ...", flush=True)
    app = create_app(
        catalog,
        num_products,
        cache_dir,
        max_sessions=max_sessions,
        session_ttl_s=session_ttl_s,
        seed=seed,
        show_attributes=show_attributes,
    )
    sock = listening_socket(host, port)
    bound_host, bound_port = sock.getsockname()[:2]
    server = uvicorn.Server(uvicorn.Config(app, log_level=log_level, access_log=log_level == "debug"))
    host_text = f"[{bound_host}]" if ":" in bound_host else bound_host
    shop = app.state.shop
    print(
        f"agentgym webshop-site: {shop.name} ({len(shop.catalog):,} products, {len(shop.goals):,} goals) "
        f"on http://{host_text}:{bound_port}/",
        flush=True,
    )
    server.run(sockets=[sock])


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``agentgym webshop-site`` (shared with ``python -m ...webshop.website``)."""
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on (0.0.0.0 in a container)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="port; 0 picks a free one (the URL is printed)")
    parser.add_argument(
        "--catalog",
        help="'generated', 'generated:N[:SEED]' (e.g. generated:100k) or a folder of the original files "
        "(default: $WEBSHOP_DATA, else the generated catalog)",
    )
    parser.add_argument("--num-products", type=int, help="size of the generated catalog (or products kept)")
    parser.add_argument("--cache-dir", help="where the search index is cached (default: $AGENTGYM_CACHE or ~/.cache)")
    parser.add_argument("--max-sessions", type=int, default=DEFAULT_MAX_SESSIONS, help="open sessions at most")
    parser.add_argument(
        "--session-ttl",
        type=float,
        default=DEFAULT_SESSION_TTL_S,
        metavar="SECONDS",
        help="drop sessions idle this long (0: never)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seeds the random goals handed out by the start page")
    parser.add_argument(
        "--hide-attributes", action="store_true", help="no Attributes button on item pages (as the original site)"
    )
    parser.add_argument("--log-level", default="info", choices=("critical", "error", "warning", "info", "debug"))


def serve_from_args(args: argparse.Namespace) -> int:
    """Run :func:`serve` with parsed :func:`add_arguments` options."""
    serve(
        args.host,
        args.port,
        catalog=args.catalog,
        num_products=args.num_products,
        cache_dir=args.cache_dir,
        max_sessions=args.max_sessions,
        session_ttl_s=args.session_ttl,
        seed=args.seed,
        show_attributes=not args.hide_attributes,
        log_level=args.log_level,
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``agentgym webshop-site`` (also ``python -m agentgym.environments.webshop.website``)."""
    parser = argparse.ArgumentParser(prog="agentgym webshop-site", description=SITE_HELP)
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return serve_from_args(args)
    except (ValueError, FileNotFoundError) as error:
        print(f"agentgym webshop-site: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
