# One image for every tether process; each Deployment picks the module it runs.
#
# Built from requirements.lock (pip-compile, hashes checked) and nothing else, offline once
# the wheels are fetched:   make wheels && docker build -t tether .
# (The lock is for CPython 3.11.3 or later, as python:3.11-slim is; see deploy/k8s/README.md.)
# It runs as a user of its own, on a read-only root filesystem (/tmp is the one writable
# place, a volume in deploy/k8s): the bytecode is compiled at build time.
FROM python:3.11-slim AS deps
COPY requirements.lock /tmp/requirements.lock
COPY wheels /wheels
RUN python -m venv /venv \
 && /venv/bin/pip install --no-cache-dir --no-index --find-links /wheels \
      --require-hashes -r /tmp/requirements.lock

FROM python:3.11-slim
COPY --from=deps /venv /venv
WORKDIR /app
COPY cli ./cli
COPY libs ./libs
COPY services ./services
RUN python -m compileall -q /app /venv \
 && useradd --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin tether
USER 10001:10001
ENV PATH=/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    TETHER_HOST=0.0.0.0 \
    TETHER_METRICS_HOST=0.0.0.0
CMD ["python", "-m", "services.gateway.main"]
