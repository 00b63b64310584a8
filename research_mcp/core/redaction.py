"""One redaction layer: configured secrets never leave in text that came from an upstream.

An upstream (the Anthropic API, the host's model, Tavily, a web page, a Qdrant server) may echo
a key back: in an error body, in a page, in a search result. Every such text passes through a
`Redactor` before it is stored, logged, returned to the host or put into a prompt:

    redact = Redactor.from_settings(settings)   # ANTHROPIC_API_KEY, TAVILY_API_KEY, QDRANT_API_KEY,
    redact("invalid key sk-ant-...")            # RESEARCH_MCP_HTTP_TOKEN
    -> "invalid key [redacted]"

A secret is replaced wherever it occurs whole, and so is any run of at least `MIN_ECHO` of its
leading or trailing characters (an echo cut short, "sk-ant-api03-AbCd…", still gives half a key
away).

Short values are a different case: no issued key is shorter than `MIN_SECRET` (8) characters, but a
user may configure one (a self-chosen `QDRANT_API_KEY`, a placeholder). Replacing such a value inside
other words would garble ordinary text (a key `test` would turn "latest" into "la[redacted]"), so a
value of `MIN_WORD_SECRET` (4) to 7 characters is replaced only where it stands as a whole word (not
touching a letter, digit, `_` or `-`): an echo such as "invalid key 'test'" is still caught, and
"testing" or "latest" are left alone. A value under 4 characters is not redacted at all: it cannot be
told from ordinary text. `weak_secrets` names both kinds, and the server warns about them at start.

`RedactingFilter` does the same to every log record (message, arguments, traceback) on the
handlers it is attached to; `redact_logs` attaches it to every handler configured so far.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from research_mcp.core.printable import PrintableFilter

if TYPE_CHECKING:
    from research_mcp.core.config import Settings

__all__ = [
    "MARK",
    "MIN_ECHO",
    "MIN_SECRET",
    "MIN_WORD_SECRET",
    "RedactingFilter",
    "Redactor",
    "redact_logs",
    "weak_secrets",
]

MARK = "[redacted]"
MIN_SECRET = 8  # values this long are redacted wherever they occur
MIN_WORD_SECRET = 4  # values of 4-7 characters are redacted where they stand as a whole word; shorter, never
MIN_ECHO = 16  # a run of this many leading or trailing characters of a secret is redacted too
_WORD = r"[\w-]"  # what a whole-word secret must not touch on either side

SECRET_SETTINGS = ("anthropic_api_key", "tavily_api_key", "qdrant_api_key", "http_token")


class Redactor:
    """Replaces configured secrets (and long runs of their first or last characters) with `MARK`."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        values = {secret.strip() for secret in secrets if secret and secret.strip()}
        kept = {value for value in values if len(value) >= MIN_SECRET}
        self.secrets: tuple[str, ...] = tuple(sorted(kept, key=len, reverse=True))
        words = sorted((v for v in values if MIN_WORD_SECRET <= len(v) < MIN_SECRET), key=len, reverse=True)
        self.words: tuple[str, ...] = tuple(words)
        self._words = (
            re.compile(f"(?<!{_WORD})(?:{'|'.join(map(re.escape, words))})(?!{_WORD})") if words else None
        )

    @classmethod
    def from_settings(cls, settings: Settings) -> Redactor:
        return cls(_configured(settings).values())

    def __bool__(self) -> bool:
        return bool(self.secrets or self.words)

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            if secret[:MIN_ECHO] in text or secret[-MIN_ECHO:] in text:
                text = _scrub(text, secret)
        if self._words is not None:
            text = self._words.sub(MARK, text)
        return text

    def value(self, value: Any) -> Any:
        """`value` with every string in it redacted (dicts, lists and tuples walked)."""
        if not self:
            return value
        if isinstance(value, str):
            return self(value)
        if isinstance(value, dict):
            return {self.value(key): self.value(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self.value(item) for item in value)
        return value

    def count(self, text: str | bytes) -> int:
        """How many times a secret (whole; a short one as a whole word) occurs in `text`: 0 is the goal."""
        if isinstance(text, bytes):
            text = text.decode("utf-8", errors="replace")
        words = len(self._words.findall(text)) if self._words is not None else 0
        return sum(text.count(secret) for secret in self.secrets) + words


def _configured(settings: Settings) -> dict[str, str]:
    """The configured secrets by environment variable."""
    found = {}
    for name in SECRET_SETTINGS:
        value = getattr(settings, name)
        if value is not None:
            found[name.upper() if name != "http_token" else "RESEARCH_MCP_HTTP_TOKEN"] = (
                value.get_secret_value()
            )
    for user, token in settings.http_tokens.items():  # a token per user: each is a secret
        found[f"RESEARCH_MCP_HTTP_TOKENS ({user})"] = token.get_secret_value()
    return found


def weak_secrets(settings: Settings) -> list[str]:
    """A warning for each configured secret too short to be redacted everywhere (see the module docs)."""
    warnings = []
    for name, value in _configured(settings).items():
        size = len(value.strip())
        if MIN_WORD_SECRET <= size < MIN_SECRET:
            warnings.append(
                f"{name} is only {size} characters long, shorter than any real key: it is redacted only "
                "where it stands as a whole word, never inside other words"
            )
        elif 0 < size < MIN_WORD_SECRET:
            warnings.append(
                f"{name} is only {size} characters long: too short to tell from ordinary text, it is "
                "never redacted; use a longer value"
            )
    return warnings


def _scrub(text: str, secret: str) -> str:
    """`text` with `secret`, and runs of at least MIN_ECHO of its first or last characters, replaced."""
    text = text.replace(secret, MARK)
    if len(secret) <= MIN_ECHO:
        return text
    head, tail = secret[:MIN_ECHO], secret[-MIN_ECHO:]
    start = text.find(head)
    while start != -1:  # a leading run: extend it as far as it follows the secret
        end = start + MIN_ECHO
        while end < len(text) and end - start < len(secret) and text[end] == secret[end - start]:
            end += 1
        text = text[:start] + MARK + text[end:]
        start = text.find(head, start + len(MARK))
    end = text.find(tail)
    while end != -1:  # a trailing run: extend it backwards
        stop = end + MIN_ECHO
        begin = end
        offset = len(secret) - MIN_ECHO
        while begin > 0 and offset > 0 and text[begin - 1] == secret[offset - 1]:
            begin, offset = begin - 1, offset - 1
        text = text[:begin] + MARK + text[stop:]
        end = text.find(tail, begin + len(MARK))
    return text


class RedactingFilter(logging.Filter):
    """A handler filter that redacts each record's message, arguments and traceback text.

    The arguments keep their shape (uvicorn's access formatter unpacks five of them): each is redacted
    in place, and only a secret that the message and its arguments make up together collapses the
    record into its redacted message.
    """

    def __init__(self, redact: Callable[[str], str]) -> None:
        super().__init__()
        self.redact = redact

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = self.redact(record.msg)
        else:
            record.msg = self.redact(str(record.msg))
        if isinstance(record.args, tuple):
            record.args = tuple(self._argument(arg) for arg in record.args)
        elif isinstance(record.args, dict):
            record.args = {key: self._argument(value) for key, value in record.args.items()}
        message = record.getMessage()
        if self.redact(message) != message:  # a secret split between the message and an argument
            record.msg, record.args = self.redact(message), ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        if record.stack_info:
            record.stack_info = self.redact(record.stack_info)
        return True

    def _argument(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.redact(value)
        if value is None or isinstance(value, int | float):
            return value
        text = str(value)
        return (
            value
            if self.redact(text) == text and self.redact(repr(value)) == repr(value)
            else self.redact(text)
        )


def redact_logs(redact: Redactor, logger: logging.Logger | None = None) -> Callable[[], None]:
    """Attach a `PrintableFilter` (terminal controls dropped, ``printable.py``) and, when secrets are
    configured, a `RedactingFilter` to every handler of `logger`, or, by default, to every handler
    configured so far (the root logger's, and those of loggers that do not propagate, such as
    uvicorn's); the returned function detaches them again. Controls go first, so none can hide a
    secret from the redaction by splitting it."""
    if logger is not None:
        handlers = list(logger.handlers)
    else:
        loggers = [logging.getLogger()] + [
            item
            for item in logging.getLogger().manager.loggerDict.values()
            if isinstance(item, logging.Logger)
        ]
        handlers = list(dict.fromkeys(handler for item in loggers for handler in item.handlers))
    filters: list[logging.Filter] = [PrintableFilter()]
    if redact:
        filters.append(RedactingFilter(redact))
    for handler in handlers:
        for log_filter in filters:
            if not (
                isinstance(log_filter, PrintableFilter)
                and any(isinstance(held, PrintableFilter) for held in handler.filters)
            ):
                handler.addFilter(log_filter)

    def detach() -> None:
        for handler in handlers:
            for log_filter in filters:
                handler.removeFilter(log_filter)

    return detach
