"""Price calculations for the shop backend.

All amounts are euros as floats. Every total is rounded to whole cents.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

DEFAULT_TAX_RATE = 0.2


def invoice_total(
    line_items: Iterable[tuple[float, int]],
    discount_rate: float = 0.0,
    tax_rate: float = DEFAULT_TAX_RATE,
) -> float:
    """Return the total of an invoice.

    *line_items* is an iterable of ``(unit_price, quantity)`` pairs.
    """
    subtotal = 0.0
    for unit_price, quantity in line_items:
        if quantity < 0:
            raise ValueError("quantity must not be negative")
        subtotal += unit_price * quantity
    if not 0 <= discount_rate <= 1:
        raise ValueError("discount_rate must be between 0 and 1")
    if tax_rate < 0:
        raise ValueError("tax_rate must not be negative")
    discounted = round(subtotal * (1 - discount_rate), 2)
    tax = round(discounted * tax_rate, 2)
    return round(discounted + tax, 2)


def cart_total(
    cart: Mapping[str, tuple[float, int]],
    coupon_percent: int = 0,
    tax_rate: float = DEFAULT_TAX_RATE,
) -> float:
    """Return the total of a shopping cart.

    *cart* maps a SKU to ``(unit_price, quantity)``; *coupon_percent* is a whole
    percentage taken off the cart (``10`` means 10 % off).
    """
    subtotal = sum(price * qty for price, qty in cart.values())
    discount_rate = coupon_percent / 100
    if not 0 <= discount_rate <= 1:
        raise ValueError("discount_rate must be between 0 and 1")
    if tax_rate < 0:
        raise ValueError("tax_rate must not be negative")
    after_discount = round(subtotal * (1 - discount_rate), 2)
    vat = round(after_discount * tax_rate, 2)
    return round(after_discount + vat, 2)


def quote_total(
    hours: float,
    hourly_rate: float,
    discount_rate: float = 0.0,
    tax_rate: float = DEFAULT_TAX_RATE,
    minimum_fee: float = 0.0,
) -> float:
    """Return the total of a service quote: hours times rate, but at least *minimum_fee*."""
    subtotal = max(hours * hourly_rate, minimum_fee)
    if not 0 <= discount_rate <= 1:
        raise ValueError("discount_rate must be between 0 and 1")
    if tax_rate < 0:
        raise ValueError("tax_rate must not be negative")
    net = round(subtotal * (1 - discount_rate), 2)
    tax_amount = round(net * tax_rate, 2)
    return round(net + tax_amount, 2)


def subscription_total(
    monthly_price: float,
    months: int,
    tax_rate: float = DEFAULT_TAX_RATE,
) -> float:
    """Return the total of a prepaid subscription.

    Prepaying 6 months or more gives 5 % off, 12 months or more gives 15 % off.
    """
    if months < 1:
        raise ValueError("months must be at least 1")
    if months >= 12:
        discount_rate = 0.15
    elif months >= 6:
        discount_rate = 0.05
    else:
        discount_rate = 0.0
    subtotal = monthly_price * months
    if not 0 <= discount_rate <= 1:
        raise ValueError("discount_rate must be between 0 and 1")
    if tax_rate < 0:
        raise ValueError("tax_rate must not be negative")
    discounted = round(subtotal * (1 - discount_rate), 2)
    tax = round(discounted * tax_rate, 2)
    return round(discounted + tax, 2)
