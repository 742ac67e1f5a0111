"""Sign-in through the organisation's OpenID Connect provider, and who sees which services.

Off unless Streamlit's secrets.toml has an `[auth]` section (Streamlit's own `st.login`,
through Authlib; docs/security.md, "Dashboard sign-in"). Without one, the dashboard is
what it always was: anyone who reaches it sees what its one read credential allows.

With `[auth]`:

- signed out, a person sees a sign-in button and nothing else: no page, no sidebar, no
  service name, no request to the collector;
- signed in, the ID token's `groups` claim is mapped through `--group-scopes`
  (`HANDOFFSCOPE_GROUP_SCOPES`, `GROUP=SERVICE[+SERVICE],…`) to the union of the
  services of the person's groups. Every request to the collector then carries them in
  the `X-Handoffscope-Services` header (`semconv.SCOPE_HEADER`), and the collector answers
  for those services only (another service's run is a 404). A person in no mapped group
  is told so and sees nothing else;
- the sidebar says who is signed in and has a sign-out button (`st.logout`, which also
  ends the session at the provider when it publishes an `end_session_endpoint`).

`scope()` is what every request and every cached answer is keyed on (`client.connection`):
None for "no narrowing", a tuple (maybe empty) for "only these". It fails closed: signed
out, or group scopes given with no `[auth]` to sign in with, is the empty tuple. The
collector does the narrowing rather than the dashboard filtering rows itself, so there is
one place that decides, the same for the dashboard and for anyone calling the API.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import lru_cache

import streamlit as st

from handoffscope.dashboard import style
from handoffscope.dashboard.config import ENV_GROUP_SCOPES, group_scopes

GROUPS_CLAIM = "groups"
"""The ID token claim holding a person's groups (Okta, Dex, Keycloak's group mapper and
Entra ID all can send it under this name)."""
NAME_CLAIMS = ("name", "preferred_username", "email", "sub")
"""Claims tried in order for the "Signed in as" line."""


def configured() -> bool:
    """Whether sign-in is on: Streamlit's secrets hold an `[auth]` section."""
    return st.secrets.load_if_toml_exists() and "auth" in st.secrets


@lru_cache(maxsize=4)
def _mapping(text: str) -> Mapping[str, tuple[str, ...]]:
    # `handoffscope dashboard` refused a malformed value before starting Streamlit.
    return group_scopes(text)


def mapping() -> Mapping[str, tuple[str, ...]]:
    """{group: services} from `HANDOFFSCOPE_GROUP_SCOPES`."""
    return _mapping(os.environ.get(ENV_GROUP_SCOPES, ""))


def groups_of(claim: object) -> tuple[str, ...]:
    """The `groups` claim as names: a list of strings, or one string (some providers send
    a lone group that way); anything else names none."""
    if isinstance(claim, str):
        return (claim,)
    if isinstance(claim, list | tuple):
        return tuple(str(g) for g in claim if isinstance(g, str) and g)
    return ()


def services_of(groups: tuple[str, ...], scopes: Mapping[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The services people of `groups` see: the union over the groups `scopes` maps, sorted
    (one order, so one cache key per set of services)."""
    return tuple(sorted({s for g in groups for s in scopes.get(g, ())}))


def scope() -> tuple[str, ...] | None:
    """The services this session may read (None: every service the credential allows)."""
    if not configured():
        # Group scopes with nothing to sign in with: show nothing, not everything.
        return () if mapping() else None
    if not st.user.is_logged_in:
        return ()
    return services_of(groups_of(st.user.get(GROUPS_CLAIM)), mapping())


def who() -> str:
    """The signed-in person in words, from the first claim of `NAME_CLAIMS` they have."""
    for claim in NAME_CLAIMS:
        value = st.user.get(claim)
        if isinstance(value, str) and value:
            return value
    return "someone"


def gate() -> None:
    """Before any page: let in whoever may see something, and stop the run for everyone
    else after saying why (the router calls it first)."""
    if not configured():
        if mapping():
            st.error(
                f"**Sign-in is not configured, so this dashboard shows nothing.**\n\n"
                f"`{ENV_GROUP_SCOPES}` maps sign-in groups to services, but Streamlit's "
                "secrets.toml has no `[auth]` section to sign in with. Add one "
                '(docs/security.md, "Dashboard sign-in"), or unset the group scopes.',
                icon=":material/lock:",
            )
            st.stop()
        return
    if not st.user.is_logged_in:
        st.title("handoffscope")
        st.write("Sign in with your organisation's account to see the board.")
        st.button("Sign in", type="primary", icon=":material/login:", on_click=st.login)
        st.stop()
    services = scope()
    if not services:
        st.title("handoffscope")
        st.info(
            f"**Signed in as {style.md(who())}, but none of your groups is given any "
            "service here, so there is nothing to show.** Ask the dashboard's operator to "
            "add one of your groups to its group scopes.",
            icon=":material/info:",
        )
        st.button("Sign out", icon=":material/logout:", on_click=st.logout)
        st.stop()
    with st.sidebar:
        st.caption(f"Signed in as {style.md(who())}")
        st.button("Sign out", icon=":material/logout:", on_click=st.logout)
