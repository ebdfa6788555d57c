"""The docstring examples of the package run as written (doctest)."""

import doctest
import unittest

import dupflow


def load_tests(loader, tests, ignore):
    tests.addTests(doctest.DocTestSuite(dupflow))
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
