"""Mentions as names, the pure part (memory/text/mentions.py): text plus lookup tables in, the
text people see and the people it mentions out. No Discord, no database."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memory.text.mentions import (
    MAX_ID,
    UNKNOWN_USER,
    MentionNames,
    render_mentions,
    scrub_person,
    wanted,
    with_raw_mentions,
)

ALICE, BOB, GENERAL, MODS = 111111111111111111, 222222222222222222, 333333333333333333, 444444444444444444
NAMES = MentionNames(
    users={ALICE: "alice", BOB: "Bobby B."}, channels={GENERAL: "general"}, roles={MODS: "Moderators"}
)


def test_every_kind_of_mention_becomes_what_people_see() -> None:
    text = (
        f"<@{ALICE}> and <@!{BOB}>: see <#{GENERAL}>, ask <@&{MODS}> "
        "<:partyblob:123456789012345678> <a:dance:123456789012345679>"
    )
    rendered = render_mentions(text, NAMES)
    assert rendered.text == "@alice and @Bobby B.: see #general, ask @Moderators :partyblob: :dance:"
    assert rendered.mention_ids == (ALICE, BOB)
    assert rendered.mention_names == ("alice", "Bobby B.")


def test_an_unknown_id_stays_raw_but_is_still_kept_as_mentioned() -> None:
    stranger, lost_channel, lost_role = 999999999999999991, 999999999999999992, 999999999999999993
    text = f"<@{stranger}> in <#{lost_channel}> with <@&{lost_role}>"
    rendered = render_mentions(text, NAMES)
    assert rendered.text == text
    assert rendered.mention_ids == (stranger,)
    assert rendered.mention_names == ("",)


def test_a_person_mentioned_twice_is_kept_once_in_order_of_appearance() -> None:
    rendered = render_mentions(f"<@{BOB}> <@{ALICE}> <@!{BOB}>", NAMES)
    assert rendered.text == "@Bobby B. @alice @Bobby B."
    assert rendered.mention_ids == (BOB, ALICE)


def test_hidden_people_are_never_named_nor_kept() -> None:
    hidden = MentionNames(users=NAMES.users, hidden=frozenset({ALICE}))
    rendered = render_mentions(f"did <@{ALICE}> pay <@{BOB}> back?", hidden)
    assert rendered.text == "did @unknown-user pay @Bobby B. back?"
    assert "alice" not in rendered.text
    assert rendered.mention_ids == (BOB,)


def test_the_default_role_is_not_doubled() -> None:
    guild_id = 555555555555555555
    rendered = render_mentions(f"<@&{guild_id}> hi", MentionNames(roles={guild_id: "@everyone"}))
    assert rendered.text == "@everyone hi"


def test_text_without_mentions_is_returned_as_it_is() -> None:
    for text in ("", "plain words", "a <b>tag</b> and <@notanid> and <#> and <:x:>", "a < b > c"):
        rendered = render_mentions(text, NAMES)
        assert rendered.text == text and rendered.mention_ids == ()


def test_an_id_past_bigint_is_typed_text_not_a_person() -> None:
    huge = "99999999999999999999"  # 20 digits, above 2^63: PostgreSQL's bigint would refuse it
    rendered = render_mentions(f"<@{huge}> <@{MAX_ID}>", MentionNames())
    assert rendered.mention_ids == (MAX_ID,)
    assert wanted(f"<@{huge}> <#{huge}> <@&{huge}>").users == ()
    assert with_raw_mentions(f"<@{huge}>", (), ()) == ((), ())


def test_what_to_look_up() -> None:
    found = wanted(f"<@{ALICE}> <#{GENERAL}> <@&{MODS}> <@!{ALICE}> <:e:123456789012345678>")
    assert (found.users, found.channels, found.roles) == ((ALICE,), (GENERAL,), (MODS,))
    assert not wanted("no ids here")


def test_raw_mentions_left_in_a_text_are_added_to_what_it_mentions() -> None:
    ids, names = with_raw_mentions(f"@alice and <@{BOB}>", (ALICE,), ("alice",), extra=[(ALICE, "x")])
    assert ids == (ALICE, BOB) and names == ("alice", "")


def test_scrubbing_a_person_takes_their_name_and_id_out() -> None:
    rendered = render_mentions(f"<@{ALICE}> owes <@{BOB}> 20 euros, right <@{ALICE}>?", NAMES)
    text, ids, names = scrub_person(rendered.text, rendered.mention_ids, rendered.mention_names, ALICE)
    assert text == "@unknown-user owes @Bobby B. 20 euros, right @unknown-user?"
    assert ids == (BOB,) and names == ("Bobby B.",)


def test_scrubbing_does_not_eat_a_longer_name_nor_other_peoples_words() -> None:
    al = 777777777777777777
    text = "@Al and @Alice met Al at the lake"
    scrubbed, ids, _ = scrub_person(text, (al, ALICE), ("Al", "Alice"), al)
    assert scrubbed == f"{UNKNOWN_USER} and @Alice met Al at the lake"  # a typed "Al" is Alice's word
    assert ids == (ALICE,)


def test_scrubbing_a_raw_mention_and_a_name_ending_in_a_symbol() -> None:
    mira = 156124779118727816
    text = f"welcome @mira ☕! and <@{mira}> and <@!{mira}> but not <@{mira}1>"
    scrubbed, ids, names = scrub_person(text, (mira,), ("mira ☕",), mira)
    assert scrubbed == f"welcome {UNKNOWN_USER}! and {UNKNOWN_USER} and {UNKNOWN_USER} but not <@{mira}1>"
    assert ids == () and names == ()


@given(
    st.lists(st.sampled_from([f"<@{ALICE}>", f"<@!{BOB}>", f"<#{GENERAL}>", " ", "x", "<", ">", "@", "é"]))
)
def test_rendering_then_scrubbing_everyone_leaves_no_name_and_no_id(parts: list[str]) -> None:
    rendered = render_mentions("".join(parts), NAMES)
    text, ids, names = rendered.text, rendered.mention_ids, rendered.mention_names
    for person in (ALICE, BOB):
        text, ids, names = scrub_person(text, ids, names, person)
    assert ids == () and names == ()
    assert "@alice" not in text and "@Bobby B." not in text
    assert str(ALICE) not in text and str(BOB) not in text
