#!/usr/bin/env python3
"""Checks compose.yaml without a container engine (CI has none to run it with).

    python3 .ci/check_compose.py [REPOSITORY_ROOT]

- Syntax: the file parses as YAML; the shell scripts services run (`sh -c`, CMD-SHELL
  healthchecks) pass `sh -n`.
- Structure: a `services` mapping; every service runs a pinned image (`name:TAG` with TAG a
  version of at least major.minor: no `latest`, no untagged image, no `build`); every service
  that keeps running has a healthcheck (so `docker compose up --wait` means ready); ports are
  published on loopback addresses only; `depends_on` names services that exist.
- Coverage: the environment file the `certs` service writes (.compose/env, which the README's
  container test command sources) exports every server variable the tests read, and each
  URL's host:port is published by a service (or, for a service on the host's network, is a
  port its command names) of the URL's kind. The files it names under .compose/ are ones the
  `certs` service makes. A variable exported that no test reads is stale and refused too.

The tests' variables are found in the Rust sources: every `env_url("NAME", …)` (the testkit's
URL reader, which every server test uses) and, in test and bench files, every
`var("NAME")`/`var_os("NAME")` whose NAME ends in _URL, _CA, _CLIENT_CERT or _CLIENT_KEY.
Exits 1 with one line per problem; prints a summary on success. Needs PyYAML.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import yaml

# A tag that names a release: 15.8, 7.2.5, 3.20.3, optionally with a variant (-bookworm).
VERSION_TAG = re.compile(r"^v?\d+\.\d+(\.\d+)*([-_][A-Za-z0-9.]+)?$")
ENV_URL_CALL = re.compile(r'env_url\(\s*"([A-Z][A-Z0-9_]*)"')
ENV_VAR_CALL = re.compile(
    r'\bvar(?:_os)?\(\s*"([A-Z][A-Z0-9_]*_(?:URL|CA|CLIENT_CERT|CLIENT_KEY))"\s*\)'
)
EXPORT_LINE = re.compile(r"^\s*export\s+([A-Z][A-Z0-9_]*)=(.*)$")
LOOPBACK = re.compile(r"^127\.\d+\.\d+\.\d+$")
# Which services may serve a URL scheme: a service's name must contain one of these words.
KIND_OF_SCHEME = {
    "postgres": ("postgres", "pgbouncer"),
    "postgresql": ("postgres", "pgbouncer"),
    "redis": ("redis",),
    "rediss": ("redis",),
    "redis+cluster": ("redis",),
    "rediss+cluster": ("redis",),
    "mongodb": ("mongo",),
}
DEFAULT_PORT = {"postgres": 5432, "postgresql": 5432, "mongodb": 27017}


def test_variables(root: Path) -> dict[str, str]:
    """The server variables the tests read: name -> the first file that reads it."""
    found: dict[str, str] = {}
    for path in sorted(rust_files(root)):
        rel = path.relative_to(root)
        text = path.read_text(encoding="utf-8", errors="replace")
        names = set(ENV_URL_CALL.findall(text))
        if {"tests", "benches"} & set(rel.parts):
            names |= set(ENV_VAR_CALL.findall(text))
        for name in names:
            found.setdefault(name, str(rel))
    return found


def rust_files(root: Path):
    """The repository's .rs files, outside build output and VCS folders."""
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = [d for d in subfolders if d not in ("target", ".git", ".compose")]
        for file in files:
            if file.endswith(".rs"):
                yield Path(folder) / file


def as_list(value) -> list:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def command_text(service: dict) -> str:
    parts = as_list(service.get("command")) + as_list(service.get("entrypoint"))
    return "\n".join(str(p) for p in parts)


def shell_scripts(service: dict) -> list[str]:
    """The shell scripts a service runs: `sh -c SCRIPT` commands and CMD-SHELL healthchecks,
    as the container's shell sees them (compose has turned `$$` into `$`)."""
    scripts = []
    for key in ("command", "entrypoint"):
        argv = service.get(key)
        if (
            isinstance(argv, list)
            and len(argv) >= 3
            and argv[0] in ("sh", "bash")
            and "c" in str(argv[1])
        ):
            scripts.append(str(argv[2]))
    test = (service.get("healthcheck") or {}).get("test")
    if isinstance(test, list) and test[:1] == ["CMD-SHELL"]:
        scripts.extend(str(t) for t in test[1:])
    return [script.replace("$$", "$") for script in scripts]


def shell_syntax_error(script: str) -> str | None:
    """What `sh -n` (a POSIX shell, as in the images) says is wrong with `script`, if anything."""
    result = subprocess.run(["sh", "-n", "-c", script], capture_output=True, text=True, check=False)
    if result.returncode == 0:
        return None
    return result.stderr.strip() or f"sh -n exits with {result.returncode}"


def published_ports(name: str, service: dict, problems: list[str]) -> set[int]:
    """The host ports `service` publishes, checking that each is bound to loopback."""
    ports: set[int] = set()
    for entry in as_list(service.get("ports")):
        if isinstance(entry, dict):
            host_ip, published = str(entry.get("host_ip", "")), str(entry.get("published", ""))
        else:
            fields = str(entry).split(":")
            if len(fields) == 3:
                host_ip, published = fields[0], fields[1]
            elif len(fields) == 2:
                host_ip, published = "", fields[0]
            else:
                problems.append(f"{name}: port {entry!r} publishes a random host port")
                continue
        if not LOOPBACK.match(host_ip) and host_ip != "localhost":
            problems.append(f"{name}: port {entry!r} is not bound to a loopback address")
        if published.isdigit():
            ports.add(int(published))
        else:
            problems.append(f"{name}: port {entry!r} has no fixed host port")
    return ports


def check_structure(services: dict, problems: list[str]) -> dict[str, set[int]]:
    """Checks every service; returns the host ports each one serves."""
    serves: dict[str, set[int]] = {}
    one_shot = {
        dep
        for service in services.values()
        if isinstance(service.get("depends_on"), dict)
        for dep, how in service["depends_on"].items()
        if isinstance(how, dict) and how.get("condition") == "service_completed_successfully"
    }
    for name, service in services.items():
        if not isinstance(service, dict):
            problems.append(f"{name}: not a mapping")
            continue
        image = service.get("image")
        if "build" in service:
            problems.append(f"{name}: builds an image; use a pinned published one")
        if not isinstance(image, str) or not image:
            problems.append(f"{name}: no image")
        else:
            reference, _, digest = image.partition("@")
            last = reference.rsplit("/", 1)[-1]
            tag = last.split(":", 1)[1] if ":" in last else ""
            if not tag and not digest:
                problems.append(f"{name}: image {image} has no tag (that means latest)")
            elif tag == "latest":
                problems.append(f"{name}: image {image} is not pinned (latest)")
            elif tag and not VERSION_TAG.match(tag):
                problems.append(f"{name}: image {image}: tag {tag} names no major.minor release")
        depends_on = service.get("depends_on") or []
        for dep in depends_on if isinstance(depends_on, list) else list(depends_on):
            if dep not in services:
                problems.append(f"{name}: depends on {dep}, which is not a service")
        if name not in one_shot and "healthcheck" not in service:
            problems.append(
                f"{name}: no healthcheck, so `docker compose up --wait` does not wait for it"
            )
        ports = published_ports(name, service, problems)
        if service.get("network_mode") == "host":
            # Its servers listen on the host: the ports are the ones its command names.
            named = re.findall(r"\b(\d{4,5})\b", command_text(service))
            ports |= {int(p) for p in named if 1024 <= int(p) <= 65535}
        serves[name] = ports
        for script in shell_scripts(service):
            error = shell_syntax_error(script)
            if error:
                problems.append(f"{name}: shell syntax: {error}")
    return serves


def exported_env(services: dict, problems: list[str]) -> dict[str, str]:
    """The `export NAME=value` lines the `certs` service writes into .compose/env."""
    certs = services.get("certs")
    if not isinstance(certs, dict):
        problems.append("no `certs` service writing .compose/env")
        return {}
    script = command_text(certs)
    if "cat > env" not in script:
        problems.append("certs: does not write the environment file `env`")
    exports = {}
    for line in script.splitlines():
        match = EXPORT_LINE.match(line)
        if match:
            # Compose turns `$$` into `$`; the file then expands `$ca` and `$(pwd)` when sourced.
            exports[match.group(1)] = match.group(2).strip().strip("'\"").replace("$$", "$")
    for name, value in exports.items():
        for produced in re.findall(r"\.compose/([A-Za-z0-9_.-]+)", value):
            if not re.search(rf"(-out|-keyout|>)\s+{re.escape(produced)}\b", script):
                problems.append(f"{name}: .compose/{produced} is not made by the certs service")
    return exports


def url_endpoints(url: str) -> tuple[str, list[tuple[str, int]]]:
    """The scheme and the (host, port) pairs of a URL (several for a cluster's seed list)."""
    scheme = urlsplit(url).scheme
    authority = url.split("://", 1)[1].split("/", 1)[0].split("?", 1)[0]
    authority = authority.rsplit("@", 1)[-1]
    endpoints = []
    for hostport in authority.split(","):
        host, _, port = hostport.partition(":")
        endpoints.append((host, int(port) if port else DEFAULT_PORT.get(scheme, 6379)))
    return scheme, endpoints


def check_coverage(
    exports: dict[str, str],
    needed: dict[str, str],
    serves: dict[str, set[int]],
    problems: list[str],
) -> None:
    """Checks that .compose/env sets exactly the variables the tests read, each URL served."""
    for name, reader in sorted(needed.items()):
        if name not in exports:
            problems.append(f"{name} (read by {reader}) is not set by .compose/env")
    for name in sorted(set(exports) - set(needed)):
        problems.append(f"{name} is set by .compose/env but no test reads it")
    for name, value in sorted(exports.items()):
        if "://" not in value:
            continue
        scheme, endpoints = url_endpoints(value)
        kinds = KIND_OF_SCHEME.get(scheme)
        if kinds is None:
            problems.append(f"{name}: unknown scheme {scheme}")
            continue
        for host, port in endpoints:
            if host not in ("127.0.0.1", "localhost"):
                problems.append(f"{name}: {host} is not a loopback host")
            servers = [
                s for s, ports in serves.items() if port in ports and any(k in s for k in kinds)
            ]
            if not servers:
                problems.append(f"{name}: no {'/'.join(kinds)} service serves port {port}")


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent)
    problems: list[str] = []
    try:
        compose = yaml.safe_load((root / "compose.yaml").read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        print(f"compose.yaml: {e}")
        return 1
    services = compose.get("services") if isinstance(compose, dict) else None
    if not isinstance(services, dict) or not services:
        print("compose.yaml: no services")
        return 1
    serves = check_structure(services, problems)
    exports = exported_env(services, problems)
    needed = test_variables(root)
    if not needed:
        problems.append("found no server variable in the tests (has env_url been renamed?)")
    check_coverage(exports, needed, serves, problems)
    if problems:
        for problem in problems:
            print(f"compose.yaml: {problem}")
        return 1
    print(
        f"compose.yaml: {len(services)} services, pinned images, shell scripts parse; "
        f".compose/env sets the {len(needed)} server variables the tests read: "
        f"{', '.join(sorted(needed))}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
