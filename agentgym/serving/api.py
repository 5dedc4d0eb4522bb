"""The env server's HTTP API as pydantic models: what each route takes and answers, and its errors.

:func:`agentgym.serving.server.create_app` declares its routes with these models, so the OpenAPI
document (``GET /openapi.json``, saved as ``docs/openapi.json``) states every request body,
every response body and every error status the server really gives, and FastAPI checks each
request body against its model before the route runs. A request body that does not fit
gets ``422 InvalidRequest`` (``400 InvalidJSON`` when it is not JSON at all), in the same
``{"error": {...}}`` shape as every other error (:class:`ErrorResponse`).

Request fields are strict (JSON types as written: ``"1"`` is not an integer, ``true`` is
not a number); unknown fields are ignored. Responses are written by the server's own JSON
encoder (the wire format that :class:`~agentgym.serving.client.RemoteEnv` reads); these models
describe them and are not used to serialise them. Imported only by ``create_app``, so the
client side loads without pydantic.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    WithJsonSchema,
)

#: The OpenAPI document's description.
DESCRIPTION = (
    "Sessions of agentgym envs over HTTP: open a session (POST /sessions), then reset and step it "
    "(POST /sessions/{session_id}/reset, /step), and close it (DELETE /sessions/{session_id}). "
    'Every error is {"error": {"type", "message"}}; see docs/serving.md.'
)


def _integral(value: Any) -> Any:
    """JSON Schema's integers include numbers with a zero fraction (``3.0``): take them as ints."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


#: A JSON integer as a request field (``3`` or ``3.0``; never a boolean, a string or ``3.5``).
Integer = Annotated[StrictInt, BeforeValidator(_integral)]
#: A JSON integer of at least 0, and of at least 1.
NonNegative = Annotated[StrictInt, Field(ge=0), BeforeValidator(_integral)]
Positive = Annotated[StrictInt, Field(ge=1), BeforeValidator(_integral)]
#: A JSON number as a request field (an integer or a float, never a boolean or a string).
Number = StrictInt | StrictFloat


class Request(BaseModel):
    """Base of request bodies: strict types, unknown fields ignored."""

    model_config = ConfigDict(strict=True, extra="ignore")


# ---- requests -------------------------------------------------------------------------------


class CreateSessionRequest(Request):
    """``POST /sessions``: the env to make."""

    env_id: StrictStr = Field(description="A served env id (see GET /health).", examples=["Sokoban-v0"])
    kwargs: dict[str, Any] | None = Field(
        None, description="Keyword arguments of the env's constructor (as gym.make takes them).", examples=[{}]
    )
    max_episode_steps: Literal[-1] | Positive | None = Field(
        None, description="The TimeLimit: null for the registered limit, -1 for none."
    )


class ResetOptions(BaseModel):
    """The options of a text env's reset (the env refuses others: 422 InvalidArgument)."""

    model_config = ConfigDict(extra="forbid", title="ResetOptions")

    task_id: int | None = Field(None, description="Play this task (ids are global over the splits).")
    split: Literal["train", "dev", "test"] = Field(None, description="Draw a task of this split.")  # type: ignore[assignment]


class ResetRequest(Request):
    """``POST /sessions/{session_id}/reset``: Gymnasium's ``reset`` arguments."""

    seed: NonNegative | None = Field(None, description="Seeds the env's generator.")
    # Checked by the env, not here: what it refuses (an unknown option, a task id it does not have, a
    # task id that is not an int) is 422 InvalidArgument naming its TypeError or ValueError, which
    # RemoteEnv raises as the local env would.
    options: Annotated[dict[str, Any], WithJsonSchema(ResetOptions.model_json_schema())] | None = None


class StepRequest(Request):
    """``POST /sessions/{session_id}/step``: one action."""

    action: StrictStr | dict[str, Any] = Field(
        description=(
            "The LLM's reply as text, or a native tool call: one call {name, arguments} (or OpenAI's "
            "{type: function, function: {...}}) or an assistant message with tool_calls (docs/tool-calls.md). "
            "What cannot be parsed is an invalid action (an explanatory observation), not an HTTP error."
        ),
        examples=["I push the box.\nAction: up"],
    )


#: A ``random.Random`` state as JSON: ``[version, [625 integers], gauss_next]``.
RngState = Annotated[list[Integer | list[Integer] | Number | None], Field(min_length=3, max_length=3)]


class RandomActionRequest(Request):
    """``POST /sessions/{session_id}/random_action``: the generator to draw from."""

    seed: Integer | None = Field(None, description="Draw from random.Random(seed).")
    rng_state: RngState | None = Field(
        None,
        description="Draw from a random.Random with this state: random.getstate()'s [version, [625 integers], "
        "gauss_next]; "
        "it comes back advanced. A state getstate() did not produce gets 422 InvalidArgument.",
    )


# ---- responses ------------------------------------------------------------------------------


class TextSpace(BaseModel):
    """A text space: any unicode string of ``min_length`` to ``max_length`` characters (plus tool calls)."""

    type: Literal["UnicodeText", "TextOrToolCall"]
    min_length: int
    max_length: int


class BoxSpace(BaseModel):
    """A ``gymnasium.spaces.Box`` (bounds as one number when uniform)."""

    type: Literal["Box"]
    low: float | list[Any]
    high: float | list[Any]
    shape: list[int]
    dtype: str = Field(description="numpy's dtype.str, e.g. |u1")


class DictSpace(BaseModel):
    """A ``gymnasium.spaces.Dict`` of spaces."""

    type: Literal["Dict"]
    spaces: dict[str, Space]


Space = Annotated[TextSpace | BoxSpace | DictSpace, Field(discriminator="type")]
DictSpace.model_rebuild()


class Splits(BaseModel):
    """How many tasks each split holds (ids are global: train first, then dev, then test)."""

    train: int
    dev: int
    test: int


class EnvDescription(BaseModel):
    """What a client needs to rebuild the env's interface."""

    id: str
    kwargs: dict[str, Any]
    max_episode_steps: int | None
    observation_space: Space
    action_space: Space
    metadata: dict[str, Any]
    render_mode: str | None
    splits: Splits | None
    tools: list[dict[str, Any]] | None = Field(None, description="The env's actions as OpenAI function tools.")


class SessionCreated(BaseModel):
    session_id: str
    env: EnvDescription


class EncodedArray(BaseModel):
    """A numpy array in an observation (a screenshot): zlib-compressed bytes in base64."""

    model_config = ConfigDict(populate_by_name=True)

    ndarray: str = Field(alias="__ndarray__")
    dtype: str
    shape: list[int]


Observation = Annotated[
    str | dict[str, str | EncodedArray | Any],
    Field(description="Text, or a dict with a 'text' entry and arrays such as 'screenshot' (EncodedArray)."),
]


class ResetResponse(BaseModel):
    observation: Observation
    info: dict[str, Any] = Field(description="Always task_id, split, instruction, ... (docs/contract.md).")


class StepResponse(BaseModel):
    observation: Observation
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]


class RenderResponse(BaseModel):
    render: Any = Field(description="What env.render() returned (text for render_mode 'ansi', else null).")


class ActionResponse(BaseModel):
    action: str = Field(description="The command the env's scripted solver plays now.")


class RandomActionResponse(BaseModel):
    action: str
    rng_state: list[int | list[int] | float | None] = Field(
        min_length=3, max_length=3, description="The generator's state after the draw (as rng_state takes it)."
    )


class AvailableActionsResponse(BaseModel):
    actions: list[str] | None = Field(description="The legal commands now; null where they are not enumerable.")


class ToolsResponse(BaseModel):
    tools: list[dict[str, Any]] | None = Field(description="The env's actions as OpenAI function tools.")


class SessionSummary(BaseModel):
    session_id: str
    env_id: str
    kwargs: dict[str, Any]
    age_s: float
    idle_s: float
    episodes: int
    steps: int


class SessionList(BaseModel):
    sessions: list[SessionSummary]


class SessionClosed(BaseModel):
    closed: str = Field(description="The id of the closed session.")


class Health(BaseModel):
    status: Literal["ok"]
    envs: list[str] = Field(description="The served env ids.")
    sessions: int


class LoopLag(BaseModel):
    """How late the server's event loop woke a timer set every 0.1 s (seconds): how long a request that had
    arrived waited before the loop read it."""

    last: float
    max_last_minute: float
    max: float = Field(description="Since the server started.")


class PythonCalls(BaseModel):
    """The session calls that run Python in the server (rather than wait on a browser, a JVM, a sandbox): at
    most ``limit`` run at once, so that the event loop waits behind a few threads for the GIL."""

    limit: int | None = Field(description="At most this many at once (null: no limit; `--max-python-calls`).")
    running: int
    waiting: int = Field(description="Calls waiting their turn.")


class Metrics(BaseModel):
    sessions: int
    max_sessions: int
    session_ttl_s: float
    sessions_by_env: dict[str, int]
    sessions_created: int
    sessions_closed: int
    sessions_reaped: int
    sessions_failed: int = Field(description="Sessions closed because their env raised.")
    memory_releases: int = Field(
        description="Times the server handed the memory closed sessions freed back to the system (malloc_trim)."
    )
    calls: dict[str, int]
    steps: int
    errors: int
    errors_by_type: dict[str, int]
    rss_bytes: int | None
    loop_lag_s: LoopLag
    python_calls: PythonCalls
    uptime_s: float


class MallocHeap(BaseModel):
    held: int = Field(
        description="Bytes of address space glibc malloc has taken (all arenas and mmapped blocks): "
        "not all resident, since the server hands free pages back (malloc_trim) after sessions close."
    )
    in_use: int = Field(description="Bytes of it allocated to the program.")
    free: int = Field(description="Bytes of it free (kept by the allocator: fragmentation when it grows).")
    releasable: int = Field(description="Free bytes at the top of the main heap that malloc_trim would return.")


class Memory(BaseModel):
    rss_bytes: int | None
    malloc: MallocHeap | None = Field(description="glibc malloc's heap (null without glibc 2.33 or later).")
    python_blocks: int = Field(description="Blocks Python's allocator holds (sys.getallocatedblocks).")
    gc_objects: int = Field(description="Objects the garbage collector tracks.")
    objects_by_type: dict[str, int] = Field(description="The most numerous tracked object types, with their counts.")
    threads: int


# ---- errors ---------------------------------------------------------------------------------


class ErrorDetail(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: str = Field(
        description="InvalidJSON, Unauthorized, InvalidRequest, InvalidArgument, NotFound, MethodNotAllowed, "
        "UnknownEnv, UnknownSession, ResetNeeded, PayloadTooLarge, TooManySessions, SessionRateLimited, EnvError, "
        "NotImplemented, InternalError",
    )
    message: str
    exception: str | None = Field(None, description="InvalidArgument: TypeError or ValueError, as the env raised it.")
    session_closed: StrictBool | None = Field(None, description="EnvError: the env raised and its session is gone.")
    retry_after_s: float | None = Field(None, description="429: seconds to wait before retrying (as Retry-After).")


class ErrorResponse(BaseModel):
    """Every error the server answers."""

    error: ErrorDetail


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses=`` entries of a route for these error statuses (:data:`ERRORS` says when each comes)."""
    return {
        status: {
            "model": ErrorResponse,
            "description": ERRORS[status],
            **({"headers": RETRY_AFTER} if status == 429 else {}),
        }
        for status in statuses
    }


#: What each error status means, for the OpenAPI document.
ERRORS: dict[int, str] = {
    400: "InvalidJSON: the body is not JSON.",
    404: "UnknownSession (closed, reaped after idling, or never opened), UnknownEnv (not served here) or NotFound.",
    409: "ResetNeeded: a call before the session's first reset.",
    413: "PayloadTooLarge: the body exceeds the server's --max-body-bytes.",
    422: "InvalidRequest: the body does not fit the schema; InvalidArgument: the env's constructor or reset "
    "refused an argument (a task id it does not have, an unknown option or keyword).",
    429: "TooManySessions: the server holds --max-sessions sessions, or this client (its key, or its address "
    "without keys) --max-sessions-per-client; retry after a session closes. SessionRateLimited: this client "
    "opened sessions faster than --session-rate allows (after --session-burst at once); retry after Retry-After.",
    500: "EnvError: the env raised; its session is closed (session_closed: true) and a new one may be opened. "
    "InternalError: a bug in the server.",
    501: "NotImplemented: the env does not support this call (e.g. random_action without enumerable actions).",
}

RETRY_AFTER = {"Retry-After": {"description": "Seconds to wait before retrying.", "schema": {"type": "string"}}}

#: The errors of every route that reads a JSON body.
BODY_ERRORS = (400, 413, 422, 500)
#: The errors of every call on a session.
SESSION_ERRORS = (404, 500)


#: Each session call: its request model (None: no body), its response model, and its errors beyond
#: :data:`SESSION_ERRORS`. :func:`agentgym.serving.server.create_app` makes one route per entry.
CALL_ROUTES: dict[str, tuple[type[BaseModel] | None, type[BaseModel], tuple[int, ...], str]] = {
    "reset": (ResetRequest, ResetResponse, (*BODY_ERRORS,), "Start an episode: Gymnasium's reset."),
    "step": (StepRequest, StepResponse, (*BODY_ERRORS, 409), "Play one action: Gymnasium's step."),
    "render": (None, RenderResponse, (409,), "The env's render()."),
    "oracle_action": (None, ActionResponse, (409, 501), "The command the env's scripted solver plays now."),
    "random_action": (
        RandomActionRequest,
        RandomActionResponse,
        (*BODY_ERRORS, 409, 501),
        "A uniformly random legal command (the random baseline).",
    ),
    "available_actions": (None, AvailableActionsResponse, (409,), "The legal commands now."),
}


class AnyObject(BaseModel):
    """Any JSON object (a call whose models are not declared yet)."""

    model_config = ConfigDict(extra="allow")


#: The route of a session call missing from :data:`CALL_ROUTES`: any object in, any object out.
UNTYPED_CALL = (AnyObject, AnyObject, (*BODY_ERRORS, 409, 422, 501), "A session call (its body is not described).")

#: OpenAPI links from a created session to the calls on it (generated clients and schemathesis's
#: stateful tests follow them).
SESSION_LINKS: dict[str, Any] = {
    name: {"operationId": name, "parameters": {"session_id": "$response.body#/session_id"}}
    for name in (*CALL_ROUTES, "close")
}


#: A server with API keys (docs/security.md): every route but /health needs ``Authorization: Bearer KEY``.
SECURITY_SCHEMES = {
    "bearer": {
        "type": "http",
        "scheme": "bearer",
        "description": "One of the server's API keys (agentgym serve --api-key-file, $AGENTGYM_API_KEYS); "
        "a server without keys (on loopback) takes requests without one.",
    }
}


def secure_openapi(document: dict[str, Any]) -> dict[str, Any]:
    """Declare the key every operation but ``health`` needs (:data:`SECURITY_SCHEMES`), and its 401 answer."""
    document.setdefault("components", {})["securitySchemes"] = SECURITY_SCHEMES
    document["security"] = [{"bearer": []}]
    error = {
        "description": "Unauthorized: the server has API keys, and the request carries none or a wrong one.",
        "headers": {"WWW-Authenticate": {"description": "Bearer", "schema": {"type": "string"}}},
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}},
    }
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            if operation.get("operationId") == "health":
                operation["security"] = []
            else:
                operation["responses"]["401"] = error
    return document


def tidy_openapi(document: dict[str, Any]) -> dict[str, Any]:
    """Drop the 422 answers FastAPI adds to routes whose only parameter is a path string: nothing
    there can fail validation (routes with a body declare their own 422 with :class:`ErrorResponse`)."""
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            schema = operation.get("responses", {}).get("422", {}).get("content", {}).get("application/json", {})
            if schema.get("schema", {}).get("$ref", "").endswith("/HTTPValidationError"):
                del operation["responses"]["422"]
    for name in ("HTTPValidationError", "ValidationError"):
        document.get("components", {}).get("schemas", {}).pop(name, None)
    return document
