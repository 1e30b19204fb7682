"""Spreadsheet cells as a person sees them: a value rendered through its Excel number format code (ECMA-376
§18.8.31), so that 0.025 under ``0.00%`` is stored as "2.50%" and 33966.26 under ``h:mm AM/PM`` as "6:15 AM".

Covered: ``General``; the sections ``positive;negative;zero;text`` and ``[<100]`` conditions; digit placeholders
``0 # ?``, decimals, thousands separators and ``,`` scaling, percent, scientific ``0.00E+00``; literal text (quoted,
``\\x``, ``_x`` padding, ``*x`` fill dropped), currency (``"$"``, ``[$€-407]``); colours and locale tags dropped;
dates and times (``yyyy yy mmmm mmm mm m dd d dddd ddd hh h mm ss .000 AM/PM A/P [h] [mm] [ss]``), with Turkish
month and day names for a ``[$-41F]`` locale and English otherwise; fractions ``# ?/?``. A value a format cannot show
(a negative date) falls back to General.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from decimal import ROUND_HALF_UP, Context, Decimal
from fractions import Fraction

_EPOCH = _dt.datetime(1899, 12, 30)
_MONTHS_EN = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
              "November", "December")  # fmt: skip
_DAYS_EN = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS_TR = ("Ocak", "Şubat", "Mart", "Nisan", "Mayıs", "Haziran", "Temmuz", "Ağustos", "Eylül", "Ekim", "Kasım",
              "Aralık")  # fmt: skip
_DAYS_TR = ("Pazartesi", "Salı", "Çarşamba", "Perşembe", "Cuma", "Cumartesi", "Pazar")

# Format codes of the built-in numFmtIds a workbook need not spell out (ECMA-376 §18.8.30).
BUILTIN = {
    0: "General", 1: "0", 2: "0.00", 3: "#,##0", 4: "#,##0.00", 9: "0%", 10: "0.00%", 11: "0.00E+00",
    12: "# ?/?", 13: "# ??/??", 14: "mm-dd-yy", 15: "d-mmm-yy", 16: "d-mmm", 17: "mmm-yy", 18: "h:mm AM/PM",
    19: "h:mm:ss AM/PM", 20: "h:mm", 21: "h:mm:ss", 22: "m/d/yy h:mm", 37: "#,##0 ;(#,##0)",
    38: "#,##0 ;[Red](#,##0)", 39: "#,##0.00;(#,##0.00)", 40: "#,##0.00;[Red](#,##0.00)", 45: "mm:ss",
    46: "[h]:mm:ss", 47: "mmss.0", 48: "##0.0E+0", 49: "@",
}  # fmt: skip

_TOKEN = re.compile(
    r'"(?P<quoted>[^"]*)"?|\\(?P<escaped>.)|_(?P<pad>.)|\*(?P<fill>.)|\[(?P<bracket>[^\]]*)\]'
    r"|(?P<general>[Gg][Ee][Nn][Ee][Rr][Aa][Ll])|(?P<ampm>AM/PM|am/pm|A/P|a/p)|(?P<date>[yY]+|[mM]+|[dD]+|[hH]+|[sS]+|[eE](?=[^+\-0#?]|$)|[bB]{1,2}|[gG]+)"
    r"|(?P<sci>[eE][+\-])|(?P<digit>[0#?])|(?P<other>.)",
    re.S,
)
_CONDITION = re.compile(r"^(<=|>=|<>|<|>|=)\s*(-?[\d.]+(?:[eE][+\-]?\d+)?)$")
_CACHE: dict[str, list[_Section]] = {}
_DECIMALS = Context(prec=700)  # enough digits for any float with up to 300 decimals


class _Section:
    __slots__ = ("condition", "date_plan", "is_date", "is_text", "number_plan", "tokens")

    def __init__(self, tokens: list[tuple[str, str]], condition: tuple[str, float] | None) -> None:
        self.tokens = tokens
        self.condition = condition
        self.is_date = any(kind in ("date", "ampm", "elapsed") for kind, _ in tokens)
        self.is_text = any(kind == "text" for kind, _ in tokens)
        self.number_plan: _NumberPlan | None = None  # what a number's rendering needs, worked out once
        self.date_plan: tuple[int, bool, bool, bool, frozenset[int]] | None = None


def _split_sections(code: str) -> list[str]:
    out: list[str] = []
    cur: list[str] = []
    quoted, bracket, escape = False, False, False
    for ch in code:
        if escape:
            escape = False
        elif ch == "\\" and not quoted:
            escape = True
        elif ch == '"':
            quoted = not quoted
        elif ch == "[" and not quoted:
            bracket = True
        elif ch == "]" and not quoted:
            bracket = False
        elif ch == ";" and not quoted and not bracket:
            out.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    out.append("".join(cur))
    return out


def _parse(code: str) -> list[_Section]:
    sections = _CACHE.get(code)
    if sections is not None:
        return sections
    sections = []
    for raw in _split_sections(code)[:4]:
        tokens: list[tuple[str, str]] = []
        condition: tuple[str, float] | None = None
        for m in _TOKEN.finditer(raw):
            kind = m.lastgroup or "other"
            value = m.group(kind) or ""
            if kind in ("quoted", "escaped"):
                tokens.append(("lit", value))
            elif kind == "pad":
                tokens.append(("lit", " "))
            elif kind == "fill":
                continue
            elif kind == "bracket":
                cond = _CONDITION.match(value.strip())
                if cond:
                    condition = (cond.group(1), float(cond.group(2)))
                elif value.startswith("$"):  # [$€-407]: a currency symbol, or a bare locale [$-409]
                    symbol = value[1:].split("-", 1)[0]
                    if symbol:
                        tokens.append(("lit", symbol))
                    tokens.append(("locale", value.rsplit("-", 1)[-1] if "-" in value else ""))
                elif value and value[0].lower() in "hms" and set(value.lower()) <= set("hms"):
                    tokens.append(("elapsed", value.lower()))
                # colours ([Red], [Color10]) and anything else in brackets show nothing
            elif kind == "other" and value == "@":
                tokens.append(("text", "@"))
            elif kind == "date" and value[0] in "eEbBgG":
                tokens.append(("date", "yyyy" if value[0] in "eE" else value.lower()))
            else:
                tokens.append((kind, value))
        sections.append(_Section(tokens, condition))
    if len(_CACHE) < 2000:
        _CACHE[code] = sections
    return sections


def general(value: float) -> str:
    """Excel's General format: an integer as is, otherwise up to 15 significant digits without float noise."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if math.isnan(value) or math.isinf(value):
        return "#NUM!"
    if value.is_integer() and abs(value) < 1e21:  # 15 significant digits, as Excel keeps: 1234567890123450
        return str(int(float(f"{value:.15g}")))
    text = f"{value:.15g}"
    if "e" in text:
        mantissa, exp = text.split("e")
        return f"{mantissa}E{int(exp):+03d}"
    return text


def format_value(value: object, code: str | None) -> str:
    """``value`` (a number, bool, date/time, timedelta or text from a cell) as the format ``code`` shows it."""
    if value is None:
        return ""
    if isinstance(value, str):
        return _format_text(value, code) if code and "@" in code and '"' in code else value
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    serial = _serial(value)
    if serial is None:
        return str(value)
    if not code or code.lower() == "general":
        if isinstance(value, _dt.datetime | _dt.date | _dt.time | _dt.timedelta):
            return _default_date(value)
        return general(serial)
    try:
        return _format_number(serial, code, value)
    except (ValueError, OverflowError, ArithmeticError):
        return general(serial)


def _serial(value: object) -> float | None:
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, _dt.datetime):
        return (value - _EPOCH).total_seconds() / 86400
    if isinstance(value, _dt.date):
        return float((value - _EPOCH.date()).days)
    if isinstance(value, _dt.time):
        return (value.hour * 3600 + value.minute * 60 + value.second + value.microsecond / 1e6) / 86400
    if isinstance(value, _dt.timedelta):
        return value.total_seconds() / 86400
    return None


def _default_date(value: object) -> str:
    if isinstance(value, _dt.datetime):
        return value.date().isoformat() if value.time() == _dt.time() else value.isoformat(sep=" ", timespec="seconds")
    if isinstance(value, _dt.date | _dt.time):
        return value.isoformat()
    return str(value)


def _format_text(value: str, code: str) -> str:
    sections = _parse(code)
    section = sections[3] if len(sections) >= 4 else next((s for s in sections if s.is_text), None)
    if section is None:
        return value
    return "".join(value if kind == "text" else v for kind, v in section.tokens if kind in ("lit", "text", "other"))


def _pick(sections: list[_Section], x: float) -> tuple[_Section, float]:
    """The section that shows ``x`` and the number it shows (negatives lose their sign in a negative section)."""
    numeric = [s for s in sections[:3] if not (s.is_text and not any(k in ("digit", "general") for k, _ in s.tokens))]
    if not numeric:
        numeric = sections[:1]
    if any(s.condition for s in numeric):
        for s in numeric:
            if s.condition is None or _holds(s.condition, x):
                signless = s.condition is not None and s.condition[1] <= 0 and s.condition[0] in ("<", "<=")
                return s, abs(x) if signless else x
        return numeric[-1], x
    if len(numeric) == 1:
        return numeric[0], x
    if x > 0 or (x == 0 and len(numeric) == 2):
        return numeric[0], x
    if x < 0:
        return numeric[1], -x
    return numeric[2], x


def _holds(condition: tuple[str, float], x: float) -> bool:
    op, n = condition
    return {"<": x < n, "<=": x <= n, ">": x > n, ">=": x >= n, "=": x == n, "<>": x != n}[op]


def _format_number(x: float, code: str, original: object) -> str:
    sections = _parse(code)
    section, shown = _pick(sections, x)
    tokens = section.tokens
    if section.is_date:
        return _format_date(shown, section)
    if section.number_plan is not None:
        return section.number_plan.render(shown)
    if any(k == "general" for k, _ in tokens):
        return "".join(general(shown) if k == "general" else v for k, v in tokens if k in ("lit", "general", "other"))
    digits = [i for i, (k, _) in enumerate(tokens) if k == "digit"]
    if not digits:
        return "".join(v for k, v in tokens if k in ("lit", "other")).strip() or general(shown)
    first, last = digits[0], digits[-1]
    slash = next((i for i in range(first, len(tokens)) if tokens[i] == ("other", "/")), None)
    if slash is not None:  # a fraction; its denominator may be spelt out ("# ?/8")
        end = slash + 1
        while end < len(tokens) and (tokens[end][0] == "digit" or tokens[end][1].isdigit()):
            end += 1
        return _render_fraction(shown, tokens, first, max(last, end - 1))
    section.number_plan = _NumberPlan(tokens, first, last)
    return section.number_plan.render(shown)


def _round(x: float, places: int) -> str:
    """``x`` with ``places`` decimals, halves away from zero as Excel rounds (2.5% under ``0%`` is 3%)."""
    exponent = Decimal(1).scaleb(-min(places, 300))
    return str(Decimal(repr(x)).quantize(exponent, rounding=ROUND_HALF_UP, context=_DECIMALS))


def _render_fraction(x: float, tokens: list[tuple[str, str]], first: int, last: int) -> str:
    body = tokens[first : last + 1]
    slash = next(i for i, t in enumerate(body) if t == ("other", "/"))
    denominator = "".join(v for _, v in body[slash + 1 :]).strip()
    numerator_places = [i for i, (k, _) in enumerate(body[:slash]) if k == "digit"]
    # a whole part is the placeholder group before a space, then the numerator's group: "# ?/?"
    gap = next((i for i in range(len(body[:slash]) - 1, -1, -1) if body[i][0] != "digit"), None)
    has_whole = gap is not None and any(i < gap for i in numerator_places)
    negative, x = x < 0, abs(x)
    whole = math.floor(x) if has_whole else 0
    rest = x - whole
    if denominator.isdigit() and not set(denominator) & set("#?"):
        den = int(denominator)
        num = round(rest * den)
    else:
        limit = 10 ** max(1, sum(1 for ch in denominator if ch in "0#?")) - 1
        frac = Fraction(rest).limit_denominator(limit)
        num, den = frac.numerator, frac.denominator
    if num == den:
        whole, num = whole + 1, 0
    sign = "-" if negative else ""
    if num == 0:
        return sign + str(whole)
    head = "".join(v for k, v in tokens[:first] if k in ("lit", "other"))
    tail = "".join(v for k, v in tokens[last + 1 :] if k in ("lit", "other"))
    return (head + sign + (f"{whole} " if whole else "") + f"{num}/{den}" + tail).strip()


class _NumberPlan:
    """The parts of a number format (placeholders, decimals, grouping, scaling, literals) worked out once."""

    def __init__(self, tokens: list[tuple[str, str]], first: int, last: int) -> None:
        body = tokens[first : last + 1]
        head, tail = tokens[:first], tokens[last + 1 :]
        scale = 0  # trailing commas right after the last placeholder scale by 1,000 each
        while tail and tail[0] == ("other", ","):
            scale += 1
            tail = tail[1:]
        percent = sum(1 for k, v in tokens if k == "other" and v == "%")
        self.factor = (100**percent) / (1000**scale)
        self.sci = next((i for i, (k, _) in enumerate(body) if k == "sci"), None)
        mantissa = body[: self.sci] if self.sci is not None else body
        point = next((i for i, t in enumerate(mantissa) if t == ("other", ".")), None)
        int_part = mantissa[:point] if point is not None else mantissa
        frac_part = [v for k, v in mantissa[point + 1 :] if k == "digit"] if point is not None else []
        self.has_point = point is not None
        self.places = len(frac_part)
        self.grouping = any(t == ("other", ",") for t in int_part)
        self.min_int = sum(1 for k, v in int_part if k == "digit" and v == "0")
        self.min_frac = max((i + 1 for i, v in enumerate(frac_part) if v == "0"), default=0)
        self.int_places = max(1, sum(1 for k, _ in int_part if k == "digit"))
        if self.sci is not None:
            self.exp_digits = sum(1 for k, _ in body[self.sci + 1 :] if k == "digit")
            self.exp_plus = body[self.sci][1][1] == "+"
        self.head = "".join(v for k, v in head if k in ("lit", "other"))
        self.tail = "".join(v for k, v in tail if k in ("lit", "other"))
        # literals between the placeholders stay where the format puts them: 0 "dollars and" .00 "cents"
        last_int = max((i for i, (k, _) in enumerate(int_part) if k == "digit"), default=-1)
        self.before = "".join(v for i, (k, v) in enumerate(int_part) if k == "lit" and i < last_int)
        self.after_int = "".join(v for i, (k, v) in enumerate(int_part) if k == "lit" and i > last_int)
        frac_tokens = mantissa[point + 1 :] if point is not None else []
        self.after_frac = "".join(v for k, v in frac_tokens if k == "lit")

    def render(self, x: float) -> str:
        x = x * self.factor
        negative = x < 0
        x = abs(x)
        exp_text = ""
        if self.sci is not None:
            exponent = 0 if x == 0 else math.floor(math.log10(x))
            if self.int_places > 1:  # ##0.0E+0: engineering notation, the exponent a multiple of the places
                exponent = self.int_places * math.floor(exponent / self.int_places) if x else 0
            x = x / (10**exponent) if x else 0.0
            if float(_round(x, self.places)) >= 10**self.int_places:
                x /= 10**self.int_places
                exponent += self.int_places
            exp_sign = "-" if exponent < 0 else ("+" if self.exp_plus else "")
            exp_text = "E" + exp_sign + str(abs(exponent)).rjust(self.exp_digits, "0")
        whole, _, frac = _round(x, self.places).partition(".")
        frac = frac[: max(self.min_frac, len(frac.rstrip("0")))]
        whole = whole.lstrip("0").rjust(self.min_int, "0")
        if self.grouping and whole:
            whole = f"{int(whole):,}"
        sign = "-" if negative and (whole.strip("0,") or frac.strip("0")) else ""
        text = self.head + self.before + sign + whole + self.after_int
        if self.has_point:
            text += ("." + frac if frac or not self.places else ".") + self.after_frac
        text += exp_text + self.tail
        return text.strip() or text


def _date_plan(tokens: list[tuple[str, str]]) -> tuple[int, bool, bool, bool, frozenset[int]]:
    """(fraction-of-second digits, shows seconds, 12-hour clock, Turkish names, the tokens that are minutes) of a
    date format."""
    locale = next((v for k, v in tokens if k == "locale"), "")
    frac_digits = 0
    for i, (k, v) in enumerate(tokens):
        if k == "date" and v[0] in "sS" and i + 2 < len(tokens) + 1:
            j = i + 1
            if j < len(tokens) and tokens[j] == ("other", "."):
                n = 0
                while j + 1 + n < len(tokens) and tokens[j + 1 + n] == ("digit", "0"):
                    n += 1
                frac_digits = max(frac_digits, n)
    has_seconds = any(k == "date" and v[0] in "sS" for k, v in tokens) or any(
        k == "elapsed" and "s" in v for k, v in tokens
    )
    minutes = frozenset(i for i, (k, v) in enumerate(tokens) if k == "date" and v[0] in "mM" and _is_minute(tokens, i))
    ampm = any(k == "ampm" for k, _ in tokens)
    return frac_digits, has_seconds, ampm, locale.upper().endswith("41F"), minutes


def _format_date(serial: float, section: _Section) -> str:  # noqa: C901  (one flat dispatch over date parts)
    tokens = section.tokens
    if section.date_plan is None:
        section.date_plan = _date_plan(tokens)
    frac_digits, has_seconds, ampm, turkish, minutes = section.date_plan
    months = _MONTHS_TR if turkish else _MONTHS_EN
    days = _DAYS_TR if turkish else _DAYS_EN
    step = 10**-frac_digits if has_seconds else 1e-3
    total = round(serial * 86400 / step) * step if has_seconds else serial * 86400
    days_whole = math.floor(total / 86400 + 1e-9)
    seconds = total - days_whole * 86400
    if serial < 0 and not any(k == "elapsed" for k, _ in tokens):
        raise ValueError("negative date")
    moment = _EPOCH + _dt.timedelta(days=days_whole)  # openpyxl has already undone Excel's 1900 leap-year bug
    hour, rem = divmod(seconds, 3600)
    minute, sec = divmod(rem, 60)
    hour, minute = int(hour), int(minute)
    whole_sec = int(sec + 1e-9)
    out: list[str] = []
    kinds = list(tokens)
    for i, (k, v) in enumerate(kinds):
        low = v.lower()
        if k == "date":
            c = low[0]
            if c == "y":
                out.append(str(moment.year)[-2:] if len(low) <= 2 else str(moment.year))
            elif c == "m":
                if i in minutes:
                    out.append(f"{minute:02d}" if len(low) >= 2 else str(minute))
                elif len(low) >= 5:
                    out.append(months[moment.month - 1][0])
                elif len(low) == 4:
                    out.append(months[moment.month - 1])
                elif len(low) == 3:
                    out.append(months[moment.month - 1][:3])
                else:
                    out.append(f"{moment.month:02d}" if len(low) == 2 else str(moment.month))
            elif c == "d":
                if len(low) >= 4:
                    out.append(days[moment.weekday()])
                elif len(low) == 3:
                    out.append(days[moment.weekday()][:3])
                else:
                    out.append(f"{moment.day:02d}" if len(low) == 2 else str(moment.day))
            elif c == "h":
                h = hour % 12 or 12 if ampm else hour
                out.append(f"{h:02d}" if len(low) >= 2 else str(h))
            elif c == "s":
                out.append(f"{whole_sec:02d}" if len(low) >= 2 else str(whole_sec))
                if frac_digits and i + 1 < len(kinds) and kinds[i + 1] == ("other", "."):
                    frac = f"{sec - whole_sec:.{frac_digits}f}"[2:]
                    out.append("." + frac)
            elif c == "b":
                out.append(str(moment.year + 543)[-2:] if len(low) == 1 else str(moment.year + 543))
            elif c == "g":
                continue
        elif k == "elapsed":
            unit = v[0]
            if unit == "h":
                out.append(str(int(total // 3600)).rjust(len(v), "0"))
            elif unit == "m":
                out.append(str(int(total // 60)).rjust(len(v), "0"))
            else:
                out.append(str(int(total)).rjust(len(v), "0"))
        elif k == "ampm":
            am = hour < 12
            if v.upper() == "A/P":
                out.append(("A" if am else "P") if v[0].isupper() else ("a" if am else "p"))
            else:
                out.append("AM" if am else "PM")
        elif k == "digit" and frac_digits and i > 0 and kinds[i - 1][0] in ("other", "digit"):
            continue  # the fraction digits of seconds, written with the seconds
        elif k == "other" and v == "." and frac_digits and i > 0 and kinds[i - 1][0] == "date":
            continue
        elif k in ("lit", "other", "digit"):
            out.append(v)
    return "".join(out).strip()


def _is_minute(tokens: list[tuple[str, str]], i: int) -> bool:
    """``m``/``mm`` is minutes right after an hour or right before seconds (literals in between ignored)."""
    for j in range(i - 1, -1, -1):
        k, v = tokens[j]
        if k in ("date", "elapsed"):
            if v[0].lower() == "h":
                return True
            break
    for j in range(i + 1, len(tokens)):
        k, v = tokens[j]
        if k in ("date", "elapsed"):
            return v[0].lower() == "s"
    return False
