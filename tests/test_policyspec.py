"""The one policy grammar (:mod:`condor_rlrep.policyspec`): simulator and live spellings."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from condor_rlrep.errors import InputError
from condor_rlrep.policyspec import NOT_LIVE, STRATEGIES, live_spec, parse_spec


@pytest.mark.parametrize("text, kind, count, strategy, idle, fixed, hook", [
    ("single", "single", 1, None, False, 1, "single"),
    ("fixed:2", "fixed", 2, None, False, 2, "fixed:2"),
    (" fixed:1 ", "fixed", 1, None, False, 1, "fixed:1"),
    ("rl:3", "rl", 3, None, False, None, "agent"),
    ("rl-ucb1:4", "rl", 4, "ucb1", False, None, "agent"),
    ("rl-epsilon-greedy:2", "rl", 2, "epsilon-greedy", False, None, "agent"),
    ("idle-single", "single", 1, None, True, 1, "idle-single"),
    ("idle-fixed:3", "fixed", 3, None, True, 3, "idle-fixed:3"),
    ("idle-rl-thompson:3", "rl", 3, "thompson", True, None, "idle-agent"),
])
def test_specs_both_sides_take(text, kind, count, strategy, idle, fixed, hook):
    for spec in (parse_spec(text), live_spec(text)):
        assert (spec.kind, spec.count, spec.strategy, spec.idle) == (kind, count, strategy, idle)
        assert spec.fixed_replicas == fixed and spec.hook_policy == hook
        assert spec.prefers_idle == idle
        assert spec.text == text.strip()
    assert live_spec(hook).fixed_replicas == fixed  # what the PRE hook reads back
    assert live_spec(hook).idle == idle


@pytest.mark.parametrize("text, strategy, idle", [
    ("agent", None, False), ("ucb1", "ucb1", False), ("thompson", "thompson", False), ("rl", None, False),
    ("rl-ucb1", "ucb1", False), ("idle-agent", None, True), ("idle-epsilon-greedy", "epsilon-greedy", True),
])
def test_live_only_spellings(text, strategy, idle):
    spec = live_spec(text)
    assert (spec.kind, spec.count, spec.strategy, spec.idle) == ("rl", None, strategy, idle)
    assert spec.hook_policy == ("idle-agent" if idle else "agent")
    with pytest.raises(InputError, match=r"rl:R|replica count"):
        parse_spec(text)


def test_model_specs_parse_with_options_and_place_idle():
    spec = parse_spec("model:3,target=0.9,hi=0.5")
    assert (spec.kind, spec.count, dict(spec.options)) == ("model", 3, {"target": 0.9, "hi": 0.5})
    assert spec.prefers_idle and not spec.idle and spec.depends_on_phi
    assert not parse_spec("react:2").depends_on_phi and parse_spec("model-react:2").depends_on_phi
    assert not parse_spec("idle-fixed:2").depends_on_phi and parse_spec("idle-rl:2").depends_on_phi
    assert parse_spec("model:3,target=0.9") == parse_spec("model:3,target=0.90")


def test_model_is_live():  # issue 14: the survival model runs in the hooks (hooks/model.py)
    spec = live_spec("model:3,target=0.9")
    assert (spec.kind, spec.count, spec.hook_policy, spec.fixed_replicas) == ("model", 3, "model:3,target=0.9", None)


@pytest.mark.parametrize("text", ["oracle:3", "react:2", "model-react:3", "idle-oracle:2", "linucb:3",
                                  "lints:2,alpha=0.5"])
def test_live_refuses_simulator_only_policies_in_one_line_naming_them(text):
    with pytest.raises(InputError) as refused:
        live_spec(text)
    message = str(refused.value)
    assert f"'{text}'" in message and "\n" not in message
    assert NOT_LIVE[parse_spec(text).kind] in message and "on a pool use" in message


@pytest.mark.parametrize("text, words", [
    ("nope", "unknown policy"), ("fixed", "unknown policy"), ("fixed:0", ">= 1"), ("rl:0", "1..100"),
    ("fixed:101", "1..100"), ("rl-foo:3", "unknown strategy"), ("idle-idle-single", "unknown policy"),
    ("idle-model:3", "drop idle-"), ("model:3,x=1", "unknown option"), ("model:3,target=x", "must be a number"),
    ("react:3,target=0.9", "no options"), ("single:2", "unknown policy"), ("", "unknown policy"),
    ("linucb:3,target=0.9", "unknown option"), ("idle-lints:3", "drop idle-"), ("lints:0", ">= 1"),
])
def test_bad_specs_are_refused_naming_the_spec(text, words):
    with pytest.raises(InputError, match=words) as refused:
        live_spec(text)
    assert repr(text.strip()) in str(refused.value)


def test_simulator_counts_have_no_live_cap():
    assert parse_spec("fixed:101").count == 101
    with pytest.raises(InputError, match="1..100"):
        live_spec("fixed:101")


_BASES = st.one_of(
    st.just("single"),
    st.integers(1, 100).map(lambda k: f"fixed:{k}"),
    st.tuples(st.sampled_from((None, *STRATEGIES)), st.integers(1, 100)).map(
        lambda t: f"rl-{t[0]}:{t[1]}" if t[0] else f"rl:{t[1]}"),
)


@given(_BASES, st.booleans())
def test_every_live_spec_round_trips_through_its_hook_policy(base, idle):
    """What instrument stores is a spec the hook parses back to the same
    replica count and placement."""
    spec = live_spec(("idle-" if idle else "") + base)
    again = live_spec(spec.hook_policy)
    assert (again.fixed_replicas, again.idle, again.kind) == (spec.fixed_replicas, spec.idle, spec.kind)
    assert parse_spec(spec.text) == spec


@given(st.text(max_size=30))
def test_any_text_parses_or_is_refused_with_an_input_error(text):
    for parse in (parse_spec, live_spec):
        try:
            spec = parse(text)
        except InputError as err:
            assert "policy" in str(err)
        else:
            assert spec.count is None or spec.count >= 1
