"""Choosing the model backend: `RESEARCH_MCP_MODEL` or, under `auto`, the first that works."""

from __future__ import annotations

from typing import Any

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from research_mcp.core.config import Settings
from research_mcp.core.errors import NotConfigured
from research_mcp.core.redaction import Redactor
from research_mcp.llm.base import ModelBackend

__all__ = ["choose_backend", "client_can_sample"]


def client_can_sample(ctx: Any) -> bool:
    """The client declared sampling and the session has a back-channel for it."""
    if ctx is None:
        return False
    try:
        capabilities = ctx.client_capabilities
        version = ctx.protocol_version
    except ValueError:  # no request context
        return False
    return (
        capabilities is not None
        and capabilities.sampling is not None
        and version in HANDSHAKE_PROTOCOL_VERSIONS
    )


def choose_backend(
    settings: Settings, *, ctx: Any = None, anthropic: ModelBackend | None = None
) -> ModelBackend:
    """The backend for this call (`cli.doctor.backend_line` says why, for people)."""
    wanted = settings.model
    has_key = settings.anthropic_key is not None
    if wanted == "anthropic" or (wanted == "auto" and has_key):
        if not has_key:
            raise NotConfigured(
                "RESEARCH_MCP_MODEL=anthropic needs ANTHROPIC_API_KEY; set it, or use RESEARCH_MCP_MODEL=auto."
            )
        if anthropic is None:
            from research_mcp.llm.anthropic import AnthropicModel

            anthropic = AnthropicModel.from_settings(settings)
        return anthropic
    if wanted == "sampling" or (wanted == "auto" and client_can_sample(ctx)):
        if not client_can_sample(ctx):
            raise NotConfigured(
                "RESEARCH_MCP_MODEL=sampling needs a host that supports MCP sampling; this client does not. "
                "Use RESEARCH_MCP_MODEL=auto to fall back to the extractive backend."
            )
        from research_mcp.llm.sampling import SamplingModel

        return SamplingModel(ctx.session, redact=Redactor.from_settings(settings))
    from research_mcp.llm.embeddings import default_embedder
    from research_mcp.llm.extractive import ExtractiveModel

    return ExtractiveModel(default_embedder())
