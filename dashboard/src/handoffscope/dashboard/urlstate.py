"""Shareable state: a page's filters and selections live in its URL (`st.query_params`).

One call per widget, before it is drawn:

    key = urlstate.bind("window", "1h", key="filter.window.live", options=["15m", "1h", ...])
    st.selectbox("Time window", options, key=key)   # no index= / value=: the state decides

- A URL value this session has not seen yet (a pasted link, the browser's back button)
  sets the widget; one that does not parse, or is not among `options`, is ignored.
- Otherwise the widget keeps its value (`default` the first time). Streamlit forgets a
  widget's state while its page is not shown; a plain key remembers it across pages.
- The value is written back to the URL at once — removed when it is the default, so a
  plain link stays plain.

`share()` draws the copy-link button (a popover with the page's full URL, state included,
and its copy button) in the sidebar; the router calls it after the page has bound its
widgets. Streamlit has no clipboard call of its own; the code block's copy button is its
own, so no script of ours runs in the page.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlencode

import streamlit as st

_SEEN = "_urlstate.seen"
_KEEP = "_urlstate.keep."


def bind(
    param: str,
    default: Any,
    *,
    key: str | None = None,
    parse: Callable[[str], Any] = str,
    dump: Callable[[Any], str] = str,
    options: Sequence[Any] | None = None,
) -> str:
    """Tie the widget of session-state `key` (default: `param`) to `?param=`; returns the key."""
    key = key or param
    seen: dict[str, str | None] = st.session_state.setdefault(_SEEN, {})
    raw = st.query_params.get(param)
    if raw is not None and raw != seen.get(key):
        try:
            value = parse(raw)
        except (ValueError, TypeError):
            pass
        else:
            if options is None or value in options:
                st.session_state[key] = value
    if key not in st.session_state:
        st.session_state[key] = st.session_state.get(_KEEP + key, default)
    value = st.session_state[key]
    if options is not None and value not in options:
        value = st.session_state[key] = default
    st.session_state[_KEEP + key] = value
    text = "" if value is None else dump(value)
    if value == default or text == "":
        if param in st.query_params:
            del st.query_params[param]
        seen[key] = None
    else:
        if st.query_params.get(param) != text:
            st.query_params[param] = text
        seen[key] = text
    return key


def link() -> str:
    """This page's URL with its state (what `share` offers to copy)."""
    base = str(st.context.url or "").split("?", 1)[0]
    params = st.query_params.to_dict()
    return base + ("?" + urlencode(params) if params else "")


def share() -> None:
    """The copy-link button at the bottom of the sidebar: it opens this view's URL, filters
    included, with the code block's copy button beside it."""
    with st.sidebar, st.popover("Copy link", icon=":material/link:", width="stretch"):
        st.caption("This view, filters included — copy it with the button on the right:")
        st.code(link(), language=None, wrap_lines=True)
