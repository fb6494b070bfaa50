"""Measuring the quantization trade-off: side-by-side evals of two endpoints and load tests.

`sizing compare` runs a task file against two OpenAI-compatible endpoints and scores both;
`sizing loadtest` streams concurrent requests to one endpoint and reports latency figures.
The modules here are the engine behind both commands and the web app's Compare tab:

- tasks.py: the JSONL task file           - client.py: timed calls to an endpoint
- scorers.py: contains/exact/regex/json/judge - compare.py: running and summarising a comparison
- report.py: HTML / Markdown / blind reports  - loadtest.py: the load test
- ui.py: the Compare tab (Gradio)      - stats.py, errors.py: percentiles, typed failures

Nothing here talks to the network at import time.
"""
