"""HTML loader: the declared charset found after a long preamble (Apache Tika's ``big-preamble.html`` case), and a
charset written in the body not taken for the document's."""

from __future__ import annotations

from pathlib import Path

from kaynak.loaders.html import declared_charset, load_html


def test_charset_declared_after_a_long_script_is_honoured(tmp_path: Path) -> None:
    script = b"<script>\n" + b"var x = 1;\n" * 2000 + b"</script>\n"
    head = b"<html><head>" + script + b'<meta http-equiv="Content-Type" content="text/html; charset=windows-1251">'
    data = head + b"</head><body><p>" + "Агентство недвижимости в Москве".encode("cp1251") + b"</p></body></html>"
    assert len(script) > 4096 and declared_charset(data) == "cp1251"
    doc = load_html(tmp_path / "a.html", data)
    assert "Агентство недвижимости в Москве" in doc.pages[0].text


def test_a_charset_written_in_the_body_is_not_the_documents() -> None:
    data = b"<html><head></head><body><pre>&lt;meta charset=koi8-r&gt;</pre><meta charset=koi8-r></body></html>"
    assert declared_charset(data) is None
