FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml ./
COPY config ./config
COPY annotation ./annotation
COPY pipeline ./pipeline
COPY frontend ./frontend
COPY data ./data
COPY manage.py ./
RUN pip install --no-cache-dir . gunicorn
ENV OPENBLAS_CORETYPE=Haswell
EXPOSE 8000
