"""The ready-made Prometheus and Alertmanager files, checked by the real tools.

Debian's `promtool` and `amtool` (packages prometheus, prometheus-alertmanager; .ci/run
installs them) validate the rules, run the rules' unit tests (alerts_test.yml, alerts_weekly_test.yml), and
validate the Prometheus and Alertmanager configs. The Grafana dashboard's queries are
checked the same way (each becomes a recording rule promtool must parse) and may only
use families docs/api.md lists.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import yaml
from alerts_support import need_binary
from test_health_metrics import documented_families

ROOT = Path(__file__).resolve().parents[2]
PROM = ROOT / "deploy" / "prometheus"
AM = ROOT / "deploy" / "alertmanager" / "alertmanager.yml"
RULE_TESTS = ("alerts_test.yml", "alerts_weekly_test.yml")
GRAFANA = ROOT / "deploy" / "grafana" / "handoffscope-dashboard.json"


def run(*cmd: str, cwd: Path = PROM) -> str:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def test_rules_are_valid() -> None:
    out = run(need_binary("promtool"), "check", "rules", "alerts.yml")
    assert "SUCCESS: 8 rules found" in out


def test_rules_unit_tests_pass() -> None:
    out = run(need_binary("promtool"), "test", "rules", *RULE_TESTS)
    assert out.count("SUCCESS") == len(RULE_TESTS)


def test_every_alert_has_a_unit_test_that_fires_it() -> None:
    rules = yaml.safe_load((PROM / "alerts.yml").read_text())["groups"][0]["rules"]
    tests = [t for f in RULE_TESTS for t in yaml.safe_load((PROM / f).read_text())["tests"]]
    fired = {
        case["alertname"]
        for t in tests
        for case in t.get("alert_rule_test", [])
        if case.get("exp_alerts")
    }
    assert fired == {r["alert"] for r in rules}


def test_prometheus_config_is_valid() -> None:
    out = run(need_binary("promtool"), "check", "config", "prometheus.yml")
    assert "is valid prometheus config file syntax" in out


def test_alertmanager_config_is_valid() -> None:
    out = run(need_binary("amtool"), "check-config", str(AM))
    assert "SUCCESS" in out


def test_rules_use_only_served_families() -> None:
    known = {re.sub(r"<name>", "", f) for f in documented_families()} | {"up"}
    text = (PROM / "alerts.yml").read_text()
    used = set(re.findall(r"\b((?:handoffscope|process)_[a-z_]+|up)\{", text))
    assert used and used <= known, used - known


def test_grafana_dashboard_queries_parse_and_use_documented_families(tmp_path: Path) -> None:
    doc = json.loads(GRAFANA.read_text())
    exprs = [t["expr"] for p in doc["panels"] for t in p["targets"]]
    assert len(exprs) >= 10
    # A documented `handoffscope_engine_<name>_total` stands for each engine counter.
    known = [re.compile("^" + re.sub(r"<name>", "[a-z_]+", f) + "$") for f in documented_families()]
    known.append(re.compile("^up$"))
    for e in exprs:
        for name in re.findall(r"\b((?:handoffscope|process)_[a-z_]+|up)\{", e):
            assert any(k.match(name) for k in known), (name, e)
    # `$service` is Grafana's variable; promtool sees a plain regex string.
    rules = {
        "groups": [
            {
                "name": "grafana",
                "rules": [{"record": f"panel:{i}", "expr": e} for i, e in enumerate(exprs)],
            }
        ]
    }
    path = tmp_path / "grafana_rules.yml"
    path.write_text(yaml.safe_dump(rules))
    out = run(need_binary("promtool"), "check", "rules", str(path), cwd=tmp_path)
    assert f"SUCCESS: {len(exprs)} rules found" in out
