"""research-mcp: a research team as MCP tools. `research-mcp serve` runs it; see README.md."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("research-mcp")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"

__all__ = ["__version__"]
