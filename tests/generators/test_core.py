"""Declaring, registering and loading task generators; every bad generator gets an error naming it."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from frontier_qa.generators._core import (
    GENERATOR_KEY,
    Generator,
    GeneratorError,
    Knob,
    Task,
    categorical,
    check_for,
    generator,
    get,
    instance_seed,
    ordinal,
    registered,
    validate,
)
from frontier_qa.generators._loading import load_generator, load_generators


def _add(rng: random.Random, digits: int, op: str = "add") -> Task:
    a, b = (rng.randrange(10 ** (digits - 1), 10**digits) for _ in range(2))
    return Task(f"What is {a} + {b}?", reference=str(a + b))


def test_a_decorated_function_becomes_a_registered_generator_with_knobs_in_order() -> None:
    @generator(knobs=[ordinal("digits", 1, 6, easy="high"), categorical("op", ["add", "sub"])],
               name="t_decorated")
    def gen(rng: random.Random, digits: int, op: str) -> Task:
        """Adds two numbers."""
        return _add(rng, digits)

    assert registered()["t_decorated"] is gen
    assert gen.description == "Adds two numbers."
    assert gen.knob("digits").levels == (6, 5, 4, 3, 2, 1)  # easy end first
    assert gen.easy_knobs() == {"digits": 6, "op": "add"}
    assert list(gen.contexts()) == [{"op": "add"}, {"op": "sub"}]
    case = gen.case(7, {"digits": 3, "op": "sub"})
    assert case.reference_verified and case.topic == "t_decorated"
    assert case.metadata[GENERATOR_KEY] == {"name": "t_decorated", "knobs": {"digits": 3, "op": "sub"}, "seed": 7}
    assert gen.case(7, {"digits": 3, "op": "sub"}) == case  # same seed, same task and id
    assert gen.case(8, {"digits": 3, "op": "sub"}).id != case.id


def test_the_builtin_library_is_registered_and_get_names_what_exists() -> None:
    assert {"arithmetic", "dates", "units", "word_problems"} <= set(registered())
    with pytest.raises(GeneratorError, match="no generator named 'nope'") as err:
        get("nope")
    assert "arithmetic" in (err.value.hint or "")


@pytest.mark.parametrize(
    ("knobs", "message"),
    [
        ([], "declares no knobs"),
        ([Knob("digits", (1, 2, 3), "ordinal", None)], "does not say which end is easy"),
        ([ordinal("digits", 1, 1, easy="low")], "has 1 value"),
        ([categorical("op", [])], "no choices"),
        ([categorical("op", ["add"])], "no ordinal knob"),
        ([ordinal("width", 1, 4, easy="low")], "takes no parameter 'width'"),
        ([ordinal("digits", 1, 4, easy="low"), ordinal("digits", 1, 4, easy="low")], "declares a knob twice"),
    ],
)
def test_a_wrong_declaration_is_refused_naming_the_generator(knobs: list[Knob], message: str) -> None:
    def bad(rng: random.Random, digits: int = 1, op: str = "add") -> Task:
        return _add(rng, digits)

    with pytest.raises(GeneratorError, match=message) as err:
        validate(Generator("bad_gen", bad, tuple(knobs)))
    assert "'bad_gen'" in err.value.message or message == "declares no knobs"
    assert err.value.hint


def test_a_parameter_without_a_knob_or_default_is_refused() -> None:
    def needs(rng: random.Random, digits: int, width: int) -> Task:
        return _add(rng, digits)

    with pytest.raises(GeneratorError, match="'width' have no knob"):
        validate(Generator("needs", needs, (ordinal("digits", 1, 3, easy="low"),)))


def test_a_generator_that_raises_or_returns_no_reference_is_named_with_its_knobs() -> None:
    def raises(rng: random.Random, digits: int) -> Task:
        raise ZeroDivisionError("boom")

    def no_reference(rng: random.Random, digits: int) -> Task:
        return Task("What is 2 + 2?")

    def a_string(rng: random.Random, digits: int) -> Task:
        return "What is 2 + 2?"  # type: ignore[return-value]

    knob = (ordinal("digits", 1, 3, easy="low"),)
    with pytest.raises(GeneratorError, match=r"generator 'raises' at digits=2 \(seed 5\) raised ZeroDivisionError: boom"):
        Generator("raises", raises, knob).case(5, {"digits": 2})
    with pytest.raises(GeneratorError, match="'no_reference' .* returned no reference and no check"):
        Generator("no_reference", no_reference, knob).case(5, {"digits": 2})
    with pytest.raises(GeneratorError, match="returned a string, not a Task"):
        Generator("a_string", a_string, knob).case(5, {"digits": 2})


def test_a_knob_value_out_of_range_or_unknown_is_refused() -> None:
    gen = Generator("ranged", _add, (ordinal("digits", 1, 8, easy="low"),))
    with pytest.raises(GeneratorError, match=r"knob 'digits' = 9 is out of range \(1..8\)"):
        gen.case(1, {"digits": 9})
    with pytest.raises(GeneratorError, match="has no knob 'width'"):
        gen.case(1, {"width": 2})


def test_two_different_functions_cannot_share_a_name() -> None:
    @generator(knobs=[ordinal("digits", 1, 3, easy="low")], name="t_clash")
    def one(rng: random.Random, digits: int) -> Task:
        return _add(rng, digits)

    with pytest.raises(GeneratorError, match="two generators are named 't_clash'"):
        @generator(knobs=[ordinal("digits", 1, 3, easy="low")], name="t_clash")
        def two(rng: random.Random, digits: int) -> Task:
            return _add(rng, digits)


def test_instance_seeds_are_stable_and_distinct() -> None:
    a = instance_seed(0, "g", {"digits": 3}, 0)
    assert a == instance_seed(0, "g", {"digits": 3}, 0)
    assert len({instance_seed(0, "g", {"digits": 3}, i) for i in range(50)}) == 50
    assert a != instance_seed(1, "g", {"digits": 3}, 0) != instance_seed(0, "g", {"digits": 4}, 0)


def test_a_check_decides_answers_that_are_not_one_value() -> None:
    dates = get("dates")
    case = dates.case(3, {"days": 30, "crosses": "month"})
    check = check_for(case)
    assert check is not None and check(case.reference or "")
    assert not check("not a date")


def test_config_entries_load_builtins_restricted_files_and_declared_plain_functions(tmp_path: Path) -> None:
    mine = tmp_path / "my_generators.py"
    mine.write_text(
        "from frontier_qa.generators import Task, generator, ordinal\n"
        "@generator(knobs=[ordinal('items', 1, 5, easy='low')], name='t_invoices')\n"
        "def invoices(rng, items):\n"
        "    prices = [rng.randrange(1, 20) for _ in range(items)]\n"
        "    return Task('Total of ' + ', '.join(map(str, prices)) + '?', reference=str(sum(prices)))\n"
        "def plain(rng, width, style='x'):\n"
        "    return Task(f'Width {width}?', reference=str(width))\n"
    )
    gens = load_generators([
        "arithmetic",
        {"use": "dates", "knobs": {"crosses": ["year"], "days": {"range": [1, 60]}}},
        f"{mine}:invoices",
        {"use": f"{mine}:plain", "name": "t_plain", "knobs": {"width": {"range": [1, 4], "easy": "low"},
                                                               "style": {"choices": ["x", "y"]}}},
    ])
    assert [g.name for g in gens] == ["arithmetic", "dates", "t_invoices", "t_plain"]
    assert gens[1].knob("crosses").values == ("year",)
    assert gens[1].knob("days").values == (1, 3, 7, 15, 30, 60)
    assert gens[2].case(1, {"items": 3}).reference is not None
    assert gens[3].knob("width").levels == (1, 2, 3, 4) and gens[3].knob("style").values == ("x", "y")


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("nope", "no generator named 'nope'"),
        ("missing.py:gen", "does not exist"),
        ({"use": "arithmetic", "knobs": {"digits": [9]}}, "knob 'digits' has no value 9"),
        ({"use": "arithmetic", "knobs": {"width": [1]}}, "has no knob 'width'"),
        ({"use": "arithmetic", "colour": 1}, "is not {use, knobs, name, description}"),
        ({"use": "frontier_qa.generators._core:Task"}, "plain function, so its knobs must be declared"),
        ({"use": "frontier_qa.generators._core:GENERATOR_KEY"}, "is a str, not a generator"),
    ],
)
def test_a_bad_config_entry_says_what_is_wrong(entry: object, message: str) -> None:
    with pytest.raises(GeneratorError, match=message) as err:
        load_generator(entry)  # type: ignore[arg-type]
    assert err.value.hint


def test_a_generator_listed_twice_is_refused() -> None:
    with pytest.raises(GeneratorError, match="'arithmetic' is listed twice"):
        load_generators(["arithmetic", {"use": "arithmetic", "knobs": {"op": ["mul"]}}])
