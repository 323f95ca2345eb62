"""CPU one LLM request costs the client alone: ``OpenAIChatClient.chat_iter`` against the fake endpoint.

Why apart from benchmarks/llm_throughput.py: that script times a whole Dagster run (start-up, stage
rows, events, the run's end); this one isolates the client's own share (request building, the
``openai`` SDK and its HTTP library, the reply's parsing, the cache key and the cache write), with
the fake server in a child process so its CPU is not counted. The prompts are the size of a
``full_context`` reader prompt of the bundled oracle sample (``--chars``), each one distinct, so
every request is live (an empty cache folder).

    .venv/bin/python benchmarks/llm_client_cpu.py --requests 2000 --cap 32 --delay 0.05
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.llm.client import OpenAIChatClient  # noqa: E402
from pipeline.llm.protocol import ChatRequest  # noqa: E402

SERVER = """
import sys, time
from pipeline.llm.fake_server import FakeOpenAIServer
srv = FakeOpenAIServer(default_reply="A golden retriever.", default_delay_s=float(sys.argv[1])).start()
print(srv.base_url, flush=True)
sys.stdin.read()
srv.stop()
"""


def cpu_s() -> float:
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime


def requests(n: int, chars: int) -> list[ChatRequest]:
    """``n`` distinct prompts of about ``chars`` characters (a system line, one long user message)."""
    filler = ("I went to the farmers market on Saturday and bought some tomatoes. " * (chars // 64 + 1))[:chars]
    return [
        ChatRequest(
            [
                {"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": f"{filler}\nQuestion {i}: what did I buy?"},
            ]
        )
        for i in range(n)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--cap", type=int, default=32)
    parser.add_argument("--delay", type=float, default=0.05, help="seconds the fake server takes per request")
    parser.add_argument("--chars", type=int, default=12000, help="characters of each prompt")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-probe", action="store_true", help="no hang probe (pipeline/llm/hang.py)")
    args = parser.parse_args()
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(args.delay)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().strip()
        for rep in range(1, args.repeats + 1):
            extra = {"probe_after_s": None} if args.no_probe else {}
            with tempfile.TemporaryDirectory(prefix="membench-llm-client-") as tmp:
                client = OpenAIChatClient(
                    base_url=base_url, model="fake", api_key="sk-test", max_concurrency=args.cap, cache_dir=tmp, **extra
                )
                batch = requests(args.requests, args.chars)
                for req in batch[:1]:  # the first call imports openai and builds the client: not counted
                    client.chat(req.messages)
                cpu, wall = cpu_s(), time.monotonic()
                ok = sum(reply.ok for _, reply in client.chat_iter(batch[1:]))
                cpu, wall = cpu_s() - cpu, time.monotonic() - wall
                client.close()
            n = len(batch) - 1
            print(
                f"#{rep}: {n} requests ({ok} ok) in {wall:.1f} s wall, client CPU {cpu:.2f} s = "
                f"{1000 * cpu / n:.2f} ms per request"
            )
    finally:
        if server.stdin is not None:
            server.stdin.close()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
