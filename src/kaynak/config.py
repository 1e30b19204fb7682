"""Settings: one object read from environment variables (prefix ``KAYNAK_``) and an optional TOML file.

Precedence, highest first: explicit arguments (CLI flags), ``KAYNAK_*`` environment variables, the TOML file
(``KAYNAK_CONFIG``, else ``./kaynak.toml``, else ``<user config dir>/kaynak/kaynak.toml``), defaults.
Every setting is documented in the README's Configuration section.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import platformdirs
from pydantic import Field, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from kaynak.errors import ConfigError
from kaynak.vocabulary import KeywordRankingName, LanguageName


def default_data_dir() -> Path:
    return platformdirs.user_data_path("kaynak")


def config_file() -> Path | None:
    """The TOML file in force, if any."""
    explicit = os.environ.get("KAYNAK_CONFIG")
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise ConfigError(f"KAYNAK_CONFIG names {path}, which is not a file.")
        return path
    for candidate in (Path("kaynak.toml"), platformdirs.user_config_path("kaynak") / "kaynak.toml"):
        if candidate.is_file():
            return candidate
    return None


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="KAYNAK_", extra="ignore", validate_default=True)

    # --- storage
    database_url: str | None = Field(
        default=None, description="PostgreSQL URL; unset = the embedded server under data_dir."
    )
    data_dir: Path = Field(default_factory=default_data_dir, description="Where kaynak keeps its data.")
    pool_size: int = Field(default=4, ge=1, le=64)
    migrate: Literal["auto", "always", "never"] = Field(
        default="auto",
        description="schema upgrades at start: auto = only small ones (under a million rows to rewrite, a few "
        "seconds), always = any size, never = none (run `kaynak migrate`)",
    )
    migrate_backup: bool = Field(
        default=True,
        description="with migrate = always: back up to <data_dir>/backups/ before an upgrade that rewrites data",
    )
    read_database_url: str | None = Field(
        default=None,
        description="Read replicas of database_url, comma-separated: searches, listings and MCP read from them.",
    )

    # --- models
    embedder: str = Field(default="e5-small", description="embedder name; `kaynak models` lists them")
    reranker: str | None = Field(default=None, description="st-cross:<model or path>; unset = no reranking")
    threads: int | None = Field(default=None, ge=1, description="CPU threads for models; unset = all cores")
    model_prefixes: dict[str, list[str]] = Field(
        default_factory=dict, description="Override query/passage prefixes per st: model: {name: [q, p]}"
    )

    # --- ingest
    collection: str = Field(default="default", description="Collection used when none is named.")
    language: LanguageName | None = Field(
        default=None, description="Language of new collections; unset = detected from the documents."
    )
    chunk_size: int = Field(default=800, ge=100, le=20000, description="Maximum chunk length in characters.")
    chunk_overlap: int = Field(default=1, ge=0, le=5, description="Whole sentences repeated between chunks.")
    max_file_mb: float = Field(default=100.0, gt=0, description="Larger files are rejected unread.")
    embed_batch: int = Field(default=32, ge=1, le=1024)
    parse_workers: int | None = Field(
        default=None, ge=1, le=256, description="Processes parsing files in parallel; unset = the usable cores."
    )
    parse_memory_mb: int = Field(
        default=2048, ge=64, description="Address-space limit of each parse worker (RLIMIT_AS), in MB."
    )
    parse_timeout_s: float = Field(default=600.0, gt=0, description="Wall-time limit for parsing one file.")
    ocr_languages: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9_]+(\+[A-Za-z0-9_]+)*$",
        description="Tesseract languages for scanned pages and images (e.g. tur+eng); unset = by the collection's "
        "language (turkish: tur+eng, english: eng).",
    )

    # --- sync and watch (docs/adr/0015-watch-and-sync.md)
    watch_poll: bool | None = Field(
        default=None, description="kaynak watch: true polls, false uses OS events; unset = poll on network drives."
    )
    watch_poll_ms: int = Field(default=1000, ge=50, le=600_000, description="Polling interval of kaynak watch.")
    watch_settle_s: float = Field(
        default=1.0, ge=0, le=600, description="A changed file waits this long without changes before it is taken."
    )

    # --- search
    keyword_ranking: KeywordRankingName = "bm25"
    bm25_k1: float = Field(default=0.9, ge=0)
    bm25_b: float = Field(default=0.4, ge=0, le=1)
    bm25_pruning: bool = Field(
        default=True, description="Exact BM25 top k with MaxScore pruning; false = sum every posting (ADR 0012)."
    )
    keyword_parts: int = Field(
        default=0,
        ge=0,
        le=8,
        description="The BM25 leg of a large collection ranked in this many parts at once, on as many connections "
        "(same results); 0 = auto: 2 from 300,000 chunks on a machine with 2 or more cores while no other search of "
        "this process ranks keywords, else 1 (ADR 0032).",
    )
    fusion: Literal["rrf", "convex"] = Field(
        default="convex", description="How hybrid merges its legs: convex (normalised scores) or rrf (ADR 0017)."
    )
    fusion_alpha: float = Field(
        default=0.05, ge=0, le=1, description="convex fusion: the keyword leg's share (the vector leg gets the rest)."
    )
    fusion_normalization: Literal["tmm", "minmax"] = Field(
        default="tmm", description="convex fusion: scores normalised from the theoretical minimum (tmm) or min-max."
    )
    fusion_fill: bool = Field(
        default=True,
        description="convex fusion: keyword-leg chunks the vector leg missed get their exact similarity (ADR 0021).",
    )
    rrf_k: int = Field(default=60, ge=1)
    vector_weight: float = Field(default=1.0, ge=0)
    keyword_weight: float = Field(default=1.0, ge=0)
    candidates: int = Field(default=40, ge=1, le=1000, description="Rows each retriever returns.")
    ef_search: int = Field(default=100, ge=10, le=1000)
    rerank_top: int = Field(default=30, ge=1, le=200)

    # --- servers
    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=1, le=65535)
    api_token: str | None = Field(default=None, description="Bearer token for REST write endpoints.")
    read_token: str | None = Field(default=None, description="Bearer token for REST reads (optional).")
    max_upload_mb: float = Field(default=50.0, gt=0)
    max_body_kb: int = Field(default=1024, ge=1, description="Largest JSON request body (uploads: max_upload_mb).")
    read_timeout_s: float = Field(
        default=30.0, gt=0, description="Longest wait for each part of a request body (the whole: 10x this)."
    )
    allowed_hosts: str | None = Field(
        default=None, description="More Host names (comma-separated) accepted when bound to loopback (proxies)."
    )
    # --- team access (docs/adr/0024-team-access.md)
    rate_search_per_min: int | None = Field(
        default=None,
        ge=0,
        description="Searches (REST and MCP) per minute per token or client address; unset = 120 once tokens exist "
        "(kaynak tokens create), else none; 0 = no limit.",
    )
    rate_upload_per_min: int | None = Field(
        default=None,
        ge=0,
        description="Upload requests per minute per token or client address; unset = 30 once tokens exist, else "
        "none; 0 = no limit.",
    )
    auth_failures_per_min: int = Field(
        default=10, ge=1, description="Wrong bearer tokens per minute per client address before 429 (brute force)."
    )
    audit_searches: bool = Field(
        default=False, description="Count searches per token and day in the database (never the query text)."
    )
    log_file: Path | None = None

    @property
    def read_database_urls(self) -> list[str]:
        """``read_database_url`` split at commas (empty when unset)."""
        return [u.strip() for u in (self.read_database_url or "").split(",") if u.strip()]

    @field_validator("data_dir", mode="before")
    @classmethod
    def _expand(cls, v: Any) -> Any:
        return Path(v).expanduser() if isinstance(v, str | Path) else v

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        path = config_file()
        if path is not None:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=path))
        return tuple(sources)


def load_settings(**overrides: Any) -> Settings:
    """Settings from the environment and TOML file, with ``overrides`` (None values ignored) on top."""
    clean = {k: v for k, v in overrides.items() if v is not None}
    try:
        return Settings(**clean)
    except ValidationError as err:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'settings'}: {e['msg']}" for e in err.errors())
        raise ConfigError(f"invalid setting: {problems} (check KAYNAK_* variables and kaynak.toml)") from None
    except ValueError as err:  # malformed TOML
        raise ConfigError(f"cannot read the configuration file: {err}") from None
