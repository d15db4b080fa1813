"""What ships: the wheel the Dockerfile builds, the compose file, `.env.example`, the README, CI.

The wheel is built exactly as the Dockerfile's builder stage does it (same files copied, same pip
command), so a module or migration missing from the image fails here, not on someone's server.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from bot.settings import Settings
from memory.storage import migrate

REPO = Path(__file__).resolve().parents[2]
RUN_COMMAND = "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/eva run"
TEST_COMMAND = "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/pytest -q"
PACKAGES = ("bot", "memory", "migrations")
# Read by docker-compose.yml for the db service, not by the bot; documented in .env.example.
COMPOSE_ONLY = {"POSTGRES_USER", "POSTGRES_PASSWORD", "POSTGRES_DB"}
SETTING_NAMES = {name.upper() for name in Settings.model_fields}
ENV_LINE = re.compile(r"^(#\s*)?([A-Z][A-Z0-9_]*)=(.*)$")


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    text = (REPO / "Dockerfile").read_text()
    logical = re.sub(r"\\\n\s*", " ", text)
    pairs = []
    for line in logical.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            pairs.append((keyword.upper(), rest.strip()))
    return pairs


def builder_stage() -> list[tuple[str, str]]:
    instructions = dockerfile_instructions()
    starts = [i for i, (keyword, _) in enumerate(instructions) if keyword == "FROM"]
    assert len(starts) == 2, "expected a builder stage and a runtime stage"
    return instructions[starts[0] : starts[1]]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Copy what the builder stage COPYs, run its `pip wheel --no-deps` line, return the wheel."""
    src = tmp_path_factory.mktemp("docker-src")
    out = tmp_path_factory.mktemp("wheels")
    pip_line = None
    for keyword, args in builder_stage():
        if keyword == "COPY":
            *sources, _dest = args.split()
            for source in sources:
                if (REPO / source).is_dir():
                    shutil.copytree(REPO / source, src / source, ignore=shutil.ignore_patterns("__pycache__"))
                else:
                    shutil.copy2(REPO / source, src / source)
        elif keyword == "RUN" and "--no-deps" in args:
            pip_line = args
    assert pip_line is not None, "the builder stage no longer builds the project wheel with --no-deps"
    argv = shlex.split(pip_line)
    assert argv[:2] == ["pip", "wheel"] and "." in argv
    wheel_dir = argv[argv.index("--wheel-dir") + 1]
    argv[argv.index("--wheel-dir") + 1] = str(out)
    done = subprocess.run(
        [sys.executable, "-m", *argv],
        cwd=src,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert wheel_dir == "/wheels/app"  # the runtime stage installs /wheels/app/*.whl
    (built,) = out.glob("*.whl")
    return built


def test_wheel_ships_every_module_and_the_migrations(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {
        path.relative_to(REPO).as_posix()
        for package in PACKAGES
        for path in (REPO / package).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix in {".py", ".mako", ".ini"}
    }
    assert "migrations/versions/0001_initial.py" in expected
    assert "migrations/script.py.mako" in expected
    assert sorted(expected - names) == []
    assert not [n for n in names if n.startswith(("tests/", "bench/"))]


def test_wheel_ships_the_confusables_data_and_its_licence(wheel: Path, tmp_path: Path) -> None:
    """memory/text/confusables.py reads its table from the installed package, not from the repo."""
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {
        "memory/text/data/confusables.txt",
        "memory/text/data/LICENSE-Unicode.txt",
        "memory/text/data/README.md",
    } <= names
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = "import memory.text.confusables as c; print(c.__file__, c.version(), c.skeleton('\u2236'))"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(site)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    where, version, ratio = done.stdout.split()
    assert Path(where).is_relative_to(site) and version == "15.0.0" and ratio == ":"


def test_wheel_declares_the_eva_command(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        (entry_points,) = [n for n in archive.namelist() if n.endswith(".dist-info/entry_points.txt")]
        parser = configparser.ConfigParser()
        parser.read_string(archive.read(entry_points).decode())
    assert parser["console_scripts"]["eva"] == "bot.cli.main:main"


def test_eva_migrate_works_from_the_unpacked_wheel_outside_the_repo(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k.upper() not in SETTING_NAMES}
    env.update(PYTHONPATH=str(site), DATA_DIR=str(tmp_path / "data"))
    code = (
        "import sys, migrations; from bot.cli.main import main; print(migrations.__file__); "
        "sys.exit(main(['migrate']))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    migrations_file, *rest = done.stdout.strip().splitlines()
    assert Path(migrations_file).is_relative_to(site), "migrations were imported from the repo, not the wheel"
    assert rest[-1] == f"database at revision {migrate.head_revision()}"


def test_dockerfile_runs_eva_as_a_non_root_user_from_the_built_wheel() -> None:
    instructions = dockerfile_instructions()
    bases = [args for keyword, args in instructions if keyword == "FROM"]
    assert [base.split()[0] for base in bases] == ["python:3.11-slim", "python:3.11-slim"]
    runtime = instructions[[k for k, _ in instructions].index("FROM", 1) :]
    users = [args for keyword, args in runtime if keyword == "USER"]
    assert users and users[-1] not in {"root", "0"}
    installs = [args for keyword, args in runtime if keyword == "RUN" and "pip install" in args]
    assert any("/wheels/app/" in args for args in installs)
    assert ("ENTRYPOINT", '["eva"]') in runtime and ("CMD", '["run"]') in runtime
    env = " ".join(args for keyword, args in runtime if keyword == "ENV")
    assert "DATA_DIR=/data" in env


def test_healthcheck_runs_eva_health_on_a_heartbeat_file_outside_the_data_volume() -> None:
    """What the check decides is tested in tests/cli/test_health.py; here, that the image runs it."""
    instructions = dockerfile_instructions()
    (args,) = [args for keyword, args in instructions if keyword == "HEALTHCHECK"]
    assert json.loads(args[args.index("CMD") + 3 :]) == ["eva", "health"]
    env = " ".join(args for keyword, args in instructions if keyword == "ENV")
    health_file = re.search(r"HEALTH_FILE=(\S+)", env)
    assert health_file and not health_file.group(1).startswith("/data/")


def test_dockerignore_keeps_secrets_and_local_state_out_of_the_image() -> None:
    ignored = set((REPO / ".dockerignore").read_text().split())
    assert {".env", ".git", ".venv", ".data"} <= ignored


def test_compose_file_wires_bot_to_a_healthy_postgres() -> None:
    # No YAML parser among the dependencies; the docker-compose test below does the real parse.
    text = (REPO / "docker-compose.yml").read_text()
    assert re.search(r"^services:\n  db:\n    image: postgres:18\n", text, re.M)
    assert re.search(r"^  bot:\n    build: \.\n", text, re.M)
    assert "pg_isready" in text
    assert re.search(r"depends_on:\n\s+db:\n\s+condition: service_healthy", text)
    assert re.search(r"DATABASE_URL: postgresql://\S+@db:5432/", text)
    assert "env_file: .env" in text and "DATA_DIR: /data" in text
    assert "- botdata:/data" in text and "- pgdata:/var/lib/postgresql\n" in text
    # db, bot, and the profile `scale`'s first gateway and first worker (the second of each
    # inherits it with a YAML merge key).
    assert text.count("restart: unless-stopped") == 4
    assert re.search(r"^volumes:\n  pgdata:\n  botdata:\n", text, re.M)


def test_compose_profile_scale_splits_the_shards_and_builds_apart() -> None:
    text = (REPO / "docker-compose.yml").read_text()
    assert text.count('profiles: ["scale"]') == 2  # gateway-a and worker-a; -b merge them
    assert re.search(r"^  gateway-a: &gateway\n", text, re.M) and re.search(
        r"^  gateway-b:\n    <<: \*gateway\n", text, re.M
    )
    assert 'command: ["run", "--no-compactor"]' in text and 'command: ["worker"]' in text
    assert 'SHARD_COUNT: "4"' in text and 'SHARD_IDS: "0-1"' in text and 'SHARD_IDS: "2-3"' in text
    readme = (REPO / "README.md").read_text()
    assert "docker compose --profile scale up -d --scale bot=0" in readme


def test_compose_file_validates_with_docker_compose(tmp_path: Path) -> None:
    binary = shutil.which("docker-compose")
    if binary is None:
        pytest.skip("docker-compose not installed (.ci/run installs Debian's 1.29 to run this)")
    shutil.copy(REPO / "docker-compose.yml", tmp_path)
    shutil.copy(REPO / ".env.example", tmp_path / ".env")  # env_file must exist
    done = subprocess.run(
        [binary, "-f", str(tmp_path / "docker-compose.yml"), "config"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "condition: service_healthy" in done.stdout
    assert "DATABASE_URL: postgresql://eva:eva@db:5432/eva" in done.stdout
    scale = subprocess.run(
        [binary, "-f", str(tmp_path / "docker-compose.yml"), "--profile", "scale", "config"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert scale.returncode == 0, scale.stderr
    services = re.findall(r"^  ([a-z-]+):$", scale.stdout.split("\nvolumes:")[0], re.M)
    assert sorted(services) == ["bot", "db", "gateway-a", "gateway-b", "worker-a", "worker-b"]
    assert re.findall(r"SHARD_IDS: '?([0-9-]+)'?", scale.stdout) == ["0-1", "2-3"]
    assert scale.stdout.count("- --no-compactor") == 2 and scale.stdout.count("- worker") == 2


def env_example_lines() -> list[tuple[bool, str, str]]:
    """(commented, NAME, value) for every assignment in .env.example, in order."""
    out = []
    for line in (REPO / ".env.example").read_text().splitlines():
        match = ENV_LINE.match(line)
        if match:
            out.append((match.group(1) is not None, match.group(2), match.group(3)))
    return out


def test_env_example_lists_every_setting_once_each_with_a_comment() -> None:
    names = [name for _, name, _ in env_example_lines()]
    assert len(names) == len(set(names)), "a name is listed twice"
    assert set(names) - COMPOSE_ONLY == SETTING_NAMES
    lines = (REPO / ".env.example").read_text().splitlines()
    for index, line in enumerate(lines):
        match = ENV_LINE.match(line)
        if match and match.group(2) in SETTING_NAMES:
            before = lines[index - 1]
            assert before.startswith("# ") and not ENV_LINE.match(before), f"{match.group(2)} has no comment"


def test_env_example_sets_nothing_but_empty_secrets() -> None:
    active = {name: value for commented, name, value in env_example_lines() if not commented}
    assert active == {"DISCORD_TOKEN": "", "ANTHROPIC_API_KEY": ""}


def test_env_example_shows_the_true_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Uncomment every example with a value (PRICES included) and get exactly the defaults."""
    for name in [*os.environ]:
        if name.upper() in SETTING_NAMES:
            monkeypatch.delenv(name)
    shown = {name: value for commented, name, value in env_example_lines() if commented and value}
    assert "PRICES" in shown
    env_file = tmp_path / ".env"
    env_file.write_text("".join(f"{name}={value}\n" for name, value in shown.items()))
    from_example = Settings(_env_file=env_file)  # type: ignore[call-arg]
    defaults = Settings(_env_file=None)  # type: ignore[call-arg]
    assert from_example.model_dump() == defaults.model_dump()
    assert from_example.price_table().prices == defaults.price_table().prices


def test_readme_gives_the_two_commands_and_every_setting() -> None:
    readme = (REPO / "README.md").read_text()
    assert f"\n{RUN_COMMAND}\n" in readme
    assert f"\n{TEST_COMMAND}\n" in readme
    table_names = set(re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \|", readme, re.M))
    assert table_names == SETTING_NAMES
    for command in (
        "run",
        "migrate",
        "doctor",
        "worker",
        "import",
        "compact",
        "view",
        "zoom",
        "recall",
        "stats",
        "forget",
        "sync-commands",
        "health",
    ):
        assert f"| `eva {command}` |" in readme


def test_ci_runs_the_readme_test_command() -> None:
    script = (REPO / ".ci" / "run").read_text()
    assert f'README_TEST_COMMAND="{TEST_COMMAND}"' in script
    assert 'bash -c "$README_TEST_COMMAND"' in script
    assert script.startswith("#!/usr/bin/env bash\n") and "set -euo pipefail" in script
    assert os.access(REPO / ".ci" / "run", os.X_OK)


def test_compose_rotates_both_services_logs_and_documents_the_persona_mount(tmp_path: Path) -> None:
    text = (REPO / "docker-compose.yml").read_text()
    services = re.split(
        r"^  (?=[\w-]+:[ \n])", text.split("\nservices:\n", 1)[1].split("\nvolumes:\n", 1)[0], flags=re.M
    )
    blocks = {block.split(":", 1)[0]: block for block in services if block.strip()}
    assert set(blocks) == {"db", "bot", "gateway-a", "gateway-b", "worker-a", "worker-b"}
    for name in ("db", "bot", "gateway-a"):  # the other three take theirs from a YAML anchor
        assert re.search(
            r'logging:( &[\w-]+)?\n\s+driver: json-file\n\s+options:\n\s+max-size: "\d+m"\n\s+max-file: "\d+"',
            blocks[name],
        ), name
    assert "logging: *scale-logging" in blocks["worker-a"] and "<<: *gateway" in blocks["gateway-b"]
    assert (
        "# - ./persona.md:/config/persona.md:ro" in blocks["bot"]
        and "PERSONA_FILE=/config/persona.md" in blocks["bot"]
    )
    readme = (REPO / "README.md").read_text()
    assert "./persona.md:/config/persona.md:ro" in readme and "PERSONA_FILE=/config/persona.md" in readme
    # A host's exports reach `eva import` through ./import, read-only, and the README says how.
    assert re.search(r"^      - \./import:/import:ro\n", blocks["bot"], re.M)
    assert "docker compose run --rm bot import /import/" in readme and "./import" in readme
    binary = shutil.which("docker-compose")
    if binary is None:
        return  # the structure above is checked; the real parse needs docker-compose (.ci/run installs it)
    shutil.copy(REPO / "docker-compose.yml", tmp_path)
    shutil.copy(REPO / ".env.example", tmp_path / ".env")
    done = subprocess.run([binary, "-f", str(tmp_path / "docker-compose.yml"), "config"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    # docker-compose 1.29 prints every service, of any profile: all six rotate their logs.
    assert done.stdout.count("driver: json-file") == 6 and done.stdout.count("max-file: '5'") == 6
