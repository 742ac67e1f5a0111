"""Who sees which services once people sign in (handoffscope.dashboard.signin), short of
the browser: `--group-scopes` and its errors, the groups claim, the scope header, and the
cached readers keeping one answer per set of services.

The sign-in itself, through a real OpenID Connect provider in real Chromium, is
test_oidc_signin.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from dashboard_support import BILLING, SUPPORT, open_page, texts

from handoffscope.dashboard import cli, client, signin
from handoffscope.dashboard.config import ENV_GROUP_SCOPES, group_scopes
from handoffscope.instrumentation.semconv import SCOPE_HEADER


def test_group_scopes_map_each_group_to_its_services() -> None:
    assert group_scopes("") == {} and group_scopes("  ") == {}
    assert group_scopes("team-support=support-app, team-billing = billing-app+refunds-app") == {
        "team-support": ("support-app",),
        "team-billing": ("billing-app", "refunds-app"),
    }
    # A name holding a separator is written percent-encoded.
    assert group_scopes("ops%2Cnight=a%2Bb+c%3Dd") == {"ops,night": ("a+b", "c=d")}


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("team-support", "is not GROUP=SERVICE"),
        ("=support-app", "is not GROUP=SERVICE"),
        ("team-support=", "names an empty service"),
        ("team-support=a++b", "names an empty service"),
        ("team-support=a,", "is not GROUP=SERVICE"),
        ("team=a,team=b", "given twice"),
        # More services than the collector narrows one request to.
        (
            "a="
            + "+".join(f"s{i}" for i in range(200))
            + ",b="
            + "+".join(f"t{i}" for i in range(57)),
            "at most 256",
        ),
    ],
)
def test_a_malformed_group_scope_is_refused_at_startup(
    text: str, reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ValueError, match=reason):
        group_scopes(text)
    with pytest.raises(SystemExit) as exc:
        cli.parse_args(["--group-scopes", text], environ={})
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--group-scopes" in err and reason in err
    with pytest.raises(SystemExit):
        cli.parse_args([], environ={ENV_GROUP_SCOPES: text})
    assert ENV_GROUP_SCOPES in capsys.readouterr().err


def test_group_scopes_reach_the_app_by_its_environment_only(monkeypatch) -> None:
    monkeypatch.setenv(ENV_GROUP_SCOPES, "left-over=anything")
    args = cli.parse_args(["--group-scopes", "team-support=support-app"], environ={})
    argv, env = cli.streamlit_command(
        args.api, args.port, args.host, group_scopes=args.group_scopes
    )
    assert env[ENV_GROUP_SCOPES] == "team-support=support-app"
    # Not given: the app must not map groups by a variable the command was not given.
    _, env = cli.streamlit_command(args.api, args.port, args.host)
    assert ENV_GROUP_SCOPES not in env


def test_a_person_sees_the_union_of_their_groups_services() -> None:
    scopes = group_scopes("a=s1+s2,b=s2+s3,c=s4")
    assert signin.services_of(("b", "a"), scopes) == ("s1", "s2", "s3")
    assert signin.services_of(("unmapped",), scopes) == ()
    assert signin.services_of((), scopes) == ()
    assert signin.groups_of(["a", "b", 3, ""]) == ("a", "b")
    assert signin.groups_of("a") == ("a",)  # a provider sending a lone group as a string
    assert signin.groups_of(None) == () and signin.groups_of({"a": 1}) == ()


def test_the_scope_header_names_each_service_percent_encoded() -> None:
    assert client.Connection("http://c", None).headers == {}
    assert client.Connection("http://c", None, ()).headers == {SCOPE_HEADER: ""}
    assert client.Connection("http://c", None, ("a,b", "support-app")).headers == {
        SCOPE_HEADER: "a%2Cb,support-app"
    }


def test_cached_answers_are_kept_per_set_of_services(monkeypatch) -> None:
    """`st.cache_data` is shared by every session: two people with different services asking
    the same question must each get their own answer, never the other's cached one."""
    asked: list[tuple[str, ...] | None] = []

    @client.reader(60)
    def who_asked(conn: client.Connection, question: str) -> str:
        asked.append(conn.services)
        return f"{question} for {conn.services}"

    def as_person(services: tuple[str, ...] | None) -> None:
        monkeypatch.setattr(
            client, "connection", lambda: client.Connection("http://c", None, services)
        )

    as_person(("support-app",))
    assert who_asked("runs") == "runs for ('support-app',)"
    as_person(("billing-app",))
    assert who_asked("runs") == "runs for ('billing-app',)"
    as_person(None)
    assert who_asked("runs") == "runs for None"
    as_person(("support-app",))
    assert who_asked("runs") == "runs for ('support-app',)"  # from the cache
    assert asked == [("support-app",), ("billing-app",), None]


def test_the_collector_answers_each_scope_from_its_own_cache_entry(
    seeded_api: str, monkeypatch
) -> None:
    """The same cached reader, against the real collector, for two scopes in a row."""
    client.clear_cache()

    def as_person(services: tuple[str, ...] | None) -> None:
        monkeypatch.setattr(
            client, "connection", lambda: client.Connection(seeded_api, None, services)
        )

    as_person((SUPPORT,))
    assert client.services() == [SUPPORT]
    as_person((BILLING,))
    assert client.services() == [BILLING]
    as_person(())
    assert client.services() == []
    as_person(None)
    assert client.services() == sorted([BILLING, SUPPORT])


def test_group_scopes_without_sign_in_show_nothing(
    seeded_api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Groups mapped but no `[auth]` to sign in with: an error, not every service."""
    monkeypatch.setenv(ENV_GROUP_SCOPES, f"team-support={SUPPORT}")
    at: Any = open_page("live", monkeypatch, seeded_api)
    said = texts(at)
    assert "Sign-in is not configured, so this dashboard shows nothing." in said
    assert BILLING not in said and SUPPORT not in said
    assert not at.dataframe and not at.selectbox
