"""The client: one chat model at one OpenAI-compatible endpoint, asked one question at a time.

Retrying belongs to :mod:`tenacity` (:mod:`kbgraph.llm._retry`), not to the ``openai`` client
(built with ``max_retries=0``), so one budget — ``max_attempts`` — covers transient transport
failures and malformed answers alike. Nothing connects at construction time; the ``openai`` client
is created on first use.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, cast

from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt

from kbgraph.llm._answer import Call, T, parse_answer
from kbgraph.llm._retry import Malformed, Transient, backoff_s, status_error
from kbgraph.llm.errors import LLMError, LLMOutputError
from kbgraph.llm.schema import ResponseFormat, bounded_schema, response_format_body, schema_instructions
from kbgraph.llm.stats import LLMStats
from kbgraph.core.extras import require
from kbgraph.core.redact import redact_uri

if TYPE_CHECKING:
    import openai
    from openai.types.chat import ChatCompletion, ChatCompletionMessageParam

    from kbgraph.core.settings import Settings

DEFAULT_ENDPOINT = "https://api.openai.com/v1"


class LLMClient:
    """One chat model at one OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, LM Studio, …)."""

    def __init__(
        self,
        base_url: str | None,
        api_key: str | None,
        model: str,
        timeout_s: float = 60.0,
        max_attempts: int = 4,
        backoff_initial_s: float = 1.0,
        backoff_max_s: float = 20.0,
        max_tokens: int | None = 2048,
        response_format: ResponseFormat = "json_object",
        system_role: bool = True,
        temperature: float | None = None,
    ):
        require("openai", "llm", 'the LLM path (abstractor or reflector = "llm")')
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if max_tokens is not None and max_tokens < 1:
            raise ValueError("max_tokens must be at least 1 (or None: the server's limit)")
        self.base_url = base_url
        self.api_key = api_key
        self.model = model
        self.timeout_s = timeout_s
        self.max_attempts = max_attempts
        self.max_tokens = max_tokens
        self.response_format: ResponseFormat = response_format
        # False: the instructions open the user message instead. Some chat templates have no
        # system role and drop it without a word (llama-cpp-python's "gemma" format does).
        self.system_role = system_role
        # None: not sent, the server's default (reasoning models reject any other value).
        self.temperature = temperature
        self._completion_tokens = False  # the server wants max_completion_tokens (see _request)
        self.backoff_initial_s = backoff_initial_s
        self.backoff_max_s = backoff_max_s
        self.stats = LLMStats()
        #: What the model said in the last call, one text per attempt (each cut at 4,000
        #: characters): to see why a call failed, or what a small model writes.
        self.last_answers: list[str] = []
        self._client: openai.OpenAI | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings) -> LLMClient:
        return cls(
            base_url=settings.llm_base_url,
            api_key=settings.llm_api_key.get_secret_value() if settings.llm_api_key else None,
            model=settings.llm_model,
            timeout_s=settings.llm_timeout_s,
            max_attempts=settings.llm_max_attempts,
            max_tokens=settings.llm_max_tokens,
            response_format=settings.llm_response_format,
            system_role=settings.llm_system_role,
            temperature=settings.llm_temperature,
        )

    @property
    def endpoint(self) -> str:
        """Where requests go, for messages. Without a base URL, ``openai`` reads OPENAI_BASE_URL or
        uses its default; once the client exists it knows which."""
        if self._client is not None:
            return redact_uri(str(self._client.base_url).rstrip("/"))
        return redact_uri((self.base_url or DEFAULT_ENDPOINT).rstrip("/"))

    @property
    def _where(self) -> str:
        return f"{self.model} at {self.endpoint}"

    def __repr__(self) -> str:
        return f"LLMClient(model={self.model!r}, endpoint={self.endpoint!r})"

    def complete_json(
        self, system: str, user: str, schema: type[T], check: Callable[[T], str | None] | None = None
    ) -> T:
        """Asks the model and returns its answer validated as ``schema``.

        The JSON Schema of ``schema`` (strings capped at :data:`MAX_ANSWER_STRING_CHARS`) is
        appended to the system prompt, and sent as ``response_format`` when the server is said to
        constrain output to it. ``check`` may reject an answer that is valid JSON of the right
        shape but wrong in context (say, no steps for a trajectory that has some) by returning
        what is wrong; it is then retried like any malformed answer. Raises
        :class:`LLMOutputError` when every attempt gave an unusable answer,
        :class:`LLMConfigError` when the endpoint refuses the key, model or URL, :class:`LLMError`
        for any other failure.
        """
        with self._lock:
            self.stats.calls += 1
        shown = bounded_schema(schema.model_json_schema())
        instructions = f"{system}\n\n{schema_instructions(shown)}"
        call = Call()
        self.last_answers = call.answers
        retrying = Retrying(
            stop=stop_after_attempt(self.max_attempts),
            wait=self._wait,
            retry=retry_if_exception_type((Transient, Malformed)),
            before_sleep=self._count_retry,
            reraise=True,
        )
        try:
            # tenacity types the wrapped call's result as Any; it is whatever _attempt returned.
            answer = cast(T, retrying(self._attempt, call, instructions, user, schema, shown, check))
        except Malformed as exc:
            self._count("failed")
            raise LLMOutputError(
                f"{self._where} gave no usable answer in {self.max_attempts} "
                f"attempt(s); the last one: {exc.reason}"
            ) from None
        except Transient as exc:
            self._count("failed")
            raise LLMError(
                f"{self._where} failed {self.max_attempts} attempt(s); the last one: {exc.reason}"
            ) from None
        except BaseException:
            self._count("failed")
            raise
        self._count("repaired" if call.repaired else "valid_first_try" if call.attempts == 1 else "valid_after_retry")
        return answer

    # One attempt -----------------------------------------------------------------------------

    def _attempt(
        self, call: Call, instructions: str, user: str, schema: type[T], shown: dict[str, Any],
        check: Callable[[T], str | None] | None,
    ) -> T:
        with self._lock:
            self.stats.attempts += 1
        call.attempts += 1
        if call.problem:
            # Asked again as it was, a model tends to give the same answer; told what was wrong, it
            # often mends it. Only the reason is sent back, never the (possibly long) answer.
            user = (f"{user}\n\nYour previous answer could not be used: {call.problem}. Answer again with one "
                    "complete JSON object, every string short.")
        messages: list[ChatCompletionMessageParam] = (
            [{"role": "system", "content": instructions}, {"role": "user", "content": user}] if self.system_role
            else [{"role": "user", "content": f"{instructions}\n\n{user}"}])
        response = self._request(messages, schema.__name__, shown)
        usage = response.usage
        if usage is not None:
            with self._lock:
                self.stats.prompt_tokens += usage.prompt_tokens or 0
                self.stats.completion_tokens += usage.completion_tokens or 0
        try:
            return parse_answer(response, schema, check, call)
        except Malformed as exc:
            call.problem = exc.reason
            with self._lock:
                self.stats.malformed += 1
            raise

    def _request(self, messages: list[ChatCompletionMessageParam], name: str, shown: dict[str, Any]) -> ChatCompletion:
        import openai

        client = self._get_client()
        while True:
            # ``max_tokens``: the bound every OpenAI-compatible server reads. OpenAI's reasoning
            # models refuse it for ``max_completion_tokens``; told so once, the client switches.
            bound: dict[str, int] = {}
            if self.max_tokens is not None:
                bound["max_completion_tokens" if self._completion_tokens else "max_tokens"] = self.max_tokens
            try:
                # No temperature unless set: reasoning models reject any but the default.
                return client.chat.completions.create(
                    model=self.model, messages=messages,
                    # Forms beyond openai's types, hence the cast.
                    response_format=cast(Any, response_format_body(self.response_format, name, shown)),
                    temperature=self.temperature if self.temperature is not None else openai.omit,
                    extra_body=bound or None,
                )
            except openai.BadRequestError as exc:
                if self._completion_tokens or "max_completion_tokens" not in str(exc) or self.max_tokens is None:
                    raise status_error(exc, self._where) from None
                self._completion_tokens = True
            except openai.APITimeoutError:
                raise Transient(f"no answer within {self.timeout_s:g} s (timeout)") from None
            except openai.APIConnectionError as exc:
                raise Transient(f"cannot connect ({exc.__cause__ or exc})") from None
            except openai.APIStatusError as exc:
                raise status_error(exc, self._where) from None
            except openai.OpenAIError as exc:
                raise LLMError(f"{self._where}: {exc}") from None

    # Plumbing --------------------------------------------------------------------------------

    def _get_client(self) -> openai.OpenAI:
        with self._lock:
            if self._client is None:
                import openai

                self._client = openai.OpenAI(
                    base_url=self.base_url, api_key=self.api_key or "not-needed",
                    timeout=self.timeout_s, max_retries=0,  # tenacity owns retrying
                )
            return self._client

    def _wait(self, state: RetryCallState) -> float:
        return backoff_s(state, self.backoff_initial_s, self.backoff_max_s)

    def _count_retry(self, state: RetryCallState) -> None:
        with self._lock:
            self.stats.retries += 1

    def _count(self, outcome: Literal["valid_first_try", "repaired", "valid_after_retry", "failed"]) -> None:
        with self._lock:
            setattr(self.stats, outcome, getattr(self.stats, outcome) + 1)
