FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml ./
COPY config ./config
COPY annotation ./annotation
COPY pipeline ./pipeline
COPY frontend ./frontend
COPY data ./data
COPY manage.py ./
# The encoders extra (local CLIP or SigLIP folders): PyTorch's CPU build from its own index,
# not the several-GB CUDA build PyPI would give (EXTRAS="" for an image without it).
ARG EXTRAS=encoders
RUN pip install --no-cache-dir --extra-index-url https://download.pytorch.org/whl/cpu ".[${EXTRAS}]"
ENV OPENBLAS_CORETYPE=Haswell \
    DJANGO_STATIC_ROOT=/app/static \
    CROWDVL_VAR_DIR=/data/var
# Static files are collected into the image and served by WhiteNoise (the key is build-only).
RUN DJANGO_SECRET_KEY=build-only-never-used-at-run-time python manage.py collectstatic --noinput
RUN useradd --create-home crowdvl && mkdir -p /data/var /data/media && chown -R crowdvl /data
USER crowdvl
EXPOSE 8000
CMD ["gunicorn", "config.wsgi", "-b", "0.0.0.0:8000", "-w", "4", "--access-logfile", "-"]
