"""Hidden checks for refactor-pricing: identical behaviour, one shared discount-and-tax helper."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import itertools
import random
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

try:
    from scaffold.python.validation.core import run_checks
except ImportError:  # the harness may copy core.py next to this script instead
    from core import run_checks  # type: ignore[no-redef]

HERE = Path(__file__).resolve().parent
WORKSPACE = Path.cwd()
HELPER = "apply_discount_and_tax"
HELPER_PARAMS = ["subtotal", "discount_rate", "tax_rate"]
PUBLIC = ["invoice_total", "cart_total", "quote_total", "subscription_total"]
RATE_NAMES = {"discount_rate", "tax_rate"}
RATE_MESSAGES = ("discount_rate must be between 0 and 1", "tax_rate must not be negative")
_counter = itertools.count()


def _load(path: Path) -> ModuleType:
    assert path.is_file(), f"{path.name} is missing"
    spec = importlib.util.spec_from_file_location(f"_hidden_pricing_{next(_counter)}", path)
    assert spec is not None and spec.loader is not None, f"{path.name} cannot be loaded"
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
        raise AssertionError(f"importing {path.name} failed: {type(exc).__name__}: {exc}") from None
    return module


def _modules() -> tuple[ModuleType, ModuleType]:
    original = _load(HERE / "pricing_original.py")
    current = _load(WORKSPACE / "pricing.py")
    for name in [*PUBLIC]:
        assert callable(getattr(current, name, None)), f"pricing.py no longer defines {name}()"
    return original, current


def _outcome(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, str]:
    try:
        result = func(*args, **kwargs)
    except Exception as exc:
        return ("raises", f"{type(exc).__name__}: {exc}")
    return ("returns", f"{type(result).__name__} {result!r}")


def _compare(
    name: str,
    expected_func: Callable[..., Any],
    actual_func: Callable[..., Any],
    calls: Iterator[tuple[tuple[Any, ...], dict[str, Any]]],
) -> int:
    count = 0
    for args, kwargs in calls:
        expected = _outcome(expected_func, _fresh(args), kwargs)
        actual = _outcome(actual_func, _fresh(args), kwargs)
        shown = ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in kwargs.items())])
        assert actual == expected, (
            f"{name}({shown}) {actual[0]} {actual[1]}, but the original {expected[0]} {expected[1]}"
        )
        count += 1
    return count


def _fresh(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """Copy list/dict arguments so one call cannot affect the other; turn marked lists into generators."""
    out: list[Any] = []
    for arg in args:
        if isinstance(arg, _Gen):
            out.append(iter(list(arg.items)))
        elif isinstance(arg, list):
            out.append(list(arg))
        elif isinstance(arg, dict):
            out.append(dict(arg))
        else:
            out.append(arg)
    return tuple(out)


class _Gen:
    """Marks an argument that is passed as a one-shot iterator."""

    def __init__(self, items: list[Any]) -> None:
        self.items = items

    def __repr__(self) -> str:
        return f"iter({self.items!r})"


DISCOUNTS = [0, 0.0, 0.05, 0.1, 0.125, 0.15, 0.2, 1 / 3, 0.5, 0.875, 1, 1.0]
TAXES = [0, 0.0, 0.05, 0.07, 0.19, 0.2, 0.21, 0.255, 1]
BAD_DISCOUNTS = [-0.01, 1.01, 2, -1]
BAD_TAXES = [-0.01, -1]


def _price(rng: random.Random) -> float:
    return rng.choice(
        [
            round(rng.uniform(0, 500), 2),
            round(rng.uniform(0, 20), 3),
            rng.randint(0, 99),
            0.005,
            0.015,
            0.125,
            2.675,
            1.005,
            10.0,
        ]
    )


def _rates(rng: random.Random) -> tuple[float, float]:
    roll = rng.random()
    if roll < 0.08:
        return rng.choice(BAD_DISCOUNTS), rng.choice(TAXES + BAD_TAXES)
    if roll < 0.14:
        return rng.choice(DISCOUNTS), rng.choice(BAD_TAXES)
    if roll < 0.4:
        return round(rng.uniform(0, 1), 4), round(rng.uniform(0, 0.3), 4)
    return rng.choice(DISCOUNTS), rng.choice(TAXES)


def check_public_api() -> None:
    original, current = _modules()
    assert getattr(current, "DEFAULT_TAX_RATE", None) == original.DEFAULT_TAX_RATE, (
        "DEFAULT_TAX_RATE must still exist with the same value"
    )
    for name in PUBLIC:
        old = inspect.signature(getattr(original, name)).parameters
        new = inspect.signature(getattr(current, name)).parameters
        old_shape = [(p.name, p.kind, p.default) for p in old.values()]
        new_shape = [(p.name, p.kind, p.default) for p in new.values()]
        assert new_shape == old_shape, f"the signature of {name}() changed: {new_shape} != {old_shape}"


def check_helper_signature() -> None:
    _, current = _modules()
    helper = getattr(current, HELPER, None)
    assert callable(helper), f"pricing.py does not define {HELPER}()"
    params = list(inspect.signature(helper).parameters)
    assert params == HELPER_PARAMS, f"{HELPER} must take exactly {HELPER_PARAMS}, it takes {params}"


def check_helper_behaviour() -> None:
    original, current = _modules()
    helper = getattr(current, HELPER, None)
    assert callable(helper), f"pricing.py does not define {HELPER}()"
    rng = random.Random(7301)
    calls = []
    for subtotal in [0, 0.0, 1, 100, 99.99, 0.005, 0.015, 2.675, 1.005, 12345.678, 1e6]:
        for discount in DISCOUNTS + BAD_DISCOUNTS[:2]:
            for tax in TAXES[::2] + BAD_TAXES[:1]:
                calls.append(((subtotal, discount, tax), {}))
    for _ in range(400):
        calls.append(((_price(rng) * rng.randint(1, 9), *_rates(rng)), {}))

    def reference(subtotal: float, discount_rate: float, tax_rate: float) -> float:
        result: float = original.quote_total(1, subtotal, discount_rate=discount_rate, tax_rate=tax_rate)
        return result

    _compare(HELPER, reference, helper, iter(calls))


def check_invoice_total() -> None:
    original, current = _modules()
    rng = random.Random(1101)
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = [(([],), {}), (([(0.1, 3)],), {})]
    for i in range(400):
        items = [(_price(rng), rng.randint(0, 12)) for _ in range(rng.randint(0, 6))]
        if i % 37 == 0 and items:
            items[-1] = (items[-1][0], -1)
        discount, tax = _rates(rng)
        style = i % 4
        if style == 0:
            calls.append(((items,), {}))
        elif style == 1:
            calls.append(((items, discount), {}))
        elif style == 2:
            calls.append(((_Gen(items),), {"discount_rate": discount, "tax_rate": tax}))
        else:
            calls.append(((items, discount, tax), {}))
    _compare("invoice_total", original.invoice_total, current.invoice_total, iter(calls))


def check_cart_total() -> None:
    original, current = _modules()
    rng = random.Random(2202)
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = [(({},), {}), (({"X": (1.005, 1)},), {})]
    for i in range(400):
        cart = {f"SKU{n}": (_price(rng), rng.randint(0, 9)) for n in range(rng.randint(0, 5))}
        coupon = rng.choice([0, 5, 10, 12, 15, 20, 25, 33, 50, 75, 99, 100, rng.randint(0, 100)])
        if i % 29 == 0:
            coupon = rng.choice([101, 150, -5])
        _, tax = _rates(rng)
        style = i % 3
        if style == 0:
            calls.append(((cart,), {}))
        elif style == 1:
            calls.append(((cart, coupon), {}))
        else:
            calls.append(((cart,), {"coupon_percent": coupon, "tax_rate": tax}))
    _compare("cart_total", original.cart_total, current.cart_total, iter(calls))


def check_quote_total() -> None:
    original, current = _modules()
    rng = random.Random(3303)
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    for i in range(400):
        hours = rng.choice([0, 0.25, 0.5, 1, 1.5, 7.5, 8, 40, round(rng.uniform(0, 100), 2)])
        rate = rng.choice([0, 45, 80, 92.5, 120, round(rng.uniform(10, 250), 2)])
        discount, tax = _rates(rng)
        minimum = rng.choice([0.0, 50, 100, 250.5, round(rng.uniform(0, 1000), 2)])
        style = i % 3
        if style == 0:
            calls.append(((hours, rate), {}))
        elif style == 1:
            calls.append(((hours, rate, discount, tax, minimum), {}))
        else:
            calls.append(((hours, rate), {"minimum_fee": minimum, "tax_rate": tax, "discount_rate": discount}))
    _compare("quote_total", original.quote_total, current.quote_total, iter(calls))


def check_subscription_total() -> None:
    original, current = _modules()
    rng = random.Random(4404)
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    for months in range(-2, 40):
        for price in (9.99, 4.5, 19.0, 0.99, 12.345):
            calls.append(((price, months), {}))
    for _ in range(200):
        _, tax = _rates(rng)
        calls.append(((_price(rng), rng.randint(0, 36)), {"tax_rate": tax}))
    _compare("subscription_total", original.subscription_total, current.subscription_total, iter(calls))


def _tree() -> ast.Module:
    path = WORKSPACE / "pricing.py"
    assert path.is_file(), "pricing.py is missing"
    return ast.parse(path.read_text(encoding="utf-8"))


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    return {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}


def check_helper_defined() -> None:
    functions = _functions(_tree())
    assert HELPER in functions, f"no module-level 'def {HELPER}(...)' in pricing.py"


def check_every_function_calls_helper() -> None:
    functions = _functions(_tree())
    missing = []
    for name in PUBLIC:
        assert name in functions, f"pricing.py no longer defines {name}() at module level"
        calls = [
            node
            for node in ast.walk(functions[name])
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == HELPER
        ]
        if not calls:
            missing.append(name)
    assert not missing, f"these functions do not call {HELPER}() directly: {', '.join(missing)}"


def _uses_rate(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id in RATE_NAMES


def check_arithmetic_only_in_helper() -> None:
    tree = _tree()
    helper_nodes: set[int] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == HELPER:
            helper_nodes = {id(sub) for sub in ast.walk(node)}
    assert helper_nodes, f"no module-level 'def {HELPER}(...)' in pricing.py"
    problems = []
    for node in ast.walk(tree):
        if id(node) in helper_nodes:
            continue
        line = getattr(node, "lineno", "?")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "round":
            problems.append(f"line {line}: round() outside {HELPER}")
        elif isinstance(node, ast.BinOp) and (_uses_rate(node.left) or _uses_rate(node.right)):
            problems.append(f"line {line}: arithmetic with a discount/tax rate outside {HELPER}")
        elif isinstance(node, ast.Compare) and any(map(_uses_rate, [node.left, *node.comparators])):
            problems.append(f"line {line}: a discount/tax rate is validated outside {HELPER}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in RATE_MESSAGES:
            problems.append(f"line {line}: the rate error message {node.value!r} appears outside {HELPER}")
    assert not problems, "the discount/tax computation is still duplicated:\n" + "\n".join(problems)


def check_visible_tests_unchanged() -> None:
    current = WORKSPACE / "test_pricing.py"
    assert current.is_file(), "test_pricing.py was deleted"
    assert current.read_bytes() == (HERE / "test_pricing.py.orig").read_bytes(), "test_pricing.py was modified"


CHECKS = {
    "public names and signatures unchanged": check_public_api,
    "apply_discount_and_tax is a module-level function": check_helper_defined,
    "apply_discount_and_tax takes (subtotal, discount_rate, tax_rate)": check_helper_signature,
    "apply_discount_and_tax matches the original computation": check_helper_behaviour,
    "invoice_total behaves exactly as before": check_invoice_total,
    "cart_total behaves exactly as before": check_cart_total,
    "quote_total behaves exactly as before": check_quote_total,
    "subscription_total behaves exactly as before": check_subscription_total,
    "every public total function calls apply_discount_and_tax": check_every_function_calls_helper,
    "discount/tax validation, arithmetic and rounding only in the helper": check_arithmetic_only_in_helper,
    "test_pricing.py is unchanged": check_visible_tests_unchanged,
}

if __name__ == "__main__":
    sys.exit(run_checks(CHECKS))
