"""Reading OTLP trace exports: bytes to messages (`decode`), the allowlist's lean read of
the same bytes (`lean_trace`), and attribute values read by the type the contract expects
(`values`). The receivers (`receiver/`) and the processor (`processor/`) both read through
here; neither reaches into the other.
"""
