"""Configuration: one settings class read from the environment (names in DESIGN.md)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Annotated, Literal

import platformdirs
from pydantic import AliasChoices, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

__all__ = ["Settings"]

Backend = Literal["auto", "anthropic", "sampling", "extractive"]
Role = Literal["planner", "executor", "extractor", "synthesizer", "scout"]


def _default_home() -> Path:
    return Path(platformdirs.user_data_dir("research-mcp", appauthor=False))


class Settings(BaseSettings):
    """Every setting the server reads. Environment names are given by each field's alias."""

    # Aliases only: field names like "home" must not pick up unrelated variables such as HOME.
    model_config = SettingsConfigDict(extra="ignore")

    home: Path = Field(default_factory=_default_home, validation_alias="RESEARCH_MCP_HOME")
    model: Backend = Field(default="auto", validation_alias="RESEARCH_MCP_MODEL")

    anthropic_api_key: SecretStr | None = Field(default=None, validation_alias="ANTHROPIC_API_KEY")
    anthropic_base_url: str | None = Field(default=None, validation_alias="ANTHROPIC_BASE_URL")
    anthropic_model: str = Field(default="claude-sonnet-4-6", validation_alias="RESEARCH_MCP_ANTHROPIC_MODEL")
    # Per-role override, e.g. "extractor=claude-haiku-4-5,scout=claude-haiku-4-5".
    role_models: Annotated[dict[str, str], NoDecode] = Field(
        default_factory=dict, validation_alias="RESEARCH_MCP_ROLE_MODELS"
    )

    tavily_api_key: SecretStr | None = Field(default=None, validation_alias="TAVILY_API_KEY")
    tavily_api_base_url: str | None = Field(default=None, validation_alias="TAVILY_API_BASE_URL")

    corpus: Annotated[list[Path], NoDecode] = Field(
        default_factory=list, validation_alias="RESEARCH_MCP_CORPUS"
    )
    fetch_allow: Annotated[frozenset[str], NoDecode] = Field(
        default_factory=frozenset, validation_alias="RESEARCH_MCP_FETCH_ALLOW"
    )
    # Seconds a page fetch (redirects included) or one web-search request may take before it fails.
    source_timeout: float = Field(default=20.0, gt=0, le=600, validation_alias="RESEARCH_MCP_SOURCE_TIMEOUT")
    # Seconds between two rescans of the corpus folders while the server runs (0: only at start).
    corpus_rescan: float = Field(default=60.0, ge=0, validation_alias="RESEARCH_MCP_CORPUS_RESCAN")

    qdrant_url: str | None = Field(default=None, validation_alias="QDRANT_URL")
    qdrant_api_key: SecretStr | None = Field(default=None, validation_alias="QDRANT_API_KEY")
    # Seconds a process waits for the embedded vector folder while another research-mcp process on the
    # same data folder uses it, before going on with full-text search only for a while.
    index_wait: float = Field(default=10.0, ge=0, le=600, validation_alias="RESEARCH_MCP_INDEX_WAIT")

    # Web pages older than this are read again, and facts from them are not reused until they are.
    web_max_age_days: float = Field(default=7.0, gt=0, validation_alias="RESEARCH_MCP_WEB_MAX_AGE_DAYS")
    # Runs finished longer ago than this are deleted by `research-mcp prune` (None: kept for ever).
    retention_days: float | None = Field(default=None, gt=0, validation_alias="RESEARCH_MCP_RETENTION_DAYS")

    # A protocol task (a run started as one) is kept as a task this long at most; a client's shorter
    # `ttl` is honoured. Past it, tasks/get and tasks/list no longer know it; the run stays.
    task_retention_days: float = Field(
        default=30.0, gt=0, validation_alias="RESEARCH_MCP_TASK_RETENTION_DAYS"
    )

    # `serve --http`: the bearer token every request must carry (required beyond loopback), and extra
    # Host header names to accept, e.g. the public name a reverse proxy forwards.
    http_token: SecretStr | None = Field(default=None, validation_alias="RESEARCH_MCP_HTTP_TOKEN")
    # A token per user, "name=token,name=token": each caller's plans, runs and tasks are their own.
    http_tokens: Annotated[dict[str, SecretStr], NoDecode] = Field(
        default_factory=dict, validation_alias="RESEARCH_MCP_HTTP_TOKENS"
    )
    http_allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=list, validation_alias="RESEARCH_MCP_HTTP_ALLOWED_HOSTS"
    )

    # execute_plan asks a client that supports elicitation before a run starts; false for unattended use.
    ask_before_run: bool = Field(default=True, validation_alias="RESEARCH_MCP_ASK_BEFORE_RUN")

    concurrency: int = Field(default=4, ge=1, le=64, validation_alias="RESEARCH_MCP_CONCURRENCY")
    # Model calls of plan_research at once, on slots of their own: planning never queues behind the
    # background runs' calls. Twice as many plan_research calls may be under way (the rest wait for a
    # slot); past that, plan_research answers at once that the server is at capacity.
    planning_slots: int = Field(default=2, ge=1, le=64, validation_alias="RESEARCH_MCP_PLANNING_SLOTS")
    # The scout's sweep (its searches and site crawls) stops when this box closes (roles/sweep.py).
    sweep_seconds: float = Field(default=60.0, gt=0, le=600, validation_alias="RESEARCH_MCP_SWEEP_SECONDS")
    # The tokens the scout's quick scans of its top candidates may spend (roles/quick_scan.py); 0: none.
    sweep_tokens: int = Field(
        default=10_000, ge=0, le=1_000_000, validation_alias="RESEARCH_MCP_SWEEP_TOKENS"
    )
    wait_seconds: float = Field(
        default=45.0, gt=0, le=55, validation_alias=AliasChoices("RESEARCH_MCP_WAIT_SECONDS")
    )
    # Insights matched to a leaf's questions by meaning (the knowledge index) as well as by terms
    # (runs/prior.py). Off by default: on, the realdocs held-out answer recall fell (BENCHMARKS.md).
    insight_vectors: bool = Field(default=False, validation_alias="RESEARCH_MCP_INSIGHT_VECTORS")

    @field_validator("role_models", mode="before")
    @classmethod
    def _parse_role_models(cls, value: object) -> object:
        if isinstance(value, str):
            pairs = [item.split("=", 1) for item in value.split(",") if item.strip()]
            bad = [item for item in pairs if len(item) != 2]
            if bad:
                raise ValueError("RESEARCH_MCP_ROLE_MODELS takes role=model pairs separated by commas")
            return {role.strip(): model.strip() for role, model in pairs}
        return value

    @field_validator("http_token", mode="before")
    @classmethod
    def _empty_token_is_none(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("http_tokens", mode="before")
    @classmethod
    def _parse_tokens(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        tokens: dict[str, str] = {}
        for item in (part.strip() for part in value.split(",")):
            name, equals, token = item.partition("=")
            if not item:
                continue
            if not equals or not name.strip() or not token.strip():
                raise ValueError("RESEARCH_MCP_HTTP_TOKENS takes name=token pairs separated by commas")
            if name.strip() in tokens:
                raise ValueError(f"RESEARCH_MCP_HTTP_TOKENS names {name.strip()!r} twice")
            tokens[name.strip()] = token.strip()
        if len(set(tokens.values())) < len(tokens):
            raise ValueError("RESEARCH_MCP_HTTP_TOKENS gives two users the same token")
        return tokens

    @field_validator("http_allowed_hosts", mode="before")
    @classmethod
    def _parse_allowed_hosts(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip().lower() for part in value.split(",") if part.strip()]
        return value

    @field_validator("corpus", mode="before")
    @classmethod
    def _parse_corpus(cls, value: object) -> object:
        if isinstance(value, str):
            import os

            return [Path(part).expanduser() for part in value.split(os.pathsep) if part.strip()]
        return value

    @field_validator("fetch_allow", mode="before")
    @classmethod
    def _parse_fetch_allow(cls, value: object) -> object:
        if isinstance(value, str):
            return frozenset(part.strip().lower() for part in value.split(",") if part.strip())
        return value

    @property
    def anthropic_key(self) -> str | None:
        """The Anthropic API key, stripped; None when ANTHROPIC_API_KEY is unset or blank."""
        key = self.anthropic_api_key.get_secret_value().strip() if self.anthropic_api_key else ""
        return key or None

    @property
    def database_path(self) -> Path:
        return self.home / "research.db"

    @property
    def vectors_path(self) -> Path:
        """The embedded vector engine's folder (Qdrant Edge shards)."""
        return self.home / "vectors"

    @property
    def legacy_qdrant_path(self) -> Path:
        """Where releases before 0.2 kept vectors (qdrant-client's local mode); removed once migrated."""
        return self.home / "qdrant"

    @property
    def web_max_age(self) -> timedelta:
        return timedelta(days=self.web_max_age_days)

    def model_for(self, role: str) -> str:
        """The Anthropic model a role uses."""
        return self.role_models.get(role, self.anthropic_model)
