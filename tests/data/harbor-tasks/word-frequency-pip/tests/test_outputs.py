import importlib.util

import pytest


@pytest.fixture(scope="module")
def wordfreq():
    spec = importlib.util.spec_from_file_location("wordfreq", "/app/wordfreq.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_counts_and_order(wordfreq):
    text = "The cat and the hat. THE END, and the cat!"
    assert wordfreq.top_words(text, 3) == [("the", 4), ("and", 2), ("cat", 2)]


def test_apostrophes_are_part_of_words(wordfreq):
    assert wordfreq.top_words("don't stop, don't", 5) == [("don't", 2), ("stop", 1)]


def test_fewer_words_than_n(wordfreq):
    assert wordfreq.top_words("one", 10) == [("one", 1)]
