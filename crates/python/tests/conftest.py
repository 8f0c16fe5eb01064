"""Fixtures: a fresh store on every backend, each in its own namespace, removed afterwards.

Server backends read ``REDIS_URL``, ``DATABASE_URL`` and ``MONGODB_URL`` (defaults: the local
servers) as the Rust tests do; a server that cannot be reached skips its tests, unless
``AGENTMEM_REQUIRE_SERVICES`` is set (CI), where it fails them.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from typing import Callable
from urllib.parse import urlsplit, urlunsplit

import pytest
from mcp_support import agentmem_binary

import agentmem

BACKENDS = ["file", "sqlite", "redis", "postgres", "mongodb"]

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379")
DATABASE_URL = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test")
MONGODB_URL = os.environ.get("MONGODB_URL", "mongodb://127.0.0.1:27017/")


def _with_query(url: str, key: str, value: str) -> str:
    separator = "&" if "?" in url else "?"
    return f"{url}{separator}{key}={value}"


def _namespace() -> str:
    return f"py_{uuid.uuid4().hex[:16]}"


def _drop_redis(name: str) -> None:
    # Keys of a store with prefix `name` start with it (hash-tagged on a cluster).
    host = urlsplit(REDIS_URL)
    args = ["redis-cli", "-h", host.hostname or "127.0.0.1", "-p", str(host.port or 6379)]
    if host.password:
        args += ["--no-auth-warning", "-a", host.password]
    for pattern in (f"{name}*", f"{{{name}}}*"):
        keys = subprocess.run(
            args + ["--scan", "--pattern", pattern], capture_output=True, text=True, check=True
        ).stdout.split()
        for start in range(0, len(keys), 500):
            subprocess.run(
                args + ["del", *keys[start : start + 500]], capture_output=True, check=True
            )


def _drop_postgres(name: str) -> None:
    subprocess.run(
        ["psql", DATABASE_URL, "-q", "-c", f'DROP SCHEMA IF EXISTS "{name}" CASCADE'],
        capture_output=True,
        check=True,
    )


def _drop_mongodb(name: str) -> None:
    import pymongo

    client = pymongo.MongoClient(MONGODB_URL, serverSelectionTimeoutMS=5000)
    try:
        client.drop_database(name)
    finally:
        client.close()


def _mongodb_url(name: str) -> str:
    parts = urlsplit(MONGODB_URL)
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, parts.fragment))


class Namespace:
    """A store URL in a fresh namespace of one backend, and how to remove it."""

    def __init__(self, backend: str, tmp_path) -> None:
        self.backend = backend
        self.name = _namespace()
        if backend == "file":
            self.url = f"file://{tmp_path / self.name}"
            self.drop: Callable[[], None] = lambda: None
        elif backend == "sqlite":
            self.url = f"sqlite://{tmp_path / (self.name + '.db')}"
            self.drop = lambda: None
        elif backend == "redis":
            self.url = _with_query(REDIS_URL.rstrip("/") + "/", "prefix", self.name)
            self.drop = lambda: _drop_redis(self.name)
        elif backend == "postgres":
            self.url = _with_query(DATABASE_URL, "schema", self.name)
            self.drop = lambda: _drop_postgres(self.name)
        elif backend == "mongodb":
            self.url = _mongodb_url(self.name)
            self.drop = lambda: _drop_mongodb(self.name)
        else:
            raise ValueError(backend)

    def open(self, **kwargs) -> agentmem.Store:
        return agentmem.open(self.url, **kwargs)


def _unavailable(backend: str, error: Exception) -> None:
    if os.environ.get("AGENTMEM_REQUIRE_SERVICES"):
        pytest.fail(f"the {backend} server is required (AGENTMEM_REQUIRE_SERVICES): {error}")
    pytest.skip(f"no {backend} server: {error}")


@pytest.fixture(params=BACKENDS)
def namespace(request, tmp_path) -> Iterator[Namespace]:
    """A fresh namespace on each backend in turn (removed after the test)."""
    ns = Namespace(request.param, tmp_path)
    try:
        ns.open()
    except agentmem.Unavailable as error:
        _unavailable(ns.backend, error)
    try:
        yield ns
    finally:
        ns.drop()


@pytest.fixture
def store(namespace: Namespace) -> agentmem.Store:
    """A fresh store on each backend in turn."""
    return namespace.open()


@pytest.fixture
def cli() -> Callable[..., subprocess.CompletedProcess]:
    """Runs the `agentmem` command (`AGENTMEM_CLI`, else the one on PATH)."""
    binary = agentmem_binary()

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run([binary, *args], capture_output=True, text=True, check=check)

    return run
