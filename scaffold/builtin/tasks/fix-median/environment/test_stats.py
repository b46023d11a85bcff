"""Tests for stats.py. Run with: python -m unittest"""

import unittest

from stats import mean, median, mode, variance


class MeanTests(unittest.TestCase):
    def test_mean(self):
        self.assertEqual(mean([1, 2, 3, 4]), 2.5)

    def test_mean_empty(self):
        with self.assertRaises(ValueError):
            mean([])


class MedianTests(unittest.TestCase):
    def test_odd_sorted(self):
        self.assertEqual(median([1, 3, 5]), 3)

    def test_even(self):
        self.assertEqual(median([1, 2, 3, 4]), 2.5)

    def test_unsorted(self):
        self.assertEqual(median([9, 1, 5]), 5)

    def test_empty(self):
        with self.assertRaises(ValueError):
            median([])


class ModeTests(unittest.TestCase):
    def test_mode(self):
        self.assertEqual(mode([1, 2, 2, 3]), 2)

    def test_mode_tie_first_wins(self):
        self.assertEqual(mode([4, 1, 1, 4]), 4)


class VarianceTests(unittest.TestCase):
    def test_variance(self):
        self.assertAlmostEqual(variance([2, 4, 4, 4, 5, 5, 7, 9]), 4.0)


if __name__ == "__main__":
    unittest.main()
