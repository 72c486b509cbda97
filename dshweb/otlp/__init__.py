"""The OpenTelemetry export: a home's sessions as OTLP metrics (the GenAI semantic
conventions' where they fit) and a span per compaction, sent live beside the hub
(:mod:`dshweb.otlp.live`) or a home's whole history at once (:mod:`dshweb.otlp.backfill`,
``dshweb export-otlp``). docs/opentelemetry.md says how to point dshweb at a collector."""
