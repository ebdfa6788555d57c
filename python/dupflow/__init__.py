"""Near-duplicate detection for web crawls and text corpora, from Python.

The engine is dupflow's own (Rust, the same pipeline as the ``dupflow`` command): sentences are
normalized and hashed, pages sharing a fingerprint become candidates, and candidates are
verified by the longest common subsequence of their non-template sentences. A document's
cluster is named by the key (id or URL) of its anchor: a member chosen by a hash of its key,
so the name does not depend on the order documents came in, and a document joining or leaving
a cluster of n renames it with probability ~1/n.

Three ways in:

- :func:`cluster_texts` / :func:`cluster_html`: a batch over an iterable of records, returning
  each record's cluster.
- :func:`cluster_files`: a batch over WARC or JSONL files, on several threads.
- :class:`Index`: incremental; ``add``, ``remove``, then ``changes()`` says which documents moved
  between clusters; ``check(text)`` says how much of a text the index already holds.

Configuration is dupflow's ``pipeline.toml`` (a path, or its text as ``config_text``); the
defaults are those of the command.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

from . import _native

__all__ = [
    "Change",
    "CheckResult",
    "ClusterRow",
    "Index",
    "check",
    "cluster_files",
    "cluster_html",
    "cluster_texts",
    "dedup",
]

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class Change:
    """A document that moved between clusters at a commit.

    ``before`` is ``None`` for a new document, ``after`` is ``None`` for one that left.
    Clusters are named by the key of their anchor (a member chosen by a hash of its key).
    """

    key: str
    before: Optional[str]
    after: Optional[str]


@dataclass(frozen=True)
class ClusterRow:
    """One page of a :func:`cluster_files` run."""

    url: str
    """The page's URL (WARC) or id (JSONL)."""
    record_id: str
    cluster: str
    """The URL or id of the cluster's anchor (a member chosen by a hash of URL and record id)."""
    leader: str
    """The page it was verified against (itself for a page that joined through none)."""
    similarity: float
    """Resemblance to ``leader`` (1.0 for itself)."""


@dataclass(frozen=True)
class CheckResult:
    """How much of a document a corpus already holds (:meth:`Index.check`, :func:`check`).

    Its fields are also read by name, as a dict's: ``result["share"]``.
    """

    share: float
    """The weight of the document's sentences found in the corpus over its weight (template
    sentences left out)."""
    verdict: str
    """``"duplicate"`` when ``share`` reaches ``threshold``, else ``"new"``."""
    threshold: float
    sentences: int
    duplicate_sentences: int
    spans: List[Dict[str, Any]]
    """Runs of consecutive sentences first seen on one corpus document: ``from``, ``to``
    (sentence offsets), ``first_url``."""
    cover: List[Dict[str, Any]]
    """The fewest corpus documents that hold the duplicated sentences, greedily: ``url``,
    ``sentences``, ``share``."""
    patchwork: bool
    """More than one document is needed to cover the duplicated sentences."""
    corpus_pages: int

    def __getitem__(self, name: str) -> Any:
        return getattr(self, name)

    @classmethod
    def _of(cls, report: Dict[str, Any]) -> "CheckResult":
        names = cls.__dataclass_fields__.keys()
        return cls(**{name: report[name] for name in names})


class Index:
    """An incremental near-duplicate index.

    Documents are keyed by id; adding an id again replaces its document. Nothing is computed
    until :meth:`changes` (or :meth:`clusters`) commits the pending additions and removals.
    An index is a context manager: leaving the ``with`` block closes it (:meth:`close`).

    >>> flood = ("The river flooded the valley after three days of heavy rain in early spring. "
    ...          "Farmers moved their cattle to the hills and waited for the water to fall. "
    ...          "By the end of the month the fields were green again and the roads were open.")
    >>> with Index() as index:
    ...     index.add("a", flood)
    ...     index.add("b", flood.replace("three days", "four days"))
    ...     index.changes()
    [Change(key='a', before=None, after='a'), Change(key='b', before=None, after='a')]
    """

    def __init__(self, config: Optional[PathLike] = None, *, config_text: Optional[str] = None) -> None:
        self._engine: Any = _native.Index(os.fspath(config) if config is not None else None, config_text)
        self._pending = False

    @property
    def _native(self) -> Any:
        if self._engine is None:
            raise ValueError("the index is closed")
        return self._engine

    def close(self) -> None:
        """Frees the index's engine (its documents and dataflow); using it afterwards raises
        ``ValueError``. Closing twice is allowed."""
        self._engine = None

    @property
    def closed(self) -> bool:
        return self._engine is None

    def __enter__(self) -> "Index":
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def add(self, key: str, text: str, url: Optional[str] = None) -> None:
        """Adds (or replaces) a plain-text document under ``key``. Lines are blocks; ``url``, if
        given, groups documents by host so that a site's boilerplate counts as template."""
        self._native.add(str(key), text, url)
        self._pending = True

    def add_html(self, url: str, html: str) -> None:
        """Adds (or replaces) an HTML page, keyed by its URL, stripped as crawled pages are."""
        self._native.add_html(url, html)
        self._pending = True

    def remove(self, key: str) -> bool:
        """Removes a document; ``False`` if the index has none with this key."""
        removed = self._native.remove(str(key))
        self._pending = self._pending or removed
        return removed

    def changes(self) -> List[Change]:
        """Commits what was added and removed since the last call; returns the documents whose
        cluster changed (sorted by key)."""
        self._pending = False
        return [Change(key, before, after) for key, before, after in self._native.changes()]

    def clusters(self) -> Dict[str, str]:
        """Each document's cluster (the key of its anchor), committing first."""
        if self._pending:
            self.changes()
        return self._native.clusters()

    def check(self, text: str, threshold: float = 0.5) -> CheckResult:
        """How much of ``text`` (plain text or HTML) the index already holds: ``share`` (of its
        sentence weight found in indexed documents, templates left out), ``verdict``
        (``"duplicate"`` above ``threshold``, else ``"new"``), the duplicated ``spans`` and the
        documents that ``cover`` them."""
        return CheckResult._of(json.loads(self._native.check(text, float(threshold))))

    def __len__(self) -> int:
        return len(self._native)


def cluster_texts(
    records: Iterable[Tuple[str, str]],
    config: Optional[PathLike] = None,
    *,
    config_text: Optional[str] = None,
) -> Dict[str, str]:
    """Clusters ``(id, text)`` records; returns each id's cluster (the id of its anchor, a
    member chosen by a hash of its id). A repeated id replaces its earlier record."""
    index = Index(config, config_text=config_text)
    for key, text in records:
        index.add(key, text)
    return index.clusters()


def cluster_html(
    records: Iterable[Tuple[str, str]],
    config: Optional[PathLike] = None,
    *,
    config_text: Optional[str] = None,
) -> Dict[str, str]:
    """Clusters ``(url, html)`` records; returns each URL's cluster (its anchor's URL)."""
    index = Index(config, config_text=config_text)
    for url, html in records:
        index.add_html(url, html)
    return index.clusters()


def cluster_files(
    paths: Iterable[PathLike],
    config: Optional[PathLike] = None,
    *,
    config_text: Optional[str] = None,
    workers: int = 2,
) -> List[ClusterRow]:
    """Runs the pipeline over WARC files (or JSONL corpora, or directories and globs of them)
    on ``workers`` threads, as ``dupflow run`` does; returns one row per page, singletons
    included, sorted by cluster."""
    rows = _native.cluster_files(
        [os.fspath(p) for p in paths],
        os.fspath(config) if config is not None else None,
        config_text,
        int(workers),
    )
    return [ClusterRow(*row) for row in rows]


def check(text: str, corpus: Iterable[Tuple[str, str]], threshold: float = 0.5) -> CheckResult:
    """The sentence-share gate over a corpus of ``(id, text)`` records: how much of ``text``
    the corpus already holds (see :meth:`Index.check`)."""
    index = Index()
    for key, body in corpus:
        index.add(key, body)
    return index.check(text, threshold)


def dedup(
    rows: Iterable[Dict[str, Any]],
    *,
    text: str = "text",
    key: str = "id",
    annotate: bool = False,
    config: Optional[PathLike] = None,
    config_text: Optional[str] = None,
) -> List[Dict[str, Any]]:
    """Deduplicates any iterable of dicts (JSON lines, a Hugging Face dataset's rows, a
    DataFrame's records): the first row of each cluster is kept, in the order given.

    ``text`` and ``key`` name the fields holding each row's text and its id (a row's position
    when ``key`` is ``None``). With ``annotate``, every row is returned with ``cluster`` (the
    key of the row kept for its cluster) and ``duplicate_of`` (that key, or ``None`` for a kept
    row) added, the fields ``dupflow dedup --annotate`` writes.

    >>> rain = ("The river flooded the valley after three days of heavy rain in early spring. "
    ...         "Farmers moved their cattle to the hills and waited for the water to fall. "
    ...         "By the end of the month the fields were green again and the roads were open.")
    >>> rows = [{"id": "a", "text": rain}, {"id": "b", "text": rain.replace("three", "four")},
    ...         {"id": "c", "text": "An unrelated note about compilers and the passes they make."}]
    >>> [row["id"] for row in dedup(rows)]
    ['a', 'c']
    >>> [(row["id"], row["duplicate_of"]) for row in dedup(rows, annotate=True)]
    [('a', None), ('b', 'a'), ('c', None)]
    """
    materialized = list(rows)
    keys = [str(row[key]) if key is not None else str(n) for n, row in enumerate(materialized)]
    clusters = cluster_texts(
        ((k, str(row[text])) for k, row in zip(keys, materialized)), config, config_text=config_text
    )
    kept: Dict[str, str] = {}
    out = []
    for k, row in zip(keys, materialized):
        cluster = clusters.get(k, k)
        first = kept.setdefault(cluster, k)
        if annotate:
            out.append({**row, "cluster": first, "duplicate_of": None if first == k else first})
        elif first == k:
            out.append(row)
    return out
