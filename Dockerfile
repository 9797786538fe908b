# The web app, built once with Node.js (the same lockfile and command as `make webapp`).
FROM node:20-slim AS webapp-build
WORKDIR /webapp
COPY webapp/package.json webapp/package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error
COPY webapp ./
RUN npm run build

# The compose `webapp` service: nginx serving that build, the API proxied to the backend.
FROM nginx:1.27 AS webapp
COPY --from=webapp-build /webapp/dist /usr/share/nginx/html
COPY webapp/nginx.conf /etc/nginx/conf.d/default.conf

# The platform (backend, background, migrate); it serves the same build at / too. Last: the default target.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md alembic.ini ./
COPY mojodex_core ./mojodex_core
COPY backend ./backend
COPY background ./background
COPY migrations ./migrations
COPY tasks_config ./tasks_config
COPY --from=webapp-build /webapp/dist ./webapp/dist
RUN pip install --no-cache-dir -e .
ENV PYTHONUNBUFFERED=1
EXPOSE 5001
CMD ["gunicorn", "-k", "backend.gevent_worker.QuietQuitGeventWorker", "-w", "1", "--worker-connections", "1000", "--timeout", "120", "-b", "0.0.0.0:5001", "backend.wsgi:app"]
