"""The docstring examples of the package and the examples of docs/python.md run as written
(doctest)."""

import doctest
import os
import re
import unittest

import dupflow


class MarkdownParser(doctest.DocTestParser):
    """Examples inside Markdown code fences: a fence line ends an example's expected output."""

    def parse(self, string, name="<string>"):
        return super().parse(re.sub(r"(?m)^```.*$", "", string), name)


def load_tests(loader, tests, ignore):
    tests.addTests(doctest.DocTestSuite(dupflow))
    docs = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "python.md")
    tests.addTests(
        doctest.DocFileSuite(
            docs, module_relative=False, parser=MarkdownParser(), optionflags=doctest.NORMALIZE_WHITESPACE
        )
    )
    return tests


class ClosedIndex(unittest.TestCase):
    def test_a_closed_index_refuses_to_be_used(self):
        with dupflow.Index() as index:
            index.add("a", "A sentence long enough to be a sentence of the index, and then some more words.")
            self.assertEqual(len(index), 1)
        self.assertTrue(index.closed)
        with self.assertRaises(ValueError):
            index.add("b", "text")
        index.close()


if __name__ == "__main__":
    unittest.main()
