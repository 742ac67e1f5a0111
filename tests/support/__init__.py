"""Test support shared by every folder of tests/ (importable as `support`: pytest puts
tests/ on sys.path for the root conftest):

- `support.collector`: the real collector process and the real OTLP senders into it;
- `support.polling.eventually`: the one way to wait for something asynchronous;
- `support.evidence`: the one evidence vocabulary (contract attributes of each span kind,
  and `Run`, one run's evidence on a sender);
- `support.otlp`: OTLP payloads built by hand (chosen ids, broken spans, foreign scopes);
- `support.privacy`: the one sentinel scan; `support.dashboard`: the app and its pages;
- `support.shim`: a handoff through the shim's recorder; `support.ports.free_port`.
"""
