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
- :func:`cluster_files`: a batch over WARC or JSONL files, on several threads; an iterator of
  the rows of ``clusters.jsonl``.
- :func:`dedup`, :func:`dedup_table`, :func:`dedup_dataset`: the first row of each cluster of a
  list of dicts, a pyarrow table or a Hugging Face dataset.
- :class:`Index`: incremental; ``add``, ``remove``, then ``changes()`` says which documents moved
  between clusters; ``check(text)`` says how much of a text the index already holds.

Configuration is dupflow's ``pipeline.toml`` (a path, or its text as ``config_text``); the
defaults are those of the command.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

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
    "dedup_dataset",
    "dedup_table",
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
    """One page of a :func:`cluster_files` run: a line of ``clusters.jsonl``, with its fields."""

    url: str
    """The page's URL (WARC) or id (JSONL)."""
    record_id: str
    cluster: str
    """The cluster's stable id: the hash of its anchor, the member with the smallest hash of URL
    and record id (the id ``dupflow run`` writes)."""
    cluster_url: str
    """The anchor's URL or id."""
    size: int
    """Pages in the cluster."""
    similarity: float
    """Resemblance to ``leader_url`` (1.0 for a page that joined through none)."""
    leader_url: str
    """The page it was verified against (itself for a page that joined through none)."""


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
        """Each document's cluster (the key of its anchor), in key order, committing first."""
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
    paths: Optional[Iterable[PathLike]] = None,
    config: Optional[PathLike] = None,
    *,
    config_text: Optional[str] = None,
    workers: int = 2,
) -> Iterator[ClusterRow]:
    """Runs the pipeline over WARC files (or JSONL corpora, or directories and globs of them)
    on ``workers`` threads, as ``dupflow run`` does, and yields the rows of its
    ``clusters.jsonl``: one per page, singletons included, in the file's order (by cluster id,
    then URL). With no ``paths``, the small WARC compiled into dupflow.

    The run starts at the call, on threads of its own and without the GIL; the iterator waits
    for it at its first row, and raises ``RuntimeError`` there if it failed. A missing file
    raises ``OSError`` at the call.

    >>> rows = list(cluster_files())
    >>> len(rows), max(row.size for row in rows)
    (8, 3)
    >>> [row.url for row in rows if row.size == 3]  # doctest: +NORMALIZE_WHITESPACE
    ['http://gazette.example/archive/2026/river', 'http://gazette.example/news/river-rises',
     'http://gazette.example/news/river-rises?print=1']
    """
    native = _native.cluster_files(
        [os.fspath(p) for p in paths] if paths is not None else None,
        os.fspath(config) if config is not None else None,
        config_text,
        int(workers),
    )
    return (ClusterRow(*row) for row in native)


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
    keys = _keys([row[key] for row in materialized] if key is not None else None, len(materialized))
    firsts = _firsts(keys, (str(row[text]) for row in materialized), config, config_text)
    if annotate:
        return [
            {**row, "cluster": f, "duplicate_of": None if f == k else f}
            for row, k, f in zip(materialized, keys, firsts)
        ]
    return [row for row, k, f in zip(materialized, keys, firsts) if f == k]


def dedup_table(
    table: Any,
    *,
    text: str = "text",
    key: Optional[str] = None,
    annotate: bool = False,
    config: Optional[PathLike] = None,
    config_text: Optional[str] = None,
) -> Any:
    """:func:`dedup` for a ``pyarrow.Table``: returns a table of the rows kept (the first of
    each cluster, in order), or with ``annotate`` every row with the columns ``cluster`` and
    ``duplicate_of`` appended. ``key`` names the id column (rows are keyed by position when
    ``None``). Only the text and key columns are read. Needs pyarrow.

    >>> import pyarrow as pa
    >>> rain = ("The river flooded the valley after three days of heavy rain in early spring. "
    ...         "Farmers moved their cattle to the hills and waited for the water to fall. "
    ...         "By the end of the month the fields were green again and the roads were open.")
    >>> table = pa.table({"text": [rain, rain.replace("three", "four"), "A note on compilers."]})
    >>> dedup_table(table).num_rows
    2
    >>> dedup_table(table, annotate=True).column("duplicate_of").to_pylist()
    [None, '0', None]
    """
    import pyarrow as pa

    keys = _keys(table.column(key).to_pylist() if key is not None else None, table.num_rows)
    firsts = _firsts(keys, (str(t) for t in table.column(text).to_pylist()), config, config_text)
    if annotate:
        duplicate_of = [None if f == k else f for k, f in zip(keys, firsts)]
        return table.append_column("cluster", pa.array(firsts, pa.string())).append_column(
            "duplicate_of", pa.array(duplicate_of, pa.string())
        )
    return table.filter(pa.array([f == k for k, f in zip(keys, firsts)], pa.bool_()))


def dedup_dataset(
    dataset: Any,
    *,
    text: str = "text",
    key: Optional[str] = None,
    annotate: bool = False,
    config: Optional[PathLike] = None,
    config_text: Optional[str] = None,
) -> Any:
    """:func:`dedup` for a Hugging Face ``datasets.Dataset``: returns the dataset of the rows
    kept (``select``: the first of each cluster, in order), or with ``annotate`` every row with
    the columns ``cluster`` and ``duplicate_of`` added. ``key`` names the id column (rows are
    keyed by position when ``None``). Only the text and key columns are read.

    >>> from datasets import Dataset
    >>> rain = ("The river flooded the valley after three days of heavy rain in early spring. "
    ...         "Farmers moved their cattle to the hills and waited for the water to fall. "
    ...         "By the end of the month the fields were green again and the roads were open.")
    >>> ds = Dataset.from_dict({"id": ["a", "b", "c"],
    ...                         "text": [rain, rain.replace("three", "four"), "A note on compilers."]})
    >>> list(dedup_dataset(ds, key="id")["id"])
    ['a', 'c']
    >>> list(dedup_dataset(ds, key="id", annotate=True)["duplicate_of"])
    [None, 'a', None]
    """
    keys = _keys(list(dataset[key]) if key is not None else None, len(dataset))
    firsts = _firsts(keys, (str(t) for t in dataset[text]), config, config_text)
    if annotate:
        duplicate_of = [None if f == k else f for k, f in zip(keys, firsts)]
        return dataset.add_column("cluster", firsts).add_column("duplicate_of", duplicate_of)
    return dataset.select([n for n, (k, f) in enumerate(zip(keys, firsts)) if f == k])


def _keys(values: Optional[Sequence[Any]], n: int) -> List[str]:
    """Each row's key as text: its id, or its position."""
    return [str(v) for v in values] if values is not None else [str(i) for i in range(n)]


def _firsts(
    keys: List[str], texts: Iterable[str], config: Optional[PathLike], config_text: Optional[str]
) -> List[str]:
    """For each row, the key of the first row (in order) of its cluster."""
    clusters = cluster_texts(zip(keys, texts), config, config_text=config_text)
    first: Dict[str, str] = {}
    return [first.setdefault(clusters.get(k, k), k) for k in keys]
