"""Platform overhead per turn, against an LLM that answers instantly.

    .venv/bin/python bench/turn_overhead.py [--sessions 50] [--database-url URL] [--profile wall|cpu]

What runs (all on loopback):
  * the scripted OpenAI-compatible server (tests/support/scripted_llm.py), in its own
    process, answering every request at once (no delay between streamed chunks);
  * a live platform server (tests/support/live.py `start_live_server`), in its own
    process: REST + Socket.IO, the in-process turn runner, the real openai client;
  * the clients, in this process: one python-socketio client (websocket transport) per
    session, joined with `start_session`, plus a requests session for REST.

Three phases:
  1. one session, --single-turns sequential question turns (after 3 warm-up turns);
  2. --sessions sessions in parallel threads, each sending --messages question turns in
     sequence; a question reply is `<user_language>en</user_language>
     <ask_user_primary_info>...</ask_user_primary_info>` streamed in 20 chunks;
  3. the same sessions in parallel, each asking once for a --draft-tokens draft:
     `<execution><title>T</title><draft>` + N word chunks + `</draft></execution>`.

Latencies are measured at the client from just before `PUT /user_message` is sent to
the arrival of the first `mojo_token` / the `mojo_message` of that turn. Throughput is
the draft "tokens" (the scripted word chunks, N per draft) delivered through
`draft_token` events, summed over clients, divided by the wall time from the first PUT
to the last `draft_message`; delivered characters per second are printed too. Each
client's concatenated `draft_token` deltas are checked against the final draft.

The database is a fresh temporary SQLite file by default. A Postgres URL may be given
instead: ITS `public` SCHEMA IS DROPPED AND RECREATED, then migrated to head.

The last line printed is machine readable (figures of the --sessions run):
    first_token_p50_ms=... first_token_p99_ms=... message_p50_ms=... tokens_per_s=...
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench._clients import BenchSession, TurnResult, new_session, run_turn
from bench._hosts import QUESTION_TEXT, Local, Remote, draft_words, masked, prepare_database, quiet_logs
from bench._measure import CpuMeter, percentile

# --------------------------------------------------------------------------- reporting


def summarize(
    label: str, results: list[TurnResult], llm_received: dict[str, float], wall_s: float, cpu: str = ""
) -> dict[str, float]:
    ok = [r for r in results if r.ok]
    first = [r.ms(r.t_first) for r in ok if r.t_first is not None]
    final = [r.ms(r.t_final) for r in ok]
    put = [(r.t_put_done - r.t_put) * 1000 for r in ok]
    pre_llm = [(llm_received[r.text] - r.t_put) * 1000 for r in ok if r.text in llm_received]
    llm_to_first = [(r.t_first - llm_received[r.text]) * 1000 for r in ok if r.text in llm_received and r.t_first]
    token_events = [r.token_events for r in ok]
    bad_content = sum(1 for r in ok if not r.content_ok)
    print(
        f"\n== {label}: {len(results)} turns in {wall_s:.2f} s ({len(results) / wall_s:.1f} turns/s), "
        f"{len(results) - len(ok)} failed, {bad_content} with streamed text != final text"
    )
    if cpu:
        print(f"   {cpu}")

    def row(name: str, values: list[float]) -> None:
        if values:
            print(
                f"   {name:<42} p50 {percentile(values, 50):8.1f} ms   p99 {percentile(values, 99):8.1f} ms"
                f"   max {max(values):8.1f} ms"
            )

    row("PUT sent -> first token event", first)
    row("PUT sent -> final message event", final)
    row("  PUT sent -> PUT response", put)
    row("  PUT sent -> LLM request received", pre_llm)
    row("  LLM request received -> first token event", llm_to_first)
    streaming = [(r.t_final - llm_received[r.text]) * 1000 for r in ok if r.text in llm_received and r.kind == "draft"]
    row("  LLM request received -> draft_message", streaming)
    if token_events:
        print(
            "   token events per turn (30 ms coalescing, as in live_settings): "
            f"p50 {percentile(token_events, 50):.0f}, max {max(token_events)}"
        )
    for r in results:
        if not r.ok:
            print(f"   failure: {r.error}")
            break
    return {
        "first_p50": percentile(first, 50),
        "first_p99": percentile(first, 99),
        "final_p50": percentile(final, 50),
        "final_p99": percentile(final, 99),
        "failed": len(results) - len(ok),
        "bad_content": bad_content,
        "stream_p50_ms": percentile(streaming, 50) if streaming else float("nan"),
    }


def in_parallel(
    sessions: list[BenchSession], work: Callable[[BenchSession], list[TurnResult]]
) -> tuple[list[TurnResult], float]:
    barrier = threading.Barrier(len(sessions) + 1)
    outputs: list[list[TurnResult]] = [[] for _ in sessions]
    errors: list[str] = []

    def body(i: int, session: BenchSession) -> None:
        barrier.wait()
        try:
            outputs[i] = work(session)
        except Exception:  # noqa: BLE001
            errors.append(traceback.format_exc())

    threads = [
        threading.Thread(target=body, args=(i, s), name=f"client-{i}", daemon=True) for i, s in enumerate(sessions)
    ]
    for t in threads:
        t.start()
    barrier.wait()
    started = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    for e in errors[:1]:
        print(f"   client thread crashed:\n{e}")
    return [r for out in outputs for r in out], wall


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=50, help="concurrent sessions (default 50)")
    parser.add_argument(
        "--database-url",
        default=None,
        help="default: a temp SQLite file; a Postgres URL has its public schema DROPPED and recreated",
    )
    parser.add_argument("--single-turns", type=int, default=30, help="sequential turns of the 1-session run")
    parser.add_argument("--messages", type=int, default=5, help="question turns per session in the concurrent run")
    parser.add_argument("--draft-tokens", type=int, default=500, help="word chunks per streamed draft")
    parser.add_argument("--turn-timeout", type=float, default=60.0, help="max seconds to wait for one answer")
    parser.add_argument("--deadline", type=float, default=170.0, help="hard stop of the whole bench, seconds")
    parser.add_argument(
        "--profile",
        choices=("wall", "cpu"),
        default=None,
        help="profile the server during the concurrent runs: 'wall' samples every thread's stack "
        "(blocked time included), 'cpu' runs cProfile on a CPU clock around turns and requests "
        "(slows the server several times: read proportions, not times; may pass --deadline)",
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="run the platform and the scripted LLM in this process (shared GIL with the clients)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    quiet_logs()
    bench_started = time.perf_counter()
    hosts: list[Any] = []
    tmpdirs: list[str] = []

    def hard_stop() -> None:
        print(f"\nbench: deadline of {args.deadline:.0f} s reached, aborting", file=sys.stderr, flush=True)
        for host in hosts:
            if host.process is not None and host.process.is_alive():
                host.process.kill()
        for path in tmpdirs:
            shutil.rmtree(path, ignore_errors=True)
        os._exit(3)

    watchdog = threading.Timer(args.deadline, hard_stop)
    watchdog.daemon = True
    watchdog.start()

    database_url, tmpdir = prepare_database(args.database_url)
    if tmpdir:
        tmpdirs.append(tmpdir)
    db_kind = "postgres" if database_url.startswith("postgresql") else "sqlite"
    print(
        f"bench: database {db_kind} ({masked(database_url)}), {os.cpu_count()} cores, "
        f"{'single process' if args.in_process else 'platform, LLM and clients in 3 processes'}"
    )
    sessions: list[BenchSession] = []
    exit_code = 0
    try:
        make_host = Local if args.in_process else Remote
        llm = make_host("llm", args.draft_tokens)
        hosts.append(llm)
        platform = make_host("platform", database_url, llm.base_url)
        hosts.append(platform)
        print(
            f"bench: platform {platform.base_url}, scripted LLM {llm.base_url} "
            f"(ready after {time.perf_counter() - bench_started:.1f} s)"
        )

        from mojodex_core.db import make_engine, make_session_factory

        engine = make_engine(database_url)
        factory = make_session_factory(engine)
        count = max(args.sessions, 1)
        with ThreadPoolExecutor(max_workers=8) as pool:
            sessions = list(pool.map(lambda i: new_session(i, factory, platform.base_url), range(count)))
        engine.dispose()
        print(f"bench: {count} sessions created and joined (t={time.perf_counter() - bench_started:.1f} s)")

        draft_text = "".join(draft_words(args.draft_tokens))

        if args.in_process:
            pids = {"bench (single process)": os.getpid()}
        else:
            pids = {"platform": platform.process.pid, "scripted LLM": llm.process.pid, "clients": os.getpid()}

        # 1. one session, sequential turns
        one = sessions[0]
        for _ in range(3):
            run_turn(one, "question", QUESTION_TEXT, args.turn_timeout)
        meter = CpuMeter(pids, db_kind == "postgres")
        started = time.perf_counter()
        single = [run_turn(one, "question", QUESTION_TEXT, args.turn_timeout) for _ in range(args.single_turns)]
        single_wall = time.perf_counter() - started
        single_cpu = meter.summary()

        # 2. all sessions in parallel, question turns
        if args.profile:
            platform.call("profile_start", args.profile)
        meter = CpuMeter(pids, db_kind == "postgres")
        questions, questions_wall = in_parallel(
            sessions,
            lambda s: [run_turn(s, "question", QUESTION_TEXT, args.turn_timeout) for _ in range(args.messages)],
        )
        questions_cpu = meter.summary()
        profile_questions = platform.call("profile_stop") if args.profile else ""

        # 3. all sessions in parallel, one streamed draft each
        if args.profile:
            platform.call("profile_start", args.profile)
        meter = CpuMeter(pids, db_kind == "postgres")
        drafts, drafts_wall = in_parallel(sessions, lambda s: [run_turn(s, "draft", draft_text, args.turn_timeout)])
        drafts_cpu = meter.summary()
        profile_drafts = platform.call("profile_stop") if args.profile else ""

        received = llm.call("received_times")
        print(
            f"\nbench: scripted LLM answering instantly; latencies measured at the clients "
            f"(total bench time so far {time.perf_counter() - bench_started:.1f} s)"
        )
        s1 = summarize(
            f"1 session, {args.single_turns} sequential question turns", single, received, single_wall, single_cpu
        )
        sn = summarize(
            f"{count} sessions in parallel x {args.messages} sequential question turns",
            questions,
            received,
            questions_wall,
            questions_cpu,
        )
        sd = summarize(
            f"{count} sessions in parallel x 1 streamed draft of {args.draft_tokens} tokens",
            drafts,
            received,
            drafts_wall,
            drafts_cpu,
        )

        ok_drafts = [r for r in drafts if r.ok]
        tokens_per_s = chars_per_s = float("nan")
        if ok_drafts:
            wall = max(r.t_final for r in ok_drafts) - min(r.t_put for r in drafts)
            delivered_tokens = args.draft_tokens * sum(1 for r in ok_drafts if r.content_ok)
            chars = sum(r.delta_chars for r in ok_drafts)
            tokens_per_s = delivered_tokens / wall
            chars_per_s = chars / wall
            events = sum(r.token_events for r in ok_drafts)
            print(
                f"   draft throughput: {delivered_tokens} tokens (scripted chunks, {args.draft_tokens} per draft, "
                f"counted for correct drafts only) in {wall:.2f} s = {tokens_per_s:.0f} tokens/s; "
                f"{chars} delta chars = {chars_per_s:.0f} chars/s; {events} draft_token events"
            )
            print(
                f"   one stream, LLM request -> draft_message: p50 {sd['stream_p50_ms']:.0f} ms "
                f"= {args.draft_tokens / (sd['stream_p50_ms'] / 1000):.0f} tokens/s per session while "
                f"{count} stream at once"
            )
        correct = sum(1 for r in ok_drafts if r.content_ok)
        print(
            f"   correctness: {correct}/{len(drafts)} clients' concatenated draft_token deltas equal the final draft"
            f" ({'OK' if correct == len(drafts) else 'MISMATCH'})"
        )
        if profile_questions:
            print(f"\n== server profile, {count} sessions question turns\n{profile_questions}")
        if profile_drafts:
            print(f"\n== server profile, {count} sessions drafts\n{profile_drafts}")
        failures = s1["failed"] + sn["failed"] + sd["failed"] + s1["bad_content"] + sn["bad_content"]
        if failures or correct != len(drafts):
            exit_code = 1
        print(f"\nbench: done in {time.perf_counter() - bench_started:.1f} s ({db_kind})")
        print(
            f"first_token_p50_ms={sn['first_p50']:.1f} first_token_p99_ms={sn['first_p99']:.1f} "
            f"message_p50_ms={sn['final_p50']:.1f} tokens_per_s={tokens_per_s:.0f}",
            flush=True,
        )
    finally:
        # A client disconnect waits up to 3 s for the server's websocket close frame: all at once.
        with ThreadPoolExecutor(max_workers=max(len(sessions), 1)) as pool:
            list(pool.map(lambda s: s.socket.close(), sessions))
        for host in reversed(hosts):
            host.stop()
        if tmpdir:
            shutil.rmtree(tmpdir, ignore_errors=True)
        watchdog.cancel()
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
