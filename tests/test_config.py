"""Settings: environment, TOML file, overrides, and clear errors for bad values."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kaynak.config import load_settings
from kaynak.errors import ConfigError


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No KAYNAK_* variable at all (conftest removed the person's; this removes the suite's own), no config file
    anywhere it is looked for: the working folder and the user config folder are empty."""
    for key in [k for k in os.environ if k.startswith("KAYNAK_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.chdir(tmp_path)


def test_every_setting_variable_is_ignored_when_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    """A person's KAYNAK_* variables cannot reach a test: every field has its default here."""
    from kaynak.config import Settings

    defaults = Settings.model_construct()
    s = load_settings()
    for name in Settings.model_fields:
        if name in ("data_dir",):
            continue
        assert getattr(s, name) == getattr(defaults, name), name


def test_defaults() -> None:
    s = load_settings()
    assert s.embedder == "e5-small"
    assert s.database_url is None
    assert s.host == "127.0.0.1"
    assert s.keyword_ranking == "bm25"
    assert s.rrf_k == 60


def test_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KAYNAK_EMBEDDER", "hash")
    monkeypatch.setenv("KAYNAK_DATA_DIR", str(tmp_path / "d"))
    monkeypatch.setenv("KAYNAK_DATABASE_URL", "postgresql://x/y")
    s = load_settings()
    assert (s.embedder, s.data_dir, s.database_url) == ("hash", tmp_path / "d", "postgresql://x/y")


def test_toml_file_and_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "kaynak.toml").write_text('embedder = "use-m3"\nchunk_size = 500\n', encoding="utf-8")
    s = load_settings()
    assert s.embedder == "use-m3" and s.chunk_size == 500
    monkeypatch.setenv("KAYNAK_CHUNK_SIZE", "600")
    assert load_settings().chunk_size == 600  # environment beats the file
    assert load_settings(chunk_size=700).chunk_size == 700  # explicit beats both


def test_explicit_config_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cfg = tmp_path / "elsewhere.toml"
    cfg.write_text('language = "turkish"\n', encoding="utf-8")
    monkeypatch.setenv("KAYNAK_CONFIG", str(cfg))
    assert load_settings().language == "turkish"
    monkeypatch.setenv("KAYNAK_CONFIG", str(tmp_path / "missing.toml"))
    with pytest.raises(ConfigError, match=r"missing\.toml"):
        load_settings()


def test_invalid_values_name_the_setting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KAYNAK_CHUNK_SIZE", "ten")
    with pytest.raises(ConfigError, match="chunk_size"):
        load_settings()
    monkeypatch.delenv("KAYNAK_CHUNK_SIZE")
    with pytest.raises(ConfigError, match="language"):
        load_settings(language="klingon")


def test_malformed_toml(tmp_path: Path) -> None:
    (tmp_path / "kaynak.toml").write_text("embedder = \n", encoding="utf-8")
    with pytest.raises(ConfigError):
        load_settings()
