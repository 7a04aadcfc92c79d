# One image for every tether process; the Deployment picks the module to run.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY cli ./cli
COPY libs ./libs
COPY services ./services
RUN pip install --no-cache-dir . && useradd --uid 10001 tether
USER 10001
ENV TETHER_METRICS_HOST=0.0.0.0 TETHER_HOST=0.0.0.0
CMD ["python", "-m", "services.gateway.main"]
