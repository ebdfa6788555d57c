"""Tests of the installed package (`.ci/run` installs it into a fresh venv and runs these with
`python -m unittest discover python/tests`)."""

import dataclasses
import gzip
import json
import os
import tempfile
import unittest

import dupflow

HERE = os.path.dirname(os.path.abspath(__file__))
EMBEDDED = os.path.join(HERE, "..", "..", "fixtures", "default.warc.gz")


def line(seed):
    x = seed
    words = []
    for _ in range(14):
        x = (x * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        n = x >> 33
        words.append("".join(chr(97 + (n >> (3 * i)) % 26) for i in range(3 + n % 6)))
    return " ".join(words) + "."


def text(doc, changed=None):
    return "\n".join(line(10**6 + doc * 10 + i) if i == changed else line(doc * 10 + i) for i in range(10))


class IndexTest(unittest.TestCase):
    def test_changes_follow_additions_replacements_and_removals(self):
        index = dupflow.Index()
        for d in range(6):
            index.add(f"d{d}", text(d))
        index.add("near3", text(3, changed=5))
        changes = index.changes()
        self.assertEqual(len(changes), 7)
        # A cluster is named by its anchor: one of its members, chosen by a hash of the key.
        anchor = index.clusters()["near3"]
        self.assertIn(anchor, ("d3", "near3"))
        self.assertEqual(index.clusters()["d3"], anchor)
        self.assertIn(dupflow.Change("near3", None, anchor), changes)
        self.assertEqual(index.changes(), [], "nothing pending, nothing changes")

        # The anchor leaves: the cluster is named by the other member.
        other = "near3" if anchor == "d3" else "d3"
        self.assertTrue(index.remove(anchor))
        self.assertFalse(index.remove("absent"))
        self.assertEqual(
            index.changes(),
            sorted([dupflow.Change(anchor, anchor, None), dupflow.Change(other, anchor, other)], key=lambda c: c.key),
        )
        index.add(other, text(1, changed=2))  # replaced: now a near-copy of d1
        changes = index.changes()
        joined = index.clusters()["d1"]
        self.assertIn(joined, ("d1", other))
        self.assertEqual(index.clusters()[other], joined)
        # The one of the two that is not the anchor is renamed.
        renamed = other if joined == "d1" else "d1"
        self.assertEqual(changes, [dupflow.Change(renamed, renamed, joined)])
        self.assertEqual(len(index), 6)

    def test_check_reports_the_share_already_held(self):
        index = dupflow.Index()
        for d in range(4):
            index.add(f"d{d}", text(d))
        held = index.check(text(2, changed=0), threshold=0.5)
        self.assertEqual(held["verdict"], "duplicate")
        self.assertGreater(held["share"], 0.8)
        self.assertEqual(held["cover"][0]["url"], "d2")
        new = index.check(text(99))
        self.assertEqual((new["verdict"], new["share"]), ("new", 0.0))
        self.assertEqual(dupflow.check(text(1), [("a", text(1))])["verdict"], "duplicate")
        # A typed result, its fields also read by name.
        self.assertIsInstance(held, dupflow.CheckResult)
        self.assertEqual((held.verdict, held.cover[0]["url"]), ("duplicate", "d2"))
        self.assertEqual(held.spans, held["spans"])

    def test_a_bad_config_is_a_value_error_naming_the_key(self):
        with self.assertRaises(ValueError) as raised:
            dupflow.Index(config_text="[verify]\nthreshhold = 0.9\n")
        self.assertIn("threshhold", str(raised.exception))


class BatchTest(unittest.TestCase):
    def test_texts_and_html_records(self):
        records = [(f"d{d}", text(d)) for d in range(5)] + [("copy", text(4)), ("near", text(0, 7))]
        clusters = dupflow.cluster_texts(iter(records))
        # Clusters are named by one of their members (the anchor).
        self.assertEqual(clusters["copy"], clusters["d4"])
        self.assertIn(clusters["copy"], ("d4", "copy"))
        self.assertEqual(clusters["near"], clusters["d0"])
        self.assertIn(clusters["near"], ("d0", "near"))
        self.assertEqual(len(set(clusters.values())), 5)
        self.assertTrue(all(clusters[name] == name for name in clusters.values()), "each name is a member of its cluster")
        html = lambda d: "<html><body>" + "".join(f"<p>{l}</p>" for l in text(d).split("\n")) + "</body></html>"
        x, y, z = "https://a.example/x", "https://b.example/y", "https://a.example/z"
        by_url = dupflow.cluster_html([(x, html(1)), (y, html(1)), (z, html(2))])
        self.assertEqual(by_url[x], by_url[y])
        self.assertIn(by_url[x], (x, y))
        self.assertEqual(by_url[z], z)

    def test_the_readme_example_keeps_the_first_row_of_each_cluster(self):
        rows = [{"text": text(d), "source": "x"} for d in range(6)] + [{"text": text(2)}, {"text": text(4, 3)}]
        clusters = dupflow.cluster_texts((str(i), row["text"]) for i, row in enumerate(rows))
        seen = set()
        kept = [row for i, row in enumerate(rows) if not (clusters[str(i)] in seen or seen.add(clusters[str(i)]))]
        self.assertEqual(kept, rows[:6])

    def test_a_jsonl_corpus_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "c.jsonl.gz")
            with gzip.open(path, "wt") as f:
                for d in range(8):
                    f.write(json.dumps({"id": f"d{d}", "text": text(d)}) + "\n")
                f.write(json.dumps({"id": "again", "text": text(5, 1)}) + "\n")
            rows = list(dupflow.cluster_files([path], workers=2))
        by_id = {r.url: r for r in rows}
        self.assertEqual(len(rows), 9)
        self.assertEqual(by_id["again"].cluster, by_id["d5"].cluster)
        self.assertIn(by_id["again"].cluster_url, ("d5", "again"))
        self.assertEqual((by_id["again"].size, by_id["d1"].size), (2, 1))
        self.assertIn(by_id["again"].leader_url, ("d5", "again"))
        self.assertGreater(by_id["again"].similarity, 0.8)

    def test_the_sample_warc_gives_the_expected_clusters(self):
        with open(os.path.join(HERE, "..", "..", "fixtures", "default.expected.json")) as f:
            expected = sorted(sorted(urls) for urls in json.load(f).values())
        for workers in (1, 3):
            rows = dupflow.cluster_files([EMBEDDED], workers=workers)
            clusters = {}
            for row in rows:
                clusters.setdefault(row.cluster, []).append(row.url)
            self.assertEqual(sorted(sorted(urls) for urls in clusters.values()), expected)

    def test_rows_are_the_lines_of_clusters_jsonl(self):
        with open(os.path.join(HERE, "..", "..", "fixtures", "default.expected.json")) as f:
            expected = json.load(f)
        rows = dupflow.cluster_files()
        self.assertIs(iter(rows), rows, "an iterator, not a list")
        rows = list(rows)
        # The fields and order of `dupflow run`'s clusters.jsonl: by cluster id, then URL.
        self.assertEqual(
            list(dataclasses.asdict(rows[0])),
            ["url", "record_id", "cluster", "cluster_url", "size", "similarity", "leader_url"],
        )
        self.assertEqual(rows, sorted(rows, key=lambda r: (r.cluster, r.url)))
        sizes = {}
        for row in rows:
            sizes[row.cluster] = sizes.get(row.cluster, 0) + 1
        self.assertTrue(all(row.size == sizes[row.cluster] for row in rows))
        self.assertEqual(sorted(sizes.values()), sorted(len(urls) for urls in expected.values()))
        self.assertEqual(len(list(dupflow.cluster_files([]))), 0, "no paths: no rows")

    def test_a_run_that_fails_raises_at_its_first_row(self):
        # /proc/self/mem exists but refuses to be read (EIO): the run fails after the call.
        rows = dupflow.cluster_files(["/proc/self/mem"])
        with self.assertRaises(RuntimeError) as failed:
            next(rows)
        self.assertIn("/proc/self/mem", str(failed.exception))

    def test_a_bad_configuration_is_a_value_error_at_the_call(self):
        with self.assertRaises(ValueError) as failed:
            dupflow.cluster_files(config_text="[run]\nno_such_key = 1\n")
        self.assertIn("no_such_key", str(failed.exception))

    def test_a_missing_file_is_an_os_error(self):
        with self.assertRaises(OSError):
            dupflow.cluster_files(["/nonexistent/file.warc.gz"])


if __name__ == "__main__":
    unittest.main()
