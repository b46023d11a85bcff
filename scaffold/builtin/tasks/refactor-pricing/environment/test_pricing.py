"""Tests for pricing.py. Run with: python -m unittest"""

import unittest

from pricing import cart_total, invoice_total, quote_total, subscription_total


class InvoiceTests(unittest.TestCase):
    def test_plain(self):
        self.assertEqual(invoice_total([(19.99, 3), (5.5, 2)]), 85.16)

    def test_discount(self):
        self.assertEqual(invoice_total([(19.99, 3), (5.5, 2)], discount_rate=0.1), 76.64)

    def test_bad_discount(self):
        with self.assertRaises(ValueError):
            invoice_total([(1.0, 1)], discount_rate=1.5)


class CartTests(unittest.TestCase):
    def test_coupon(self):
        self.assertEqual(cart_total({"A1": (12.5, 2), "B2": (3.99, 5)}, coupon_percent=15), 45.85)

    def test_empty_cart(self):
        self.assertEqual(cart_total({}, tax_rate=0.07), 0.0)


class QuoteTests(unittest.TestCase):
    def test_quote(self):
        self.assertEqual(quote_total(7.5, 80, discount_rate=0.05, tax_rate=0.19), 678.3)

    def test_minimum_fee(self):
        self.assertEqual(quote_total(0.5, 80, minimum_fee=100), 120.0)


class SubscriptionTests(unittest.TestCase):
    def test_yearly(self):
        self.assertEqual(subscription_total(9.99, 12), 122.28)

    def test_half_year(self):
        self.assertEqual(subscription_total(9.99, 6), 68.33)

    def test_no_tax(self):
        self.assertEqual(subscription_total(9.99, 1, tax_rate=0.0), 9.99)


if __name__ == "__main__":
    unittest.main()
