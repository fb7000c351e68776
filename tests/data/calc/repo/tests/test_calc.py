from calc import mean


def test_mean() -> None:
    assert mean([1.0, 2.0, 3.0]) == 2.0
