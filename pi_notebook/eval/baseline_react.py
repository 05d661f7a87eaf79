"""The minimal baseline: the ReAct loop a user could write in an afternoon. OpenAI Chat
Completions over httpx, one ``python`` tool whose code runs in a persistent Jupyter kernel
(jupyter_client) started in the task's working directory."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from queue import Empty
from typing import Any

import httpx
from jupyter_client.manager import start_new_kernel

from .transcript import Step, Transcript

__all__ = ["PYTHON_TOOL", "Kernel", "run_react"]

PYTHON_TOOL = "Run Python code in a persistent Jupyter kernel (working directory: the data files)."


class Kernel:
    """A Jupyter kernel that runs code and returns its output as text."""

    def __init__(self, cwd: Path) -> None:
        self.manager, self.client = start_new_kernel(cwd=str(cwd), kernel_name="python3")
        self._lock = threading.Lock()  # pydantic-ai runs parallel tool calls in threads

    def run(self, code: str, timeout: float) -> tuple[str, bool]:
        with self._lock:
            return self._run(code, timeout)

    def _run(self, code: str, timeout: float) -> tuple[str, bool]:
        msg_id, error = self.client.execute(code), False
        out: list[str] = []
        deadline = time.monotonic() + timeout
        while True:
            try:
                msg = self.client.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
            except Empty:
                self.manager.interrupt_kernel()
                return "".join(out) + f"\n(stopped after {timeout:.0f} s)", True
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                out.append(content["text"])
            elif kind in ("execute_result", "display_data"):
                out.append(content["data"].get("text/plain", "") + "\n")
            elif kind == "error":
                error = True
                out.append(f"{content['ename']}: {content['evalue']}\n")
            elif kind == "status" and content["execution_state"] == "idle":
                return "".join(out)[-4000:] or "(no output)", error

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


def run_react(
    base_url: str, model: str, api_key: str | None, system: str, prompt: str, cwd: Path,
    *, max_tokens: int, time_limit: float, max_turns: int = 20,
) -> Transcript:  # fmt: skip
    tool = {"type": "function", "function": {"name": "python", "description": PYTHON_TOOL,
            "parameters": {"type": "object", "properties": {"code": {"type": "string"}},
                           "required": ["code"]}}}  # fmt: skip
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system}, {"role": "user", "content": prompt}]  # fmt: skip
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    result, deadline, kernel = Transcript(), time.monotonic() + time_limit, Kernel(cwd)
    try:
        with httpx.Client(base_url=base_url, headers=headers, trust_env=False) as http:
            while result.turns < max_turns:
                left = deadline - time.monotonic()
                if left <= 0:
                    result.timed_out = True
                    break
                body = {"model": model, "messages": messages, "tools": [tool],
                        "max_tokens": max_tokens}  # fmt: skip
                try:
                    response = http.post("/chat/completions", json=body, timeout=left)
                except httpx.TimeoutException:
                    result.timed_out = True
                    break
                if response.status_code != 200:
                    result.error = f"HTTP {response.status_code}: {response.text[:500]}"
                    break
                data = response.json()
                result.turns += 1
                result.tokens_in += data.get("usage", {}).get("prompt_tokens", 0)
                result.tokens_out += data.get("usage", {}).get("completion_tokens", 0)
                message = data["choices"][0]["message"]
                messages.append(message)
                result.reply = message.get("content") or result.reply
                if not message.get("tool_calls"):
                    break
                for call in message["tool_calls"]:
                    try:
                        code = json.loads(call["function"]["arguments"])["code"]
                        output, failed = kernel.run(code, max(1.0, deadline - time.monotonic()))
                    except (ValueError, KeyError, TypeError) as exc:
                        code, output, failed = "", f"Bad arguments: {exc}", True
                    result.steps.append(Step(call["function"]["name"], code, output, failed))
                    reply = {"role": "tool", "tool_call_id": call["id"], "content": output}
                    messages.append(reply)
    finally:
        kernel.close()
    return result
