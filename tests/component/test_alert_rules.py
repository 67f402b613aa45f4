"""The shipped alert rules (deploy/prometheus/alerts.yml): valid for Prometheus (`promtool
check rules`), firing as their tests say (`promtool test rules`, series in, alerts out), and
naming only series the real hub serves, so a renamed metric cannot leave a rule silent."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.component.test_hub_metrics import scrape

RULES = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
ALERT = re.compile(r"^\s*- alert:\s*(\w+)\s*$", re.MULTILINE)
EXPR = re.compile(r"^\s*expr:\s*(.+)$", re.MULTILINE)  # each rule's expression is one line
TIMEOUT = 60  # seconds any promtool run may take; it takes well under one


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.fail(
            "promtool not found: install Debian's prometheus package (tests/services/install)"
        )
    return subprocess.run(
        [promtool, *args], cwd=RULES, capture_output=True, text=True, timeout=TIMEOUT
    )


def _failure(run: subprocess.CompletedProcess[str]) -> str:
    """promtool's own words when it failed, as the assertion's message."""
    return f"promtool {' '.join(run.args[1:])} failed:\n{run.stdout}{run.stderr}"


def test_the_rules_are_valid_prometheus_rules():
    run = _promtool("check", "rules", "alerts.yml")
    assert run.returncode == 0, _failure(run)


def test_the_rules_fire_as_their_tests_say():
    run = _promtool("test", "rules", "alerts.test.yml")
    assert run.returncode == 0, _failure(run)


def test_every_alert_the_issue_names_is_shipped():
    assert set(ALERT.findall((RULES / "alerts.yml").read_text())) >= {
        "BlackwidowNodeDead",
        "BlackwidowShardWithoutLeader",
        "BlackwidowMonitorCycleStale",
        "BlackwidowDatabaseDown",
        "BlackwidowStoreDown",
        "BlackwidowWebhookBacklog",
        "BlackwidowBudgetSpent",
    }


def test_the_rules_name_only_series_the_hub_serves(client):
    text = (RULES / "alerts.yml").read_text()
    expressions = EXPR.findall(text)
    assert len(expressions) == len(ALERT.findall(text))
    named = {name for expr in expressions for name in re.findall(r"\bblackwidow_\w+", expr)}
    assert named and named <= set(scrape(client))
