"""``fedbandit yardstick``: every reference in every setting on the same instances, with
the numbers it sends per agent-step and the privacy it spends."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fedbandit_env import registry
from fedbandit_env.cli import main
from fedbandit_env.runner.yardstick import (
    YardstickRow,
    strongest,
    yardstick,
    yardstick_policies,
    yardstick_settings,
)
from fedbandit_env.settings import SETTINGS


def test_rows_say_what_each_reference_sends_and_spends() -> None:
    rows = yardstick(["neighbours", "gossip", "neighbours+private", "server"], n_agents=3,
                     n_arms=2, horizon=30, trials=2)  # fmt: skip
    got = {(r.setting, r.policy): r for r in rows}
    assert {p for s, p in got if s == "neighbours"} == set(
        yardstick_policies("neighbours", "biased")
    )
    # a complete graph of 3: 3 edges a step for 3 agents; coop_ts sends 2M = 4 numbers
    coop = got[("neighbours", "coop_ts")]
    assert (coop.message_dim, coop.links_per_agent_step) == (4, 1.0)
    assert coop.numbers_per_agent_step == 4.0 and coop.privacy == float("inf")
    # gossip: one edge a step for the whole network
    assert got[("gossip", "coop_ts")].links_per_agent_step == pytest.approx(1 / 3)
    # a policy's own mechanism and the setting's tree report the same epsilon
    assert got[("neighbours", "epoch_private_ts")].privacy == 1.0
    assert got[("neighbours+private", "private_coop_ts")].privacy == 1.0
    assert got[("neighbours", "local_ucb")].numbers_per_agent_step == 0.0
    assert got[("server", "oracle_ucb")].privileged
    # server_ts uploads every step: one uplink per agent-step
    assert got[("server", "server_ts")].links_per_agent_step == 1.0
    # the same instances in every row: a silent policy scores the same in two settings
    assert got[("neighbours", "local_ucb")].mean == got[("server", "local_ucb")].mean


def test_bad_requests_are_refused() -> None:
    with pytest.raises(ValueError, match="settings must be among"):
        yardstick(["sync"])
    with pytest.raises(ValueError, match="trials must be >= 2"):
        yardstick(["local"], trials=1)
    assert "sync" not in yardstick_settings()


def test_the_command_writes_one_table_per_setting(tmp_path: Path) -> None:
    page = tmp_path / "yardstick.md"
    argv = ["yardstick", "--settings", "local,server", "--horizon", "20", "--trials", "2",
            "--agents", "3", "--arms", "2", "--markdown", str(page)]  # fmt: skip
    assert main(argv) == 0
    text = page.read_text()
    assert "## `local`" in text and "## `server`" in text and "## `gossip`" not in text
    assert "| `server_ts` |" in text and "| `oracle_ucb`* |" in text


def _page_rows(text: str) -> list[YardstickRow]:
    """The committed page's rows, read back (setting headers, then table rows)."""
    rows, setting = [], ""
    row = re.compile(
        r"^\| `(?P<p>[\w.\-]+)`(?P<star>\*?) \| (?P<m>[\d.,]+) \[(?P<lo>[\d.,]+), "
        r"(?P<hi>[\d.,]+)\] \|"
    )
    for line in text.splitlines():
        if (head := re.match(r"^## `(.+)`$", line)) is not None:
            setting = head.group(1)
        elif (m := row.match(line)) is not None:
            num = [float(m.group(k).replace(",", "")) for k in ("m", "lo", "hi")]
            rows.append(YardstickRow(setting, m.group("p"), *num, 0.0, 0, 0.0, 0.0, 0,
                                     bool(m.group("star"))))  # fmt: skip
    return rows


def test_the_strongest_tag_follows_the_committed_yardstick() -> None:
    """Issue 64: the policies tagged ``strongest`` are exactly those the yardstick page
    measures among the strongest of a setting with communication (the best row and every
    row whose interval overlaps it; ``local`` settings have the ``local`` tag instead),
    and each setting's ``strongest:`` line is the rule applied to its own rows. Fails
    when a regenerated page moves the best and the registrations are not updated."""
    page = Path(__file__).parents[2] / "docs" / "yardstick.md"
    text = page.read_text()
    rows = _page_rows(text)
    measured = strongest(rows)
    assert set(measured) == set(yardstick_settings())
    for setting, best in measured.items():
        assert f"## `{setting}`\n\nstrongest: {', '.join(f'`{p}`' for p in best)}\n" in text
    talking = {p for s, best in measured.items() if SETTINGS[s].protocol for p in best}
    tagged = set(registry.tagged("strongest"))
    assert tagged == talking, (
        f"tagged but not measured strongest: {sorted(tagged - talking)}; measured "
        f"strongest but not tagged: {sorted(talking - tagged)}"
    )
