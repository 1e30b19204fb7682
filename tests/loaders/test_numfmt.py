"""Number formats: values rendered as Excel shows them (kaynak.loaders.numfmt)."""

from __future__ import annotations

import datetime as dt

import pytest

from kaynak.loaders.numfmt import format_value, general

CASES = [
    (0.025, "0.00%", "2.50%"),
    (0.025, "0%", "3%"),  # halves away from zero, as Excel rounds
    (dt.datetime(1992, 12, 28, 6, 15, 0, 687000), "h:mm AM/PM", "6:15 AM"),
    (dt.time(13, 5, 9), "h:mm:ss AM/PM", "1:05:09 PM"),
    (dt.datetime(2008, 3, 4, 5, 6, 7, 500000), "mm:ss.0", "06:07.5"),
    (dt.timedelta(hours=27, minutes=3), "[h]:mm:ss", "27:03:00"),
    (dt.datetime(2008, 1, 5), "[$-409]dddd\\,\\ mmmm\\ dd\\,\\ yyyy", "Saturday, January 05, 2008"),
    (dt.datetime(2008, 1, 5), "[$-41F]d mmmm yyyy dddd", "5 Ocak 2008 Cumartesi"),
    (dt.datetime(2008, 3, 4, 5, 6, 7), "ddmmmyy\\ hh:mm:ss", "04Mar08 05:06:07"),
    (1234567.891, "#,##0.00", "1,234,567.89"),
    (1234567, "#,##0,", "1,235"),
    (7, "00000", "00007"),
    (5.5, "#.##", "5.5"),
    (-1234.5, '"$"#,##0.00_);[Red]\\("$"#,##0.00\\)', "($1,234.50)"),
    (1234.5, "[$€-407] #,##0.00", "€ 1,234.50"),
    (1500, '_ * #,##0_ ;_ * \\-#,##0_ ;_ * "-"_ ;_ @_ ', "1,500"),
    (0, '_ * #,##0_ ;_ * \\-#,##0_ ;_ * "-"_ ;_ @_ ', "-"),
    (-1500, '_ * #,##0_ ;_ * \\-#,##0_ ;_ * "-"_ ;_ @_ ', "-1,500"),
    (12345.678, "0.00E+00", "1.23E+04"),
    (12345, "##0.0E+0", "12.3E+3"),
    (2.5, "# ?/?", "2 1/2"),
    (0.75, "# ?/8", "6/8"),
    (19.99, '0\\ "dollars and"\\ .00\\ "cents"', "19 dollars and .99 cents"),
    (150, '[<100]"low";"high "0', "high 150"),
    (44.5, 'General" TL"', "44.5 TL"),
    ("abc", '@" x"', "abc x"),
    (True, "0.00", "TRUE"),
    (0.1 + 0.2, "General", "0.3"),
    (123456.789, None, "123456.789"),
]


@pytest.mark.parametrize(("value", "code", "shown"), CASES)
def test_format_value(value: object, code: str | None, shown: str) -> None:
    assert format_value(value, code) == shown


def test_general_and_what_cannot_be_shown() -> None:
    assert general(1.23456789012345e15) == "1234567890123450"  # Excel keeps 15 significant digits
    assert general(1e-20) == "1E-20" and general(float("nan")) == "#NUM!"
    assert format_value(-5, "yyyy-mm-dd") == "-5"  # a negative date is shown as a number
    assert format_value(3, "[Red][<=0]0;[Blue]0.0") == "3.0"


def test_long_and_odd_formats_stay_bounded() -> None:
    assert format_value(12345.5, "0." + "0" * 30) == "12345.5" + "0" * 29
    assert format_value(1.5, "0." + "0" * 5000).startswith("1.5") and len(format_value(1.5, "0." + "0" * 5000)) < 400
    assert format_value(1e300, "#,##0.00").endswith(",000.00")
    assert format_value(3, "#" * 200 + "0.0E+0") == "3.0E+0"
