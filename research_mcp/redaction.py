"""One redaction layer: configured secrets never leave in text that came from an upstream.

An upstream (the Anthropic API, the host's model, Tavily, a web page, a Qdrant server) may echo
a key back: in an error body, in a page, in a search result. Every such text passes through a
`Redactor` before it is stored, logged, returned to the host or put into a prompt:

    redact = Redactor.from_settings(settings)   # ANTHROPIC_API_KEY, TAVILY_API_KEY, QDRANT_API_KEY,
    redact("invalid key sk-ant-...")            # RESEARCH_MCP_HTTP_TOKEN
    -> "invalid key [redacted]"

A secret is replaced wherever it occurs whole, and so is any run of at least `MIN_ECHO` of its
leading or trailing characters (an echo cut short, "sk-ant-api03-AbCd…", still gives half a key
away). Values shorter than `MIN_SECRET` are not treated as secrets: replacing them would garble
ordinary text, and no real key is that short.

`RedactingFilter` does the same to every log record (message, arguments, traceback) on the
handlers it is attached to; `redact_logs` attaches it to every handler configured so far.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from research_mcp.config import Settings

__all__ = ["MARK", "MIN_ECHO", "MIN_SECRET", "RedactingFilter", "Redactor", "redact_logs"]

MARK = "[redacted]"
MIN_SECRET = 8  # shorter configured values are not redacted
MIN_ECHO = 16  # a run of this many leading or trailing characters of a secret is redacted too


class Redactor:
    """Replaces configured secrets (and long runs of their first or last characters) with `MARK`."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        kept = {secret.strip() for secret in secrets if secret and len(secret.strip()) >= MIN_SECRET}
        self.secrets: tuple[str, ...] = tuple(sorted(kept, key=len, reverse=True))

    @classmethod
    def from_settings(cls, settings: Settings) -> Redactor:
        return cls(
            value.get_secret_value()
            for value in (
                settings.anthropic_api_key,
                settings.tavily_api_key,
                settings.qdrant_api_key,
                settings.http_token,
            )
            if value is not None
        )

    def __bool__(self) -> bool:
        return bool(self.secrets)

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            if secret[:MIN_ECHO] in text or secret[-MIN_ECHO:] in text:
                text = _scrub(text, secret)
        return text

    def value(self, value: Any) -> Any:
        """`value` with every string in it redacted (dicts, lists and tuples walked)."""
        if not self.secrets:
            return value
        if isinstance(value, str):
            return self(value)
        if isinstance(value, dict):
            return {self.value(key): self.value(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self.value(item) for item in value)
        return value

    def count(self, text: str | bytes) -> int:
        """How many times a secret (whole) occurs in `text`: 0 is the goal."""
        if isinstance(text, bytes):
            return sum(text.count(secret.encode()) for secret in self.secrets)
        return sum(text.count(secret) for secret in self.secrets)


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
    """A handler filter that redacts each record's message, arguments and traceback text."""

    def __init__(self, redact: Callable[[str], str]) -> None:
        super().__init__()
        self.redact = redact

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = self.redact(record.getMessage())
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        if record.stack_info:
            record.stack_info = self.redact(record.stack_info)
        return True


def redact_logs(redact: Redactor, logger: logging.Logger | None = None) -> Callable[[], None]:
    """Attach a `RedactingFilter` to every handler of `logger`, or, by default, to every handler
    configured so far (the root logger's, and those of loggers that do not propagate, such as
    uvicorn's); the returned function detaches them again."""
    if not redact:
        return lambda: None
    if logger is not None:
        handlers = list(logger.handlers)
    else:
        loggers = [logging.getLogger()] + [
            item
            for item in logging.getLogger().manager.loggerDict.values()
            if isinstance(item, logging.Logger)
        ]
        handlers = list(dict.fromkeys(handler for item in loggers for handler in item.handlers))
    log_filter = RedactingFilter(redact)
    for handler in handlers:
        handler.addFilter(log_filter)

    def detach() -> None:
        for handler in handlers:
            handler.removeFilter(log_filter)

    return detach
