# One image for the collector, the dashboard and the demo traffic (docker-compose.yml).
FROM python:3.11-slim
WORKDIR /app
COPY . /app
# The collector's `postgresql` extra (psycopg) is for `--store postgresql://...`: the
# scale-out profile's collectors run this image on a shared PostgreSQL. Bytecode is
# compiled into the image (uv does not by default), or every container would compile its
# imports again at each start.
RUN pip install --no-cache-dir uv \
 && uv pip install --system --no-cache --compile-bytecode -c constraints.txt \
      ./instrumentation "./collector[postgresql]" ./dashboard .
ENV HANDOFFSCOPE_HOST=0.0.0.0
EXPOSE 4317 4318 8501
ENTRYPOINT ["handoffscope"]
CMD ["--help"]
