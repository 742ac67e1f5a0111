# One image for the collector, the dashboard and the demo traffic (docker-compose.yml).
FROM python:3.11-slim
WORKDIR /app
COPY . /app
# The collector's `postgresql` extra (psycopg) is for `--store postgresql://...`: the
# scale-out profile's collectors run this image on a shared PostgreSQL.
RUN pip install --no-cache-dir uv \
 && uv pip install --system --no-cache -c constraints.txt \
      ./instrumentation "./collector[postgresql]" ./dashboard .
ENV HANDOFFSCOPE_HOST=0.0.0.0
EXPOSE 4317 4318 8501
ENTRYPOINT ["handoffscope"]
CMD ["--help"]
