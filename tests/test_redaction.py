"""The redaction layer: configured secrets, whole or echoed in part, never pass."""

from __future__ import annotations

import io
import logging

import pytest

from research_mcp.core.config import Settings
from research_mcp.core.redaction import MARK, Redactor, redact_logs, weak_secrets

KEY = "sk-ant-api03-Xq7RkP2mWv9LtB4nYc8JhD3sFg6AzE1uKo5"
OTHER = "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"


def test_a_secret_is_replaced_wherever_it_occurs() -> None:
    redact = Redactor([KEY, OTHER])
    assert (
        redact(f"invalid x-api-key {KEY}; also {OTHER}.{KEY}")
        == f"invalid x-api-key {MARK}; also {MARK}.{MARK}"
    )


@pytest.mark.parametrize("cut", [16, 24, len(KEY) - 1])
def test_an_echo_cut_short_at_either_end_is_replaced_too(cut: int) -> None:
    redact = Redactor([KEY])
    assert redact(f"key {KEY[:cut]}… rejected") == f"key {MARK}… rejected"
    assert redact(f"key …{KEY[-cut:]} rejected") == f"key …{MARK} rejected"


def test_ordinary_text_and_short_runs_are_left_alone() -> None:
    redact = Redactor([KEY, "", None])
    text = f"a short text about sk-ant-api03 keys and {KEY[:15]}"
    assert redact(text) == text
    assert redact.secrets == (KEY,)


def test_a_value_of_four_to_seven_characters_is_redacted_only_as_a_whole_word() -> None:
    redact = Redactor(["test", "hunter2", "abc"])
    assert redact("invalid api key 'test' (hunter2); test-suite, testing, latest, test_1, hunter22") == (
        f"invalid api key '{MARK}' ({MARK}); test-suite, testing, latest, test_1, hunter22"
    )
    assert redact("key=test.") == f"key={MARK}."
    # Under four characters a value cannot be told from ordinary text: it is never redacted.
    assert redact("abc was rejected") == "abc was rejected"
    assert (redact.secrets, redact.words) == ((), ("hunter2", "test"))
    assert redact.count("test and hunter2, not testing") == 2


def test_the_server_warns_about_a_configured_secret_too_short_to_redact_everywhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("QDRANT_API_KEY", "qd42")
    monkeypatch.setenv("TAVILY_API_KEY", "ab")
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    warnings = weak_secrets(Settings())
    assert len(warnings) == 2
    assert (
        warnings[0].startswith("TAVILY_API_KEY is only 2 characters long") and "never redacted" in warnings[0]
    )
    assert warnings[1].startswith("QDRANT_API_KEY is only 4 characters long") and "whole word" in warnings[1]
    assert "qd42" not in " ".join(warnings)


def test_every_string_in_a_structured_answer_is_redacted() -> None:
    redact = Redactor([KEY])
    answer = {"facts": [{"statement": f"the key is {KEY}", "n": 3}], KEY: (KEY, None)}
    assert redact.value(answer) == {
        "facts": [{"statement": f"the key is {MARK}", "n": 3}],
        MARK: (MARK, None),
    }


def test_the_settings_name_the_four_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "ANTHROPIC_API_KEY": KEY,
        "TAVILY_API_KEY": OTHER,
        "QDRANT_API_KEY": "qd-Ue4Ri9Ow2Pa7Sd1Fg6Hj3Kl8Zx5Cv0Bn",
        "RESEARCH_MCP_HTTP_TOKEN": "tok-Mq2Wn7Eb4Rv9Tc1Yx6Ul3Io8Pz5As0Dk",
    }.items():
        monkeypatch.setenv(name, value)
    assert len(Redactor.from_settings(Settings()).secrets) == 4
    monkeypatch.delenv("RESEARCH_MCP_HTTP_TOKEN")
    for name in ("ANTHROPIC_API_KEY", "TAVILY_API_KEY", "QDRANT_API_KEY"):
        monkeypatch.delenv(name)
    assert not Redactor.from_settings(Settings())


def test_logs_are_redacted_in_message_arguments_and_tracebacks() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("research_mcp.test_redaction")
    logger.addHandler(handler)
    logger.propagate = False
    detach = redact_logs(Redactor([KEY]), logger)
    try:
        logger.warning("Anthropic said: %s", f"bad key {KEY}")
        try:
            raise ValueError(f"echoed {KEY}")
        except ValueError:
            logger.exception("failed")
        detach()
        logger.warning("after detach: %s", KEY[:20])
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
    text = stream.getvalue()
    assert KEY[:16] not in text.split("after detach")[0]
    assert f"Anthropic said: bad key {MARK}" in text
    assert f"ValueError: echoed {MARK}" in text  # the traceback's text too
    assert f"after detach: {KEY[:20]}" in text  # detached: the filter is gone


def test_by_default_every_configured_handler_is_covered_even_of_a_logger_that_does_not_propagate() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("research_mcp.test_redaction.uvicorn_like")
    logger.addHandler(handler)
    logger.propagate = False  # as uvicorn's loggers: the root's handlers never see these records
    detach = redact_logs(Redactor([KEY]))
    try:
        logger.error("request failed: %s", KEY)
    finally:
        detach()
        logger.removeHandler(handler)
    assert stream.getvalue() == f"request failed: {MARK}\n"
