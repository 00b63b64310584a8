"""What Anthropic model calls cost: USD per million tokens by model family, and prompt-cache multipliers.

Prices are the public list prices of the Claude API (platform.claude.com/docs/about-claude/pricing),
standard tier, for prompts within the standard context window. Prompt caching bills off the base
input price: a 5-minute cache write at 1.25x (the `ephemeral` cache this project uses), a cache
read at 0.1x. Batch discounts and long-context surcharges are not modelled: the figures are
estimates for budgets and reports, not invoices.

A model this table does not know is priced as Sonnet 4 and `pricing_note` says so.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CACHE_READ_MULTIPLIER",
    "CACHE_WRITE_MULTIPLIER",
    "FALLBACK_PRICE",
    "PRICES",
    "ModelPrice",
    "cost_usd",
    "price_for",
    "pricing_note",
]

CACHE_WRITE_MULTIPLIER = 1.25
"""A 5-minute (`ephemeral`) cache write, as a multiple of the base input price."""

CACHE_READ_MULTIPLIER = 0.1
"""A cache hit, as a multiple of the base input price."""

_PER_TOKEN = 1 / 1_000_000


@dataclass(frozen=True)
class ModelPrice:
    """List prices of one model family, USD per million tokens."""

    family: str
    input_per_mtok: float
    output_per_mtok: float
    cache_write_multiplier: float = CACHE_WRITE_MULTIPLIER
    cache_read_multiplier: float = CACHE_READ_MULTIPLIER


_OPUS_4 = ModelPrice("Claude Opus 4 / 4.1", 15.0, 75.0)
_OPUS_45 = ModelPrice("Claude Opus 4.5-4.8", 5.0, 25.0)
_SONNET_4 = ModelPrice("Claude Sonnet 4.x", 3.0, 15.0)
_HAIKU_45 = ModelPrice("Claude Haiku 4.5", 1.0, 5.0)

PRICES: dict[str, ModelPrice] = {
    # Keys are model-id prefixes; the longest key that matches at a "-" boundary wins, so
    # "claude-opus-4-5-20251101" is Opus 4.5 while "claude-opus-4-20250514" is Opus 4.
    "claude-opus-4": _OPUS_4,
    "claude-opus-4-0": _OPUS_4,
    "claude-opus-4-1": _OPUS_4,
    "claude-opus-4-5": _OPUS_45,
    "claude-opus-4-6": _OPUS_45,
    "claude-opus-4-7": _OPUS_45,
    "claude-opus-4-8": _OPUS_45,
    "claude-sonnet-4": _SONNET_4,
    "claude-sonnet-4-0": _SONNET_4,
    "claude-sonnet-4-5": _SONNET_4,
    "claude-sonnet-4-6": _SONNET_4,
    "claude-haiku-4-5": _HAIKU_45,
    "claude-opus-5": ModelPrice("Claude Opus 5", 5.0, 25.0),
    "claude-sonnet-5": ModelPrice("Claude Sonnet 5", 2.0, 10.0),
}

FALLBACK_PRICE = _SONNET_4


def _normalise(model: str) -> str:
    """The first-party id inside a provider-specific one ("us.anthropic.claude-…-v1:0", "claude-…@date")."""
    model = model.strip().lower().replace("@", "-")
    start = model.find("claude-")
    return model[start:] if start >= 0 else model


def price_for(model: str) -> ModelPrice | None:
    """The list prices of `model`, or None when this table does not know it."""
    name = _normalise(model)
    matches = [key for key in PRICES if name == key or name.startswith(key + "-")]
    # "claude-sonnet-5-5" must not fall back to Sonnet 5: a newer minor version is not priced by guess.
    exact_family = [key for key in matches if not _is_newer_minor(name, key)]
    if not exact_family:
        return None
    return PRICES[max(exact_family, key=len)]


def _is_newer_minor(name: str, key: str) -> bool:
    """True when `name` continues `key` with a one-digit minor version (key "claude-sonnet-5", name "…-5-5").

    Dated snapshots ("-20250514") and the "-0" alias are not minor versions.
    """
    rest = name[len(key) :].lstrip("-").split("-", 1)[0]
    return rest.isdigit() and len(rest) == 1 and rest != "0"


def pricing_note(model: str) -> str | None:
    """A note for reports when `model`'s cost is only an estimate at fallback prices, else None."""
    if price_for(model) is not None:
        return None
    return (
        f"No list price on file for model {model!r}; its cost is estimated at {FALLBACK_PRICE.family} "
        f"prices (${FALLBACK_PRICE.input_per_mtok:g}/${FALLBACK_PRICE.output_per_mtok:g} per million "
        f"input/output tokens)."
    )


def cost_usd(model: str, tokens_in: int, tokens_out: int, cache_read: int = 0, cache_write: int = 0) -> float:
    """The cost of one call in USD.

    `tokens_in` counts uncached input tokens only (the API's `input_tokens`); `cache_read` and
    `cache_write` are the API's `cache_read_input_tokens` and `cache_creation_input_tokens`.
    """
    price = price_for(model) or FALLBACK_PRICE
    input_rate = price.input_per_mtok * _PER_TOKEN
    return (
        tokens_in * input_rate
        + cache_read * input_rate * price.cache_read_multiplier
        + cache_write * input_rate * price.cache_write_multiplier
        + tokens_out * price.output_per_mtok * _PER_TOKEN
    )
