"""Cost of one request on each model of the default price table, computed by hand.

Prices are USD per million tokens (memory/pricing.py): input / output / 5m write / 1h write /
cache read. Every case uses the same request unless said otherwise:

    input 1,000 + output 500 + 5m write 2,000 + 1h write 4,000 + cache read 10,000
    (prompt = 1,000 + 2,000 + 4,000 + 10,000 = 17,000 tokens, under Haiku 5.5's 100K tier)
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from memory.pricing import PriceTable, Usage, default_prices

REQUEST = Usage(input_tokens=1_000, output_tokens=500, cache_read_tokens=10_000,
                cache_write_5m_tokens=2_000, cache_write_1h_tokens=4_000)  # fmt: skip


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        # Haiku 4.5, 1 / 5 / 1.25 / 2 / 0.10:
        # 1,000x1 + 500x5 + 2,000x1.25 + 4,000x2 + 10,000x0.10
        # = 1,000 + 2,500 + 2,500 + 8,000 + 1,000 = 15,000 -> /1e6 = $0.015
        ("claude-haiku-4-5", Decimal("0.015")),
        # Sonnet 4.5 and 4.6, 3 / 15 / 3.75 / 6 / 0.30:
        # 3,000 + 7,500 + 7,500 + 24,000 + 3,000 = 45,000 -> $0.045
        ("claude-sonnet-4-5", Decimal("0.045")),
        ("claude-sonnet-4-6", Decimal("0.045")),
        # Sonnet 5.5, 2 / 10 / 2.50 / 4 / 0.10 (cache read cut to 0.10 on 2026-10-07):
        # 2,000 + 5,000 + 5,000 + 16,000 + 1,000 = 29,000 -> $0.029
        ("claude-sonnet-5-5", Decimal("0.029")),
        # Haiku 5.5 under 100K, 0.10 / 0.50 / 0.125 / 0.20 / 0.01:
        # 100 + 250 + 250 + 800 + 100 = 1,500 -> $0.0015
        ("claude-haiku-5-5", Decimal("0.0015")),
    ],
)
def test_one_request_on_each_model(model: str, expected: Decimal) -> None:
    assert PriceTable().cost(model, REQUEST) == expected


def test_every_model_of_the_default_table_is_covered() -> None:
    covered = {"claude-haiku-4-5", "claude-sonnet-4-5", "claude-sonnet-4-6", "claude-sonnet-5-5"}
    assert set(default_prices()) == covered | {"claude-haiku-5-5"}


def test_haiku_5_5_over_100k_bills_the_whole_request_at_the_upper_tier() -> None:
    # prompt = 20,000 input + 10,000 5m write + 80,000 read = 110,000 > 100,000, so every token,
    # output included, is at 0.50 / 2.50 / 0.625 / 1.00 / 0.05:
    # 20,000x0.50 + 1,000x2.50 + 10,000x0.625 + 80,000x0.05
    # = 10,000 + 2,500 + 6,250 + 4,000 = 22,750 -> $0.02275
    # (at the lower tier it would be 2,000 + 500 + 1,250 + 800 = 4,550 -> $0.00455)
    usage = Usage(
        input_tokens=20_000, output_tokens=1_000, cache_write_5m_tokens=10_000, cache_read_tokens=80_000
    )
    assert PriceTable().cost("claude-haiku-5-5", usage) == Decimal("0.02275")


def test_haiku_5_5_tier_counts_1h_writes_and_starts_just_past_100k() -> None:
    # Exactly 100,000 prompt tokens stays at the lower tier: 100,000 x 0.10 = 10,000 -> $0.01
    assert PriceTable().cost("claude-haiku-5-5", Usage(input_tokens=100_000)) == Decimal("0.01")
    # 100,001 tokens: all at 0.50 -> 50,000.5 -> $0.0500005
    assert PriceTable().cost("claude-haiku-5-5", Usage(input_tokens=100_001)) == Decimal("0.0500005")
    # 1 input + 100,000 1h writes: the writes count toward the threshold, so the upper tier:
    # 1x0.50 + 100,000x1.00 = 100,000.5 -> $0.1000005
    usage = Usage(input_tokens=1, cache_write_1h_tokens=100_000)
    assert PriceTable().cost("claude-haiku-5-5", usage) == Decimal("0.1000005")


def test_output_does_not_count_toward_the_tier() -> None:
    # 90,000 input + 20,000 output: the prompt is 90,000, lower tier:
    # 90,000x0.10 + 20,000x0.50 = 9,000 + 10,000 = 19,000 -> $0.019
    usage = Usage(input_tokens=90_000, output_tokens=20_000)
    assert PriceTable().cost("claude-haiku-5-5", usage) == Decimal("0.019")


def test_a_dated_model_id_is_priced_as_its_family_and_an_unknown_model_costs_zero() -> None:
    table = PriceTable()
    assert table.cost("claude-haiku-4-5-20251001", REQUEST) == Decimal("0.015")
    assert table.cost("claude-sonnet-4-5-20250929", REQUEST) == Decimal("0.045")
    assert table.cost("some-other-model", REQUEST) == 0
