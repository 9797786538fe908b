FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md alembic.ini ./
COPY mojodex_core ./mojodex_core
COPY backend ./backend
COPY background ./background
COPY migrations ./migrations
COPY tasks_config ./tasks_config
COPY webapp ./webapp
RUN pip install --no-cache-dir -e .
ENV PYTHONUNBUFFERED=1
EXPOSE 5001
CMD ["gunicorn", "-k", "gthread", "-w", "1", "--threads", "100", "-b", "0.0.0.0:5001", "backend.wsgi:app"]
