# triage serve, for a team: see compose.yaml and the README's "Run the bot for a team".
FROM python:3.12-slim

WORKDIR /build
COPY pyproject.toml README.md ./
COPY triage ./triage
COPY templates ./templates
COPY rules ./rules
COPY examples ./examples
RUN pip install --no-cache-dir '.[postgres,serve]' \
    && useradd --system --home-dir /srv --shell /usr/sbin/nologin triage \
    && mkdir -p /srv/rules && cp -r examples /srv/examples && chown -R triage /srv

USER triage
WORKDIR /srv
# The rule files: mount the team's over /srv/rules.
ENV TRIAGE_RULES=/srv/rules PYTHONUNBUFFERED=1
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s \
  CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=4)"
# SIGTERM: the server finishes the deliveries it holds; the rest stay queued.
STOPSIGNAL SIGTERM
# It listens on 0.0.0.0, so it starts only with TRIAGE_DASHBOARD_TOKEN set
# (or --open-dashboard given): the dashboard is shown to no one by default.
ENTRYPOINT ["triage"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8080", "--workers", "4"]
