import json
from pathlib import Path

import pytest

SUMMARY = Path("/app/summary.json")
EXPECTED = {
    "t1": {"count": 3, "mean": 20.25, "min": 19.25, "max": 21.0},
    "t2": {"count": 2, "mean": 18.5, "min": 18.25, "max": 18.75},
    "t3": {"count": 2, "mean": -3.75, "min": -4.5, "max": -3.0},
}


@pytest.fixture(scope="module")
def summary():
    assert SUMMARY.exists(), f"{SUMMARY} does not exist"
    return json.loads(SUMMARY.read_text())


def test_summary_file_exists():
    assert SUMMARY.exists(), f"{SUMMARY} does not exist"


def test_every_sensor_present(summary):
    assert sorted(summary) == sorted(EXPECTED)


@pytest.mark.parametrize("sensor", sorted(EXPECTED))
def test_sensor_statistics(summary, sensor):
    got = summary[sensor]
    want = EXPECTED[sensor]
    assert got["count"] == want["count"]
    for key in ("mean", "min", "max"):
        assert abs(float(got[key]) - want[key]) < 1e-9, f"{sensor}.{key}: {got[key]} != {want[key]}"
