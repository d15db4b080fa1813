# Eva in a container. Used by docker-compose.yml next to a postgres:18 service: in Docker the bot
# always talks to DATABASE_URL (the embedded PostgreSQL is for running without Docker).

# --- builder: the project wheel, then wheels for every dependency, so the final stage installs
# offline and carries no build tools or source tree.
FROM python:3.11-slim AS builder
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY memory ./memory
COPY migrations ./migrations
# tests/project/test_packaging.py builds the wheel with this same command and checks what it contains.
RUN pip wheel --no-deps --wheel-dir /wheels/app .
RUN pip wheel --wheel-dir /wheels/deps /wheels/app/*.whl

# --- runtime
FROM python:3.11-slim
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    DATA_DIR=/data \
    LOG_FORMAT=json
# COPY rather than a BuildKit bind mount, so docker-compose v1 (classic builder) can build it too.
COPY --from=builder /wheels /wheels
RUN pip install --no-index --find-links /wheels/deps /wheels/app/*.whl && rm -rf /wheels
# A fixed uid so a bind-mounted /data can be chowned on the host (chown 10001 ./data).
RUN useradd --system --uid 10001 --create-home --home-dir /home/eva eva \
    && mkdir -p /data && chown eva:eva /data
USER eva
# Not the source tree: nothing there, so no stray .env is picked up; settings come from compose.
WORKDIR /home/eva
VOLUME ["/data"]

# Health = "the Discord gateway is connected and the database answered in the last minute":
# `eva run` writes HEALTH_FILE every HEALTH_INTERVAL (15 s) with both, and `eva health` reads it
# (bot/health.py). A TCP connect to the database said nothing about the bot itself. /tmp, not
# /data: the file is this container's state, not something to keep.
ENV HEALTH_FILE=/tmp/eva-health.json
HEALTHCHECK --interval=60s --timeout=10s --start-period=60s --retries=3 CMD ["eva", "health"]

# Exec form: `eva` is PID 1 and receives SIGTERM itself (it exits cleanly on it).
# Any subcommand works too: `docker compose run --rm bot doctor`.
ENTRYPOINT ["eva"]
CMD ["run"]
