"""OpenAI-compatible endpoints: the wire protocol, the plain client, its cache, rate limits, prices, meter."""
