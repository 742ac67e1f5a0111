"""`handoffscope demo`: collector + dashboard + believable live traffic, on one machine.

    handoffscope demo                      # everything, until Ctrl-C
    handoffscope demo --duration 120       # stop by itself after two minutes
    handoffscope demo --no-dashboard --duration 60 --rate 5

It starts the collector on an embedded DuckDB file and the dashboard, backfills several
weeks of history (so the weekly review has trends), then drives live traffic: scripted
OpenAI Agents SDK runs and LangGraph graphs through the real adapters (offline, no keys)
plus runs reported through the plain recorder — support / billing / refund / escalation
agents, mostly healthy, with every failure kind recurring at a believable rate.

The collector's notifications (docs/alerts.md) go to a small receiver the demo runs
itself (`receiver.py`): the dashboard's Approvals and Run detail pages say who was
notified and when, and the terminal counts what arrived.

`--traffic-only` sends traffic to an existing collector (docker-compose's demo service).
"""

from __future__ import annotations

import argparse
import importlib
import os
import random
import secrets
import signal
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType

from handoffscope.instrumentation import HandoffRecorder, configure, options, stats

from .backfill import backfill
from .config import DemoConfig
from .processes import (
    Child,
    DemoError,
    check_port_free,
    collector_child,
    dashboard_child,
    wait_http,
)
from .receiver import DemoReceiver

FRAMEWORK_MODULES = ("handoffscope.demo.openai_scenarios", "handoffscope.demo.langgraph_scenarios")
RECORDER_MODULE = "handoffscope.demo.recorder_scenarios"
QUIET_SERVICE = "demo-faq"
"""A second demo service with no verifier: its completions read `unverified`."""


def parser(environ: Mapping[str, str] | None = None) -> argparse.ArgumentParser:
    return options.build_parser(
        DemoConfig,
        prog="handoffscope demo",
        description="Start collector + dashboard and drive live, offline agent traffic "
        "through the real adapters.",
        epilog="Every flag also reads HANDOFFSCOPE_<FLAG> (e.g. HANDOFFSCOPE_RATE=5; a switch "
        "reads 1 or 0). Ctrl-C stops everything cleanly.",
        environ=environ,
    )


def parse_args(
    argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
) -> DemoConfig:
    return options.parse(DemoConfig, parser(environ), argv, environ)


class Traffic:
    """Picks scenarios by weight across the framework and recorder modules and runs them."""

    def __init__(self, rng: random.Random, modules: list[ModuleType]) -> None:
        self.rng = rng
        self.choices: list[tuple[Callable[[], str], float]] = []
        for mod in modules:
            for kind, weight in mod.KINDS.items():
                self.choices.append((self._bind(mod, kind), weight))
        self.runs = 0
        self.failures = 0

    def _bind(self, mod: ModuleType, kind: str) -> Callable[[], str]:
        return lambda: mod.run_scenario(kind, self.rng)

    def step(self) -> None:
        fns, weights = zip(*self.choices, strict=True)
        fn = self.rng.choices(fns, weights=weights)[0]
        try:
            fn()
        except Exception as exc:  # a scenario bug must not stop the demo; say it once
            self.failures += 1
            if self.failures <= 3:
                print(f"  ! a demo scenario failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        self.runs += 1


def load_modules(provider: object, quiet_provider: object | None = None) -> list[ModuleType]:
    """The scenario modules, each set up on `provider`; a framework that is missing is skipped.

    `quiet_provider` exports as a second service that never reports a verifier outcome,
    so its completed runs show as `unverified` beside the verified desk.
    """
    recorder_module = importlib.import_module(RECORDER_MODULE)
    recorder_module.setup(provider, quiet_provider=quiet_provider)
    modules = [recorder_module]
    for name in FRAMEWORK_MODULES:
        try:
            mod = importlib.import_module(name)
            mod.setup(provider)
            modules.append(mod)
        except ImportError as exc:
            print(
                f"  ! {name.rsplit('.', 1)[-1]} unavailable ({exc}); continuing without it",
                file=sys.stderr,
            )
    return modules


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rng = random.Random(args.seed or None)
    os.environ.setdefault("HANDOFFSCOPE_FINGERPRINT_KEY", "demo-only-fingerprint-key")
    token = os.environ.get("HANDOFFSCOPE_TOKEN")
    children: list[Child] = []
    logdir = Path(tempfile.mkdtemp(prefix="handoffscope-demo-"))
    stopping = False

    def _stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, _stop)
    api = args.api or f"http://{args.host}:{args.http_port}"
    endpoint = args.otlp_endpoint or api
    provider = None
    quiet = None
    hooks: DemoReceiver | None = None
    try:
        if not args.traffic_only:
            # The collector's notifications go to a receiver of our own (docs/alerts.md),
            # so the dashboard shows "owner notified …" and the terminal counts them.
            # Say which port is taken, and how to pick another, before starting anything.
            check_port_free(args.host, args.http_port, "collector (OTLP/HTTP + API)", "--http-port")
            check_port_free(args.host, args.grpc_port, "collector (OTLP/gRPC)", "--grpc-port")
            if not args.no_dashboard:
                check_port_free(args.host, args.dashboard_port, "dashboard", "--dashboard-port")
            secret = secrets.token_hex(16)
            hooks = DemoReceiver(args.host, secret)
            hooks.start()
            col = collector_child(
                args.db,
                args.host,
                args.http_port,
                args.grpc_port,
                args.grace_seconds,
                notify=hooks.url + "#rate=5&burst=10",
                notify_secret=secret,
                dashboard_url=f"http://{args.host}:{args.dashboard_port}",
            )
            col.start(str(logdir / "collector.log"))
            children.append(col)
            print(
                f"collector: starting on {api} (OTLP/HTTP + API), gRPC :{args.grpc_port}, db {args.db}"
            )
            print(f"notifications: collector posts to the demo's receiver at {hooks.url}")
            wait_http(f"{api}/healthz", col, 60)
            if not args.no_dashboard:
                dash = dashboard_child(api, args.host, args.dashboard_port)
                dash.start(str(logdir / "dashboard.log"))
                children.append(dash)
                wait_http(f"http://{args.host}:{args.dashboard_port}/_stcore/health", dash, 90)
        elif args.api:
            _wait_plain(f"{args.api}/healthz", 120)

        provider = configure(
            service_name=os.environ.get("OTEL_SERVICE_NAME", "demo-support"), endpoint=endpoint
        )
        quiet = configure(service_name=QUIET_SERVICE, endpoint=endpoint, set_global=False)
        recorder = HandoffRecorder(provider)
        modules = load_modules(provider, quiet)

        if args.backfill_weeks > 0 and not args.traffic_only and _stored(api, token) == 0:
            print(f"backfill: {args.backfill_weeks} weeks × {args.backfill_runs} runs of history")

            def progress(done: int, total: int) -> None:
                print(
                    f"\r  backfill: {done}/{total} runs",
                    end="" if done < total else "\n",
                    flush=True,
                )

            backfill(
                recorder,
                weeks=args.backfill_weeks,
                runs_per_week=args.backfill_runs,
                rng=rng,
                progress=progress,
            )
            provider.force_flush()

        if not args.no_dashboard and not args.traffic_only:
            print(
                f"\n  Dashboard: http://{args.host}:{args.dashboard_port}   (Ctrl-C stops the demo)\n"
            )
        traffic = Traffic(rng, modules)
        started = last_report = time.monotonic()
        interval = 1.0 / args.rate if args.rate > 0 else 1.0
        while not stopping:
            t0 = time.monotonic()
            if args.duration and t0 - started >= args.duration:
                break
            for c in children:
                if not c.alive():
                    raise DemoError(
                        f"the {c.name} stopped unexpectedly (log: {logdir / (c.name + '.log')})"
                    )
            traffic.step()
            if t0 - last_report >= 10:
                snap = stats.snapshot()
                print(
                    f"  live: {traffic.runs} runs, {snap['spans_emitted']} spans sent, {snap['spans_dropped']} dropped"
                    + (f"; {hooks.summary()}" if hooks else "")
                )
                last_report = t0
            time.sleep(max(0.0, interval - (time.monotonic() - t0)))
        print(f"demo: stopping after {traffic.runs} live runs")
        return 0
    except KeyboardInterrupt:
        print("\ndemo: Ctrl-C, stopping")
        return 0
    except DemoError as exc:
        print(f"demo: {exc}\n  logs: {logdir}", file=sys.stderr)
        return 1
    finally:
        for p in (provider, quiet):
            if p is not None:
                p.force_flush()
                p.shutdown()
        for c in reversed(children):
            c.stop()
        if hooks is not None:
            print(f"demo: {hooks.summary()}")
            hooks.close()


def _stored(api: str, token: str | None) -> int:
    import json

    req = urllib.request.Request(f"{api}/healthz")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return int(json.load(resp).get("spans_stored", 0))
    except Exception:
        return 0


def _wait_plain(url: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except Exception:
            time.sleep(1)
    raise DemoError(f"{url} did not answer within {timeout:.0f} s")
