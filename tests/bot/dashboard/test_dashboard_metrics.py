"""/metrics: Prometheus's text format, read back with prometheus_client's own parser, and its
counters move when a message is logged and a reply is sent (through the real ingest and reply
cogs, the reply written by the fake Anthropic API)."""

from __future__ import annotations

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from tests.fakes.anthropic_api import FakeAnthropic
from tests.worlds.dashboard_world import DashboardWorld


async def scrape(dash: DashboardWorld) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    async with aiohttp.ClientSession() as http, http.get(f"{dash.base}/metrics") as answer:
        assert answer.status == 200
        assert answer.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = await answer.text()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


async def test_metrics_parse_and_count_a_logged_message_and_a_reply(
    dash: DashboardWorld, fake_anthropic: FakeAnthropic
) -> None:
    before = await scrape(dash)
    assert before[("eva_messages_logged_total", ())] == 0
    assert before[("eva_replies_total", ())] == 0
    stored = before[("eva_messages_stored", ())]
    assert stored == 64 + 7 + 1 + 1 + 3  # general, other, the second server, the DM, hostile
    assert before[("eva_model_calls_total", (("kind", "reply"),))] == 0

    world = dash.world
    await world.alice.send(world.other, "a plain message, no question for anyone")
    middle = await scrape(dash)
    assert middle[("eva_messages_logged_total", ())] == 1
    assert middle[("eva_messages_stored", ())] == stored + 1
    assert middle[("eva_replies_total", ())] == 0

    fake_anthropic.script.push_text("Hello alice, the zebras are all in this channel.")
    await world.alice.send(world.other, f"{world.me.mention} where are the zebras?")
    after = await scrape(dash)
    assert after[("eva_replies_total", ())] == 1
    assert after[("eva_messages_logged_total", ())] == 3  # the question and Eva's answer
    assert after[("eva_model_calls_total", (("kind", "reply"),))] == 1
    assert after[("eva_model_tokens_total", (("direction", "output"), ("kind", "reply")))] > 0
    assert after[("eva_model_cost_usd_total", (("kind", "reply"),))] > 0
    assert ("eva_compactor_backlog_messages", ()) in after and ("eva_compactor_lag_seconds", ()) in after
    assert not any("zebra" in name for name, _ in after)
