"""A number a user types is finite: click takes ``nan`` through every ``FloatRange`` (it compares false both ways)
and ``inf`` through open ranges. Neither is a threshold, a confidence or a duration, and JSON, where options and
results are recorded, has neither: ``compare --confidence nan`` was exit 70, ``calibrate --min-kappa nan`` passed
every item and wrote ``NaN`` into its JSON report, ``evaluate(retry_delay=inf)`` wrote ``null`` into the manifest."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest

import passhat
from passhat.cli import main
from passhat.commands.common import FiniteFloat
from passhat.errors import PasshatError


def number_options(group: click.Group = main, prefix: str = "") -> Iterator[tuple[str, click.Parameter]]:
    """Every parameter of every command whose value is a float, as ('command option', parameter)."""
    ctx = click.Context(group)
    for name in group.list_commands(ctx):  # the group loads its commands lazily
        command = group.get_command(ctx, name)
        assert command is not None
        if isinstance(command, click.Group):
            yield from number_options(command, f"{prefix}{name} ")
            continue
        for param in command.params:
            if isinstance(param.type, click.types.FloatParamType):
                yield f"{prefix}{name} {param.opts[-1]}", param


NUMBER_OPTIONS = list(number_options())


def test_every_number_option_is_finite() -> None:
    assert len(NUMBER_OPTIONS) >= 20  # the walk found the commands' options
    loose = [name for name, param in NUMBER_OPTIONS if not isinstance(param.type, FiniteFloat)]
    assert not loose, f"give these options type=FiniteFloat(...) (commands/common.py): {loose}"


@pytest.mark.parametrize("word", ["nan", "NaN", "inf", "-inf", "infinity"])
@pytest.mark.parametrize(("name", "param"), NUMBER_OPTIONS, ids=[n for n, _ in NUMBER_OPTIONS])
def test_nan_and_infinity_are_refused_naming_the_option(name: str, param: click.Parameter, word: str) -> None:
    with pytest.raises(click.BadParameter, match=f"'{word}' is not a finite number|not in the range"):
        param.type.convert(word, param, None)


def test_a_finite_number_in_range_is_taken() -> None:
    assert FiniteFloat(0, 1).convert("0.25", None, None) == 0.25 and FiniteFloat().convert(-3, None, None) == -3.0
    with pytest.raises(click.BadParameter, match="not in the range"):
        FiniteFloat(0, 1).convert("2", None, None)


@pytest.mark.parametrize("args", [
    ["compare", "A", "B", "--confidence", "nan"],
    ["calibrate", "--labels", "L", "--judgments", "J", "--min-kappa", "nan"],
    ["run", "refunds", "--agent", "careful", "--temperature", "inf"],
    ["shadow", "--max-seconds", "inf"],
])
def test_the_cli_says_which_option_and_exits_2(cli: Any, tmp_path: Path, args: list[str]) -> None:
    for folder in ("A", "B", "J"):  # paths that exist: the number is what is wrong
        (tmp_path / folder).mkdir(exist_ok=True)
    (tmp_path / "L").write_text("case_id,trial,label\n")
    r = cli(*[str(tmp_path / a) if a in ("A", "B", "L", "J") else a for a in args])
    option = args[-2]
    assert r.exit_code == 2, r.output
    assert f"Invalid value for '{option}'" in r.output and "is not a finite number" in r.output, r.output


@pytest.mark.parametrize("field", ["retry_delay", "temperature"])
def test_evaluate_refuses_a_number_that_is_not_finite(tmp_path: Path, field: str) -> None:
    with pytest.raises(PasshatError, match=f"run option '{field}': Input should be a finite number"):
        passhat.evaluate("refunds", "careful", trials=1, out=tmp_path / "run", **{field: float("inf")})
    assert not (tmp_path / "run" / "manifest.json").exists()  # was written with "retry_delay": null
