"""Engine and session factory. One session per unit of work; callers own the transaction."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine


def normalize_url(url: str) -> str:
    """Accept ``postgres://`` and ``postgresql://`` URLs and use the asyncpg driver."""
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://") :]
    if url.startswith("postgresql://"):
        url = "postgresql+asyncpg://" + url[len("postgresql://") :]
    return url


def make_engine(url: str, *, pool_size: int = 10) -> AsyncEngine:
    # pool_pre_ping: a database restart must cost one retried checkout, not a failed turn.
    # hide_parameters: a failed statement's exception (and so any log line or traceback made
    # from it) must not carry the bound values, which are message text and names.
    return create_async_engine(
        normalize_url(url), pool_size=pool_size, max_overflow=10, pool_pre_ping=True, hide_parameters=True
    )


def make_sessions(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)


def database_name(url: str) -> str:
    return make_url(normalize_url(url)).database or ""


def with_database(url: str, name: str) -> str:
    return make_url(normalize_url(url)).set(database=name).render_as_string(hide_password=False)


async def create_database(admin_url: str, name: str) -> None:
    engine = create_async_engine(normalize_url(admin_url), isolation_level="AUTOCOMMIT", hide_parameters=True)
    try:
        async with engine.connect() as conn:
            exists = await conn.scalar(text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name})
            if not exists:
                await conn.execute(text(f'CREATE DATABASE "{name}"'))
    finally:
        await engine.dispose()


async def drop_database(admin_url: str, name: str) -> None:
    engine = create_async_engine(normalize_url(admin_url), isolation_level="AUTOCOMMIT", hide_parameters=True)
    try:
        async with engine.connect() as conn:
            await conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        await engine.dispose()
