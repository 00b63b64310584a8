"""Choosing the model backend: `RESEARCH_MCP_MODEL` or, under `auto`, the first that works."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from research_mcp.config import Settings
from research_mcp.errors import NotConfigured
from research_mcp.llm.base import ModelBackend

__all__ = ["BackendChoice", "choose_backend", "client_can_sample"]


@dataclass
class BackendChoice:
    backend: ModelBackend
    reason: str


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
) -> BackendChoice:
    """The backend for this call, and why it was chosen."""
    wanted = settings.model
    has_key = settings.anthropic_api_key is not None and bool(settings.anthropic_api_key.get_secret_value())
    if wanted == "anthropic" or (wanted == "auto" and has_key):
        if not has_key:
            raise NotConfigured(
                "RESEARCH_MCP_MODEL=anthropic needs ANTHROPIC_API_KEY; set it, or use RESEARCH_MCP_MODEL=auto."
            )
        if anthropic is None:
            from research_mcp.llm.anthropic import AnthropicModel

            anthropic = AnthropicModel.from_settings(settings)
        reason = "ANTHROPIC_API_KEY is set" if wanted == "auto" else "RESEARCH_MCP_MODEL=anthropic"
        return BackendChoice(anthropic, reason)
    if wanted == "sampling" or (wanted == "auto" and client_can_sample(ctx)):
        if not client_can_sample(ctx):
            raise NotConfigured(
                "RESEARCH_MCP_MODEL=sampling needs a host that supports MCP sampling; this client does not. "
                "Use RESEARCH_MCP_MODEL=auto to fall back to the extractive backend."
            )
        from research_mcp.llm.sampling import SamplingModel

        reason = (
            "no API key; the host supports sampling" if wanted == "auto" else "RESEARCH_MCP_MODEL=sampling"
        )
        return BackendChoice(SamplingModel(ctx.session), reason)
    from research_mcp.llm.embeddings import default_embedder
    from research_mcp.llm.extractive import ExtractiveModel

    reason = "no API key and no sampling host" if wanted == "auto" else "RESEARCH_MCP_MODEL=extractive"
    return BackendChoice(ExtractiveModel(default_embedder()), reason)
