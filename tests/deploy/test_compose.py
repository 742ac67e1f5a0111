"""docker-compose.yml and the OpenTelemetry Collector config, validated statically.

Docker has no engine on this machine (only the client), so these files cannot be
started here; instead we parse them and check what a `docker compose up` relies on:
services, commands that our CLI accepts, ports, volumes, and a pipeline whose
receivers/processors/exporters are all defined.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from urllib.parse import urlsplit

import yaml

ROOT = Path(__file__).resolve().parents[2]


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def otelcol(name: str = "otelcol-config.yaml") -> dict:
    return yaml.safe_load((ROOT / "deploy" / name).read_text())


ALERT_SERVICES = {"prometheus", "alertmanager"}
SCALE_OUT_SERVICES = {
    "postgres",
    "collector-a",
    "collector-b",
    "otel-collector-scaleout",
    "dashboard-scaleout",
    "demo-traffic-scaleout",
}
SCALE_OUT_COLLECTORS = ("collector-a", "collector-b")


def test_services_and_images() -> None:
    services = compose()["services"]
    default = {n for n, s in services.items() if not s.get("profiles")}
    assert default == {"otel-collector", "collector", "dashboard", "demo-traffic"}
    assert set(services) - default == ALERT_SERVICES | SCALE_OUT_SERVICES
    assert services["otel-collector"]["image"].startswith("otel/opentelemetry-collector-contrib:")
    assert services["collector"]["build"] == "."
    assert (ROOT / "Dockerfile").is_file()
    for name in ("dashboard", "demo-traffic"):
        assert services[name]["image"] == services["collector"]["image"]


def test_commands_use_real_cli_flags() -> None:
    from handoffscope.collector.config import SETTINGS

    flags = {s.flag for s in SETTINGS}
    cmd = compose()["services"]["collector"]["command"]
    assert cmd[0] == "collector"
    used = [a for a in cmd if a.startswith("--")]
    assert used and set(used) <= flags, set(used) - flags
    dash = compose()["services"]["dashboard"]["command"]
    assert dash[:1] == ["dashboard"] and "--api" in dash
    assert dash[dash.index("--api") + 1] == "http://collector:4318"


def test_ports_and_volumes() -> None:
    c = compose()
    assert c["services"]["dashboard"]["ports"] == ["127.0.0.1:8501:8501"]  # loopback only
    assert "ports" not in c["services"]["collector"]  # reached only inside the network
    mounts = c["services"]["collector"]["volumes"]
    assert any(m.split(":")[0] in c["volumes"] for m in mounts)
    db = cmd_value(c["services"]["collector"]["command"], "--db")
    assert any(db.startswith(m.split(":")[1]) for m in mounts)
    conf_mount = c["services"]["otel-collector"]["volumes"][0].split(":")
    assert (ROOT / conf_mount[0]).is_file()
    assert (
        conf_mount[1]
        == cmd_value(c["services"]["otel-collector"]["command"], None).split("=", 1)[1]
    )


def cmd_value(cmd: list[str], flag: str | None) -> str:
    if flag is None:
        return next(a for a in cmd if a.startswith("--config="))
    return cmd[cmd.index(flag) + 1]


def test_otelcol_pipeline_components_exist() -> None:
    cfg = otelcol()
    pipelines = cfg["service"]["pipelines"]
    assert "traces" in pipelines
    for kind in ("receivers", "processors", "exporters"):
        for name in pipelines["traces"][kind]:
            assert name in cfg[kind], f"{kind[:-1]} {name} used but not defined"
    for ext in cfg["service"].get("extensions", []):
        assert ext in cfg["extensions"]
    exporter = cfg["exporters"][pipelines["traces"]["exporters"][0]]
    assert exporter["endpoint"] == "http://collector:4318"  # the handoffscope service and port


def test_otelcol_filter_keeps_exactly_the_contract_spans() -> None:
    from handoffscope.instrumentation import semconv as sc

    expr = otelcol()["processors"]["filter/handoff-evidence"]["traces"]["span"][0]
    pattern = re.search(r'IsMatch\(name, "(.*)"\)', expr).group(1).replace("\\\\", "\\")
    for name in sc.SPAN_NAMES:
        assert re.match(pattern, name), name
    for other in ("openai.response", "handoff.runner", "chat gpt-4o"):
        assert not re.match(pattern, other), other


def test_alerts_profile_runs_prometheus_and_alertmanager_against_the_collector() -> None:
    services = compose()["services"]
    for name in ALERT_SERVICES:
        svc = services[name]
        assert svc["profiles"] == ["alerts"], name  # optional: `--profile alerts`
        assert all(p.startswith("127.0.0.1:") for p in svc["ports"]), name  # loopback only
        conf_dir = svc["volumes"][0].split(":")
        assert (ROOT / conf_dir[0]).is_dir(), name
        config = cmd_value_prefix(svc["command"], "--config.file=")
        assert config.startswith(conf_dir[1] + "/")
        assert (ROOT / conf_dir[0] / config.rsplit("/", 1)[1]).is_file(), name
    prom = yaml.safe_load((ROOT / "deploy" / "prometheus" / "prometheus.yml").read_text())
    (job,) = prom["scrape_configs"]
    assert job["job_name"] == "handoffscope"  # the rules' up{job="handoffscope"}
    assert job["metrics_path"] == "/metrics"
    assert job["static_configs"][0]["targets"] == ["collector:4318"]  # the collector service
    am = prom["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"]
    assert am == ["alertmanager:9093"]
    assert (ROOT / "deploy" / "prometheus" / prom["rule_files"][0]).is_file()
    assert set(services["prometheus"]["depends_on"]) == {"collector", "alertmanager"}


def cmd_value_prefix(cmd: list[str], prefix: str) -> str:
    return next(a for a in cmd if a.startswith(prefix))[len(prefix) :]


# --- profile scale-out: several collectors on one PostgreSQL (docs/scale-out.md) ----------


def test_scale_out_profile_services_and_images() -> None:
    c = compose()
    services = c["services"]
    for name in SCALE_OUT_SERVICES:
        assert services[name]["profiles"] == ["scale-out"], name  # `--profile scale-out`
    pg = services["postgres"]
    assert pg["image"] == "postgres:15"  # the official image, the major the tests run
    data = [m for m in pg["volumes"] if m.split(":")[1] == "/var/lib/postgresql/data"]
    assert data and data[0].split(":")[0] in c["volumes"]  # a named volume, not the container
    assert "pg_isready" in pg["healthcheck"]["test"]
    assert services["collector-a"]["build"] == "."  # builds the image when run on its own
    for name in (*SCALE_OUT_COLLECTORS, "dashboard-scaleout", "demo-traffic-scaleout"):
        assert services[name]["image"] == services["collector"]["image"], name
    otelcol_image = services["otel-collector-scaleout"]["image"]
    assert otelcol_image.startswith("otel/opentelemetry-collector-contrib:")
    for name in SCALE_OUT_COLLECTORS:
        assert services[name]["depends_on"]["postgres"] == {"condition": "service_healthy"}


def test_scale_out_collectors_share_postgres_with_real_flags_and_no_secret_in_commands() -> None:
    from handoffscope.collector.config import SETTINGS
    from handoffscope.collector.store.postgres_store import is_postgres

    flags = {s.flag for s in SETTINGS}
    services = compose()["services"]
    pg = services["postgres"]
    password = pg["environment"]["POSTGRES_PASSWORD"]
    # From .env or the environment, with a default (for a local trial only).
    assert re.fullmatch(r"\$\{POSTGRES_PASSWORD:-[^}]+\}", password), password
    trial_default = password[len("${POSTGRES_PASSWORD:-") : -1]
    dsns = set()
    for name in SCALE_OUT_COLLECTORS:
        svc = services[name]
        cmd = svc["command"]
        assert cmd[0] == "collector"
        used = [a for a in cmd if a.startswith("--")]
        assert set(used) <= flags, set(used) - flags
        assert "--db" not in used
        dsn = cmd_value(cmd, "--store")
        assert is_postgres(dsn)
        url = urlsplit(dsn)
        assert url.password is None, name  # libpq reads PGPASSWORD instead
        assert url.hostname == "postgres" and url.port == 5432
        assert str(url.port) in pg["expose"]
        assert url.username == pg["environment"]["POSTGRES_USER"]
        assert url.path == "/" + pg["environment"]["POSTGRES_DB"]
        assert svc["environment"]["PGPASSWORD"] == password  # the same secret, not a copy
        assert name in svc["environment"]["HANDOFFSCOPE_ALLOWED_HOSTS"].split(",")
        for flag in ("--http-port", "--grpc-port"):
            assert cmd_value(cmd, flag) in svc["expose"], (name, flag)
        assert "ports" not in svc  # reached only inside the network
        dsns.add(dsn)
    assert len(dsns) == 1  # one shared database
    for name in SCALE_OUT_SERVICES:
        for arg in services[name].get("command", []):
            assert trial_default not in arg and "PASSWORD" not in arg.upper(), (name, arg)


def test_scale_out_otelcol_pipeline_matches_the_default_but_for_the_exporter() -> None:
    cfg = otelcol("otelcol-scaleout.yaml")
    pipeline = cfg["service"]["pipelines"]["traces"]
    for kind in ("receivers", "processors", "exporters"):
        for name in pipeline[kind]:
            assert name in cfg[kind], f"{kind[:-1]} {name} used but not defined"
    for ext in cfg["service"].get("extensions", []):
        assert ext in cfg["extensions"]
    default = otelcol()
    # The same intake and the same evidence filter as the single-collector stack.
    assert cfg["receivers"] == default["receivers"]
    assert cfg["processors"] == default["processors"]
    assert pipeline["processors"] == default["service"]["pipelines"]["traces"]["processors"]
    svc = compose()["services"]["otel-collector-scaleout"]
    mount = svc["volumes"][0].split(":")
    assert mount[0] == "./deploy/otelcol-scaleout.yaml"
    assert mount[1] == cmd_value(svc["command"], None).split("=", 1)[1]


def test_scale_out_otelcol_routes_by_run_id_to_both_collectors() -> None:
    from handoffscope.instrumentation import semconv as sc

    cfg = otelcol("otelcol-scaleout.yaml")
    (name,) = cfg["service"]["pipelines"]["traces"]["exporters"]
    # The contrib load-balancing exporter (renamed load_balancing; loadbalancing an alias).
    assert name.split("/")[0] in {"loadbalancing", "load_balancing"}
    exporter = cfg["exporters"][name]
    assert exporter["routing_key"] == "attributes"
    assert exporter["routing_attributes"] == [sc.RUN_ID]
    otlp = exporter["protocol"]["otlp"]
    assert "endpoint" not in otlp  # the resolver gives each backend's
    assert otlp["tls"]["insecure"] is True  # plain gRPC on the compose network
    services = compose()["services"]
    backends = [
        f"{n}:{cmd_value(services[n]['command'], '--grpc-port')}" for n in SCALE_OUT_COLLECTORS
    ]
    assert exporter["resolver"]["static"]["hostnames"] == backends
    assert set(services["otel-collector-scaleout"]["depends_on"]) == set(SCALE_OUT_COLLECTORS)


def test_scale_out_dashboard_and_demo_traffic() -> None:
    services = compose()["services"]
    dash = services["dashboard-scaleout"]
    assert dash["command"][0] == "dashboard"
    api = host_port(cmd_value(dash["command"], "--api"))
    assert api[0] in SCALE_OUT_COLLECTORS  # any collector serves the whole shared store
    assert api[1] == cmd_value(services[api[0]]["command"], "--http-port")
    (published,) = dash["ports"]
    assert published.startswith("127.0.0.1:")  # loopback only
    # Its own host port: the default dashboard may run beside it.
    assert published.split(":")[1] != services["dashboard"]["ports"][0].split(":")[1]
    demo = services["demo-traffic-scaleout"]
    target = host_port(cmd_value(demo["command"], "--otlp-endpoint"))
    assert target[0] == "otel-collector-scaleout"
    assert target[1] in services["otel-collector-scaleout"]["expose"]
    rx = otelcol("otelcol-scaleout.yaml")["receivers"]["otlp"]["protocols"]["http"]
    assert rx["endpoint"].endswith(":" + target[1])


def host_port(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return str(parts.hostname), str(parts.port)


def test_image_installs_the_collectors_postgresql_extra() -> None:
    project = tomllib.loads((ROOT / "collector" / "pyproject.toml").read_text())
    extra = project["project"]["optional-dependencies"]["postgresql"]
    assert any(dep.startswith("psycopg") for dep in extra)
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"\./collector\[postgresql\]", dockerfile), "the image lacks psycopg"
