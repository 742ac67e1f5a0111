"""docker-compose.yml and the OpenTelemetry Collector config, validated statically.

Docker has no engine on this machine (only the client), so these files cannot be
started here; instead we parse them and check what a `docker compose up` relies on:
services, commands that our CLI accepts, ports, volumes, and a pipeline whose
receivers/processors/exporters are all defined.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def otelcol() -> dict:
    return yaml.safe_load((ROOT / "deploy" / "otelcol-config.yaml").read_text())


ALERT_SERVICES = {"prometheus", "alertmanager"}


def test_services_and_images() -> None:
    services = compose()["services"]
    default = {n for n, s in services.items() if not s.get("profiles")}
    assert default == {"otel-collector", "collector", "dashboard", "demo-traffic"}
    assert set(services) - default == ALERT_SERVICES
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
