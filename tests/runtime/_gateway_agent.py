"""A minimal framework-style agent for the gateway's tests and benchmark: a plain ``openai.AsyncOpenAI``
tool loop (chat completions or the Responses API, streamed or not) inside ``gateway.sample(ctx)``.

The model (:func:`scripted`) asks for the ``add`` tool ``rounds`` times, then answers the sum in a box,
so every sample makes ``rounds + 1`` model calls. Run as a script it probes one sample through a
ManagedTarget with a cache (the killed-and-resumed test runs it in a subprocess)::

    python -m tests.runtime._gateway_agent BASE_URL CACHE_DIR API
"""

from __future__ import annotations

import json
import sys
from typing import Any

import openai

from frontier_qa.adapters._agents import AgentContext
from frontier_qa.adapters._openai_adapter import classify_openai_error
from frontier_qa.runtime import Limits, ManagedTarget, SampleCache
from frontier_qa.runtime._gateway import ModelGateway
from frontier_qa.target import Adapter, Case, ErrorClass, Sampling, Trajectory

ADD = {"name": "add", "description": "a + b", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}
CASE = Case("sum", "Add up, please.")
SAMPLING = Sampling(seed=0, max_tokens=64)


def scripted(rounds: int = 3, echo: str = "") -> Any:
    """Server answers: an ``add`` call per round, then ``\\boxed{<sum of the tool outputs>}`` (and ``echo``)."""

    def answer(body: dict[str, Any], index: int) -> Any:
        items = body.get("messages") or body.get("input") or []
        outputs = [str(i.get("content") if i.get("role") == "tool" else i.get("output")) for i in items
                   if isinstance(i, dict) and (i.get("role") == "tool" or i.get("type") == "function_call_output")]
        if len(outputs) < rounds:
            return {"content": None, "tool_calls": [
                {"name": "add", "arguments": json.dumps({"a": len(outputs), "b": 1})}]}
        return f"The sum is \\boxed{{{sum(int(o) for o in outputs)}}}. {echo}".strip()

    return answer


class LoopAgent(Adapter):
    """One sample = one tool loop with the openai SDK, its model calls routed by the gateway."""

    routes_model_calls = True
    in_process = True
    gateway: ModelGateway | None = None

    def __init__(self, base_url: str, *, api: str = "chat", stream: bool = False, api_key: str = "x") -> None:
        self.id = f"loop-agent:{api}{'+stream' if stream else ''}"
        self.api, self.stream = api, stream
        self.client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0)
        self.secrets = (api_key,)

    async def generate(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
        assert self.gateway is not None, "ManagedTarget sets the gateway"
        ctx = AgentContext(case, start, sampling)
        try:
            with self.gateway.sample(ctx):
                text = await (self._responses(case) if self.api == "responses" else self._chat(case))
        except Exception:
            if ctx.stop_error is not None:
                raise ctx.stop_error from None
            raise
        if ctx.stop_error is not None:
            raise ctx.stop_error
        return [Trajectory(text, usage=ctx.usage, cost_usd=ctx.cost_usd, sample_index=start)]

    def classify(self, exc: BaseException) -> ErrorClass:
        return classify_openai_error(exc, self.secrets)

    async def _chat(self, case: Case) -> str:
        messages: list[dict[str, Any]] = list(case.messages)
        tools = [{"type": "function", "function": ADD}]
        while True:
            if self.stream:
                content, calls = await self._chat_streamed(messages, tools)
            else:
                reply = await self.client.chat.completions.create(model="m", messages=messages,  # type: ignore[arg-type]
                                                                  tools=tools)  # type: ignore[arg-type]
                message = reply.choices[0].message
                content = message.content or ""
                calls = [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}  # type: ignore[union-attr]
                         for c in message.tool_calls or ()]
            if not calls:
                return content
            messages.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                for c in calls]})
            for c in calls:
                args = json.loads(c["arguments"])
                messages.append({"role": "tool", "tool_call_id": c["id"], "content": str(args["a"] + args["b"])})

    async def _chat_streamed(self, messages: list[dict[str, Any]], tools: list[Any]) -> tuple[str, list[dict[str, Any]]]:
        stream = await self.client.chat.completions.create(
            model="m", messages=messages, tools=tools, stream=True,  # type: ignore[arg-type]
            stream_options={"include_usage": True})
        content, calls = "", {}  # type: ignore[var-annotated]
        async for chunk in stream:
            for choice in chunk.choices:
                content += choice.delta.content or ""
                for delta in choice.delta.tool_calls or ():
                    call = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
                    call["id"] = delta.id or call["id"]
                    if delta.function is not None:
                        call["name"] += delta.function.name or ""
                        call["arguments"] += delta.function.arguments or ""
        return content, [calls[k] for k in sorted(calls)]

    async def _responses(self, case: Case) -> str:
        items: list[Any] = [{"role": "user", "content": case.prompt}]
        tools = [{"type": "function", **ADD}]
        while True:
            if self.stream:
                async with self.client.responses.stream(model="m", input=items, tools=tools) as events:  # type: ignore[arg-type]
                    reply = await events.get_final_response()
            else:
                reply = await self.client.responses.create(model="m", input=items, tools=tools)  # type: ignore[arg-type]
            calls = [o for o in reply.output if o.type == "function_call"]
            if not calls:
                return reply.output_text
            for c in calls:
                args = json.loads(c.arguments)
                items.append({"type": "function_call", "call_id": c.call_id, "name": c.name, "arguments": c.arguments})
                items.append({"type": "function_call_output", "call_id": c.call_id, "output": str(args["a"] + args["b"])})


def main(base_url: str, cache_dir: str, api: str) -> None:
    """Probe sample 0 of :data:`CASE` once (the killed-and-resumed test's child process)."""
    target = ManagedTarget(LoopAgent(base_url, api=api), Limits(timeout_s=30.0), cache=SampleCache(cache_dir))
    print(target.sample_sync(CASE, 1, SAMPLING)[0].text, flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:4])
