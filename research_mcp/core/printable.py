"""One sanitiser for text bound for a terminal: what a document, a file name, a page or an upstream
wrote is shown as text, never obeyed as a terminal command.

A terminal acts on control characters and the escape sequences they begin: OSC 52 (``ESC ] 52 ; c ;
<base64> BEL``) sets the clipboard in kitty, WezTerm, iTerm2, Windows Terminal and tmux; OSC 8 makes
a link whose target the text does not show; OSC 0 sets the window title; CSI ``2J`` clears the
screen; a carriage return or a backspace overwrites what was printed. :func:`printable` drops them:

- the string sequences (OSC, DCS, SOS, PM, APC, 7-bit ``ESC ]`` or 8-bit ``\\x9d``), whole, up to
  their BEL or ST terminator; an unterminated one loses its introducer, so its payload shows as text;
- CSI sequences (``ESC [`` or ``\\x9b``), whole, and any other ``ESC`` with the character after it;
- every other C0 and C1 control character and DEL, except newline and tab (``\\r\\n`` becomes ``\\n``);
- lone surrogates (a file name that is not UTF-8) become U+FFFD, which every stream can encode;
- what reorders or hides text without showing itself: bidi overrides, embeddings, isolates and marks
  (``invoice\u202egpj.exe`` shows as ``invoiceexe.jpg``; Trojan Source), zero-width spaces, word
  joiners, invisible operators, byte-order marks, and tag characters (U+E0000-E007F, which spell
  words a model reads and a reader does not see). A zero-width joiner or non-joiner stays between two
  characters beyond ASCII, where emoji sequences and Persian or Indic words need it.

Every CLI string that came from outside passes through it, and :class:`PrintableFilter` does the same
to every log record on the handlers it is attached to (``redaction.redact_logs`` attaches both). The
filter also bounds what a record echoes (``errors.bounded``): a run without spaces longer than twice
80 characters (an address, a path, an id a caller sent) keeps its first 80, and a message or argument
at most LOG_LIMIT characters, so a 1.9 MB argument never becomes a 1.9 MB log line.
"""

from __future__ import annotations

import logging
import re

from research_mcp.core.errors import bounded

__all__ = ["LOG_LIMIT", "PrintableFilter", "printable"]

#: Characters of a log record's message, of each of its arguments, and of a traceback kept at most.
LOG_LIMIT = 4_000
TRACEBACK_LIMIT = 20_000

_STRING_SEQUENCE = re.compile(r"(?:\x1b[\]P_^X]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)")
_CSI = re.compile(r"(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]")
_OTHER_ESCAPE = re.compile(r"\x1b[\x20-\x7e]?")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_INVISIBLE = re.compile(
    "[\u061c\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f]"
    "|(?<![^\x00-\x7f])[\u200c\u200d]|[\u200c\u200d](?![^\x00-\x7f])"
)
_ANY = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064"
    "\u2066-\u2069\ufeff\U000e0000-\U000e007f]"
)


def printable(text: str) -> str:
    """``text`` with every terminal control sequence, control character but newline and tab, and
    character that reorders or hides text gone."""
    if not _ANY.search(text):
        return text
    text = text.replace("\r\n", "\n")
    for pattern in (_STRING_SEQUENCE, _CSI, _OTHER_ESCAPE, _CONTROL, _INVISIBLE):
        text = pattern.sub("", text)
    return _SURROGATE.sub("\ufffd", text)


class PrintableFilter(logging.Filter):
    """A handler filter that makes each record's message, arguments and traceback printable.

    The arguments keep their shape (a formatter such as uvicorn's access log unpacks them): strings
    are sanitised in place, numbers are left as they are.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            # A format string is only made printable: cutting it could leave a '%' without its argument.
            record.msg = printable(record.msg) if record.args else _logged(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(_printable_arg(arg) for arg in record.args)
        elif isinstance(record.args, dict):
            record.args = {key: _printable_arg(value) for key, value in record.args.items()}
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = bounded(printable(record.exc_text), limit=TRACEBACK_LIMIT)
        if record.stack_info:
            record.stack_info = printable(record.stack_info)
        return True


def _logged(text: str) -> str:
    return bounded(printable(text), limit=LOG_LIMIT)


def _printable_arg(value: object) -> object:
    if isinstance(value, str):
        return _logged(value)
    if value is None or isinstance(value, int | float):
        return value
    text = str(value)
    return value if _logged(text) == text else _logged(text)
