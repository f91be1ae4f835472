"""Recoveries that teach: for a step that errored, what the agent did next to get past it.

:func:`recovery_after` reads a trajectory on from a failed step and returns a :class:`Recovery`.

**The fix.** ``think`` and ``calculate`` are always preparation. When the failed step changed
something, look-ups are preparation too, and the fix is the first later step that is none of
these: the same action again (the next call of it), or else the first state-changing step. When
a look-up failed, the next look-up is its fix (another way to find the same thing). Its kind:

- **retry** — the same action with changed arguments; **repeat** — the same arguments again;
- **switch** — another action; **none** — nothing followed but look-ups, or the run ended.

Only the next attempt is the fix. When it errored too, ``recovered`` is False and the text says
whether it failed the same way or got past this error into another one; that later failure has
its own recovery when it is read.

**Changes** (a retry): a recursive diff of the two calls' arguments — dicts by key (added and
removed keys too), lists by index, strings holding JSON decoded first — as
``payment_methods[1].amount: 5 → 55``. What teaches is shown: amounts, counts, dates, times,
cabin classes, words. What identifies is not (argument names matched by
:data:`~kbgraph.core.generalise.IDENTIFYING`, dates of birth, and values that
:func:`~kbgraph.core.generalise.generalise_text` turns into a placeholder: codes, ids, e-mails,
the run's person names): a changed one reads "another payment_id", or shows its **type prefix**
when the type changed (``certificate_… → credit_card_…``). A prefix — the lower-case words
before an id's final digits — is shown only when it names a type, not a person:

- two or more distinct ids of the run share it (``certificate_4856383``, ``certificate_7504069``),
  or a tool wrote it as a value of its own (``"source": "gift_card"``); and
- none of its words is a word of a person name of the run (``mia_li_3668``: "Mia"); and
- no id with that prefix was passed under a user/customer/account/name argument (``user_id``).

**Preparation**: the look-ups and calculations between the failure and the fix, briefly
(``get user details``, ``calculate 305 - 250 = 55``: a calculation's expression and result are
meaning). **Thought**: the agent's words from the failure to the fix (``think`` steps' thought,
the ``thought`` of each step up to and including the fix), generalised (ids, codes, e-mails and
names become placeholders; amounts, dates, times, counts and cabins stay), without sentences said
to the user ("I apologize for the confusion."), cut at a sentence end within 300 characters; a
blank thought is absent.

A recovery is **concrete** when its fix went through and it names something to act on: a retry's
changes, a switch's arguments, or the agent's thought (a bare repeat is not).

:func:`signed_error` names "the same error on the same action" (its parts, and the key
:func:`error_signature` that identical failure modes of many runs share), so they are one group. Pure functions, no state; odd arguments and results never raise.

The package: :mod:`._values` shows one value (masked or not), :mod:`._changes` diffs two calls,
:mod:`._thoughts` reads what lies between a failure and its fix, :mod:`._recovery` puts them
together.
"""

from __future__ import annotations

from kbgraph.core.recovery._changes import MAX_CHANGES_SHOWN, MAX_DEPTH, ArgumentChange, argument_changes
from kbgraph.core.recovery._recovery import ErrorSignature, Recovery, error_signature, recovery_after, signed_error
from kbgraph.core.recovery._thoughts import MAX_PREPARATION, THOUGHT_CHARS, trim_thought, trimmed_thought
from kbgraph.core.recovery._values import VALUE_CHARS, type_prefixes
from kbgraph.core.models import RecoveryKind

__all__ = [
    "MAX_CHANGES_SHOWN",
    "MAX_DEPTH",
    "MAX_PREPARATION",
    "THOUGHT_CHARS",
    "VALUE_CHARS",
    "ArgumentChange",
    "ErrorSignature",
    "Recovery",
    "RecoveryKind",
    "argument_changes",
    "error_signature",
    "recovery_after",
    "signed_error",
    "trim_thought",
    "trimmed_thought",
    "type_prefixes",
]
