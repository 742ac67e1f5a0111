"""handoffscope dashboard: the Streamlit app operators, on-call engineers and the weekly
review open (docs/architecture.md, "Who it is for" and "Views").

Modules: `app` (router, `streamlit run` target), `views/` (one file per page), `client`
(the only data access: the collector's query API), `layout` (filters, errors, tables),
`charts` (plotly figures), `style` (verdict colours, words, units), `cli`
(`handoffscope dashboard`).
"""
