"""The one image module: screenshots as chat content, what a vision-language model is shown of a screen env.

Screenshots as chat content: what a vision-language model is shown of a screen env.

A screen env's observation is a dict with ``"text"`` and ``"screenshot"`` (uint8 HxWx3).
:class:`ImageOptions` says what of it goes to the model:

* ``mode``: ``"text"`` (the text alone, as for text models; the default), ``"screenshot"``
  (the screenshot and the text without the page's element list, for envs that list the
  page's elements: the browser families), or ``"both"`` (the screenshot and the whole text);
* ``max_pixels``: the most pixels an image keeps; a larger screenshot is scaled down with
  its aspect ratio kept (as VLM processors resize), and the text says by how much, so that
  the model can turn a point on the image into screen coordinates;
* ``keep_images``: only the last K images of a chat are sent; older ones become the text
  :data:`ELIDED_IMAGE`, so long episodes stay inside a context budget.

Images are OpenAI-style content parts, ``{"type": "image_url", "image_url": {"url":
"data:image/png;base64,..."}}``, which OpenAI-compatible servers (vLLM, ``agentgym
serve-model``) take as they are. :func:`decode_image` reads such a part back, with a clear
:class:`ImageError` for anything that is not a usable image. Pillow encodes and decodes.

:func:`fit_pixels` is the size rule under a pixel budget, read by computer use too (:mod:`agentgym.computer_use`:
the screen's geometry in the model's coordinates). On the env machinery's floor (docs/architecture.md).
"""

from __future__ import annotations

import base64
import binascii
import io
import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from agentgym.contract.core import observation_text

Message = dict[str, Any]
ObservationMode = Literal["text", "screenshot", "both"]
OBSERVATION_MODES: tuple[ObservationMode, ...] = ("text", "screenshot", "both")
ImageFormat = Literal["png", "jpeg"]
#: The default image budget: a 1024x768 screen is sent as it is (about 1,000 Qwen2-VL image tokens).
DEFAULT_MAX_PIXELS = 1024 * 768
#: What an image older than the last ``keep_images`` becomes.
ELIDED_IMAGE = "[an earlier screenshot, left out]"
#: The most bytes a data URL's image may have when read back (decoded), and the most pixels.
MAX_IMAGE_BYTES = 20 * 1024 * 1024
MAX_IMAGE_PIXELS = 40_000_000


class ImageError(ValueError):
    """An image content part that cannot be used (not base64, not an image, too large)."""


def fit_pixels(width: int, height: int, max_pixels: int | None) -> tuple[int, int]:
    """The size a ``width`` x ``height`` image is sent at: scaled down (aspect kept) to at most ``max_pixels``.

    >>> fit_pixels(1024, 768, 512 * 384)
    (512, 384)
    >>> fit_pixels(160, 210, None)
    (160, 210)
    """
    if max_pixels is None or width * height <= max_pixels:
        return width, height
    scale = math.sqrt(max_pixels / (width * height))
    fitted_width, fitted_height = max(1, int(width * scale)), max(1, int(height * scale))
    while fitted_width * fitted_height > max_pixels:  # rounding up never happens, but int() of a float can
        fitted_width, fitted_height = max(1, fitted_width - 1), max(1, fitted_height - 1)
    return fitted_width, fitted_height


@dataclass(frozen=True)
class ImageOptions:
    """What a vision-language model is shown of a screen env's observations (see the module docstring)."""

    mode: ObservationMode = "text"
    max_pixels: int | None = DEFAULT_MAX_PIXELS
    keep_images: int | None = None
    image_format: ImageFormat = "png"
    jpeg_quality: int = 90

    def __post_init__(self) -> None:
        if self.mode not in OBSERVATION_MODES:
            raise ValueError(f"observation mode must be one of {OBSERVATION_MODES}, got {self.mode!r}")
        if self.max_pixels is not None and self.max_pixels < 1:
            raise ValueError(f"max_pixels must be None or >= 1, got {self.max_pixels}")
        if self.keep_images is not None and self.keep_images < 0:
            raise ValueError(f"keep_images must be None or >= 0, got {self.keep_images}")
        if self.image_format not in ("png", "jpeg"):
            raise ValueError(f"image_format must be 'png' or 'jpeg', got {self.image_format!r}")

    @property
    def images(self) -> bool:
        """Whether screenshots are sent at all."""
        return self.mode != "text"

    def describe(self) -> dict[str, Any]:
        """A JSON view, recorded in a run's ``run.json``."""
        return asdict(self)


def image_part(url: str) -> dict[str, Any]:
    """An OpenAI-style image content part."""
    return {"type": "image_url", "image_url": {"url": url}}


def text_part(text: str) -> dict[str, Any]:
    """An OpenAI-style text content part."""
    return {"type": "text", "text": text}


def encode_screenshot(pixels: np.ndarray, options: ImageOptions) -> tuple[str, tuple[int, int]]:
    """``pixels`` (uint8 HxWx3) as a data URL under the options' budget, and the size sent (width, height)."""
    from PIL import Image

    image = Image.fromarray(np.ascontiguousarray(pixels[..., :3]))
    size = fit_pixels(image.width, image.height, options.max_pixels)
    if size != (image.width, image.height):
        image = image.resize(size, Image.Resampling.BICUBIC)
    buffer = io.BytesIO()
    if options.image_format == "jpeg":
        image.save(buffer, format="JPEG", quality=options.jpeg_quality)
    else:
        image.save(buffer, format="PNG", compress_level=1)
    encoded = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f"data:image/{options.image_format};base64,{encoded}", size


def scale_note(screen: tuple[int, int], sent: tuple[int, int]) -> str:
    """The line telling the model how the screenshot it sees maps onto the screen ("" when unscaled)."""
    if screen == sent:
        return ""
    factor = screen[0] / sent[0]
    return (
        f"(The screenshot is shown at {sent[0]}x{sent[1]}, scaled down from the {screen[0]}x{screen[1]} screen: "
        f"a point (x, y) on it is ({factor:.4g}*x, {factor:.4g}*y) on the screen.)"
    )


def observation_content(
    observation: Any, options: ImageOptions, element_list_heading: str | None = None
) -> tuple[str | list[dict[str, Any]], tuple[tuple[int, int], tuple[int, int]] | None]:
    """A user turn's content for ``observation`` and, when it carries an image, (screen size, size sent).

    The observation's text, or (screenshot modes, an observation with a ``"screenshot"``) its
    image part and text part: the text without the element list (after ``element_list_heading``)
    in ``"screenshot"`` mode, with the scale note when the image was scaled down.
    """
    text = observation_text(observation)
    pixels = observation.get("screenshot") if isinstance(observation, dict) else None
    if not options.images or not isinstance(pixels, np.ndarray) or pixels.ndim != 3:
        return text, None
    url, sent = encode_screenshot(pixels, options)
    screen = (int(pixels.shape[1]), int(pixels.shape[0]))
    if options.mode == "screenshot":
        text = without_element_list(text, element_list_heading)
    note = scale_note(screen, sent)
    text = f"{text}\n{note}" if text and note else text or note
    return ([image_part(url), text_part(text)] if text else [image_part(url)]), (screen, sent)


def without_element_list(text: str, heading: str | None) -> str:
    """``text`` up to the env's element-list heading (e.g. a browser's ``"Page:\\n"``), or all of it."""
    if not heading:
        return text
    at = text.find(heading)  # the list ends the text; the first heading starts it
    return text if at < 0 else text[:at].rstrip()


def is_image_part(part: Any) -> bool:
    """Whether ``part`` is an ``image_url`` content part."""
    return isinstance(part, Mapping) and part.get("type") == "image_url"


def image_url(part: Mapping[str, Any]) -> str:
    """The URL of an ``image_url`` part (``image_url`` may be the URL itself, as some clients send it)."""
    value = part.get("image_url")
    url = value.get("url") if isinstance(value, Mapping) else value
    if not isinstance(url, str):
        raise ImageError(f"an image_url part needs image_url.url as a string, got {str(value)[:80]!r}")
    return url


def count_images(messages: Iterable[Mapping[str, Any]]) -> int:
    """How many image parts ``messages`` hold."""
    return sum(1 for message in messages for part in _parts(message) if is_image_part(part))


def elide_images(messages: list[Message], keep: int | None) -> list[Message]:
    """``messages`` with all but the last ``keep`` images replaced by :data:`ELIDED_IMAGE` (None keeps all).

    Messages holding an elided image are copies; the others are the same dicts.
    """
    if keep is None:
        return messages
    drop = count_images(messages) - keep
    return replace_images(messages, [None] * max(drop, 0)) if drop > 0 else messages


def replace_images(messages: list[Message], urls: Iterable[str | None]) -> list[Message]:
    """``messages`` with their images, first to last, given the next of ``urls`` (None: the text
    :data:`ELIDED_IMAGE`); images past the end of ``urls`` stay. Changed messages are copies."""
    pending = iter(urls)
    result = []
    for message in messages:
        content = message.get("content")
        if not isinstance(content, list) or not any(is_image_part(part) for part in content):
            result.append(message)
            continue
        parts = []
        for part in content:
            url = next(pending, ...) if is_image_part(part) else ...
            if url is ...:
                parts.append(part)
            else:
                parts.append(text_part(ELIDED_IMAGE) if url is None else image_part(url))
        result.append({**message, "content": parts})
    return result


def content_text(content: Any) -> str:
    """The text of a message's content: the string, or its text parts joined (images left out)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part["text"] for part in content if isinstance(part, Mapping) and part.get("type") == "text")
    return ""


def decode_image(url: str, max_bytes: int | None = None, max_pixels: int | None = None) -> Any:
    """The RGB ``PIL.Image`` of a ``data:image/...;base64,`` URL; :class:`ImageError` says what is wrong.

    ``max_bytes`` and ``max_pixels`` default to :data:`MAX_IMAGE_BYTES` and :data:`MAX_IMAGE_PIXELS`.
    """
    from PIL import Image, UnidentifiedImageError

    max_bytes = MAX_IMAGE_BYTES if max_bytes is None else max_bytes
    max_pixels = MAX_IMAGE_PIXELS if max_pixels is None else max_pixels

    if not url.startswith("data:"):
        raise ImageError(f"images must be data URLs (data:image/png;base64,...), got {url[:40]!r}")
    header, comma, payload = url.partition(",")
    if not comma or not header.endswith(";base64"):
        raise ImageError(f"an image data URL must be base64 encoded (data:image/...;base64,...), got {header[:40]!r}")
    if len(payload) > max_bytes * 4 // 3 + 4:
        raise ImageError(f"the image is larger than {max_bytes} bytes")
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError) as error:
        raise ImageError(f"the image data is not valid base64: {error}") from None
    try:
        image = Image.open(io.BytesIO(data))
        if image.width * image.height > max_pixels:
            raise ImageError(f"the image has {image.width}x{image.height} pixels; at most {max_pixels} are taken")
        image.load()
    except (UnidentifiedImageError, OSError, SyntaxError, Image.DecompressionBombError) as error:
        raise ImageError(f"the data is not a readable image: {error}") from None
    return image.convert("RGB")


def _parts(message: Mapping[str, Any]) -> list[Any]:
    content = message.get("content")
    return content if isinstance(content, list) else []


def screenshot_kwargs(env_id: str) -> dict[str, Any]:
    """The ``gym.make`` keyword arguments that make ``env_id`` render screenshots.

    ``{"screenshot": True}`` where the env's class takes that switch (the browser families),
    else ``{}`` (the env always renders them, like Desktop-v0, or never does, like text envs).
    Imports the env's module, as ``gym.make`` would.
    """
    return {"screenshot": True} if takes_keyword(env_id, "screenshot") else {}


def takes_keyword(env_id: str, keyword: str) -> bool:
    """Whether ``env_id``'s entry point takes the keyword argument ``keyword`` (its class's ``__init__``
    or a base's, where a class passes it on in ``**kwargs``). Imports the env's module."""
    import inspect

    from gymnasium.envs.registration import load_env_creator

    from agentgym.contract.registry import env_info

    creator = load_env_creator(env_info(env_id).entry_point)
    functions = [cls.__init__ for cls in creator.__mro__] if isinstance(creator, type) else [creator]
    for function in functions:
        try:
            if keyword in inspect.signature(function).parameters:
                return True
        except (TypeError, ValueError):
            continue
    return False
