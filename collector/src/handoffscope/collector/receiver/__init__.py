"""OTLP receivers: HTTP (`otlp_http`) and gRPC (`otlp_grpc`), sharing `decode` and `export`."""
