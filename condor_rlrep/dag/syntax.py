"""The vocabulary of the DAG language: keywords and their spellings, the
node-defining keywords, reserved node names, each command's documented form,
and the syntax error that quotes it.

Everything here is data or a pure function of it, shared by both passes of
the parser (:mod:`.firstpass`, :mod:`.commands`) and by its error messages,
so that a keyword is spelled, classified and explained in one place.
"""

from __future__ import annotations

from ..errors import DagSyntaxError

__all__ = ["RESERVED_NAMES", "KEYWORDS", "NODE_KINDS", "SYNTAX", "display_keyword", "syntax_error"]

RESERVED_NAMES = frozenset({"PARENT", "CHILD", "ALL_NODES"})

_ALL_KEYWORDS = (
    "JOB", "FINAL", "SERVICE", "PROVISIONER", "SUBDAG", "SPLICE", "SUBMIT_DESCRIPTION", "INCLUDE",
    "PARENT", "WEAK", "SCRIPT", "PRE_SKIP", "RETRY", "ABORT_DAG_ON", "VARS", "PRIORITY", "CATEGORY",
    "MAXJOBS", "TOLERANCE", "DONE", "SAVE_POINT_FILE", "CONFIG", "SET_JOB_ATTR", "ENV", "DOT",
    "NODE_STATUS_FILE", "JOBSTATE_LOG", "REJECT", "PIN_IN", "PIN_OUT", "CONNECT",
)
# Spellings seen in practice -> keyword, so most lines skip normalize_keyword().
KEYWORDS = {
    spelling: kw
    for kw in _ALL_KEYWORDS
    for spelling in (kw, kw.lower(), kw.replace("_", "-"), kw.lower().replace("_", "-"))
}

# The node-defining keywords -> node kind (SUBMIT-DESCRIPTION, SPLICE and INCLUDE define no node).
NODE_KINDS = {"JOB": "JOB", "FINAL": "FINAL", "SERVICE": "SERVICE", "PROVISIONER": "PROVISIONER", "SUBDAG": "SUBDAG"}

# Each command's documented form, quoted by its syntax errors.
SYNTAX = {
    "JOB": "JOB name submit [DIR dir] [NOOP] [DONE]",
    "FINAL": "FINAL name submit [DIR dir] [NOOP]",
    "SERVICE": "SERVICE name submit [DIR dir] [NOOP]",
    "PROVISIONER": "PROVISIONER name submit [DIR dir] [NOOP]",
    "SUBDAG": "SUBDAG EXTERNAL name file.dag [DIR dir] [NOOP] [DONE]",
    "SPLICE": "SPLICE name file.dag [DIR dir]",
    "SUBMIT_DESCRIPTION": "SUBMIT-DESCRIPTION name { ... }",
    "PARENT": "[WEAK] PARENT p1 [p2 ...] CHILD c1 [c2 ...]",
    "SCRIPT": "SCRIPT [DEFER status secs] [DEBUG file STDOUT|STDERR|ALL] PRE|POST|HOLD node executable [args ...]",
    "PRE_SKIP": "PRE_SKIP node exit-code",
    "RETRY": "RETRY node n [UNLESS-EXIT code]",
    "ABORT_DAG_ON": "ABORT-DAG-ON node value [RETURN code]",
    "VARS": 'VARS node [PREPEND|APPEND] key="value" [key2="value2" ...]',
    "PRIORITY": "PRIORITY node value",
    "CATEGORY": "CATEGORY node category",
    "MAXJOBS": "MAXJOBS category n",
    "TOLERANCE": "TOLERANCE node n[%] [FAIL-FAST|WAIT]",
    "CONFIG": "CONFIG file",
    "SET_JOB_ATTR": "SET_JOB_ATTR attr = value",
    "ENV": "ENV GET VAR ... | ENV SET KEY=VALUE;...",
    "DOT": "DOT file [UPDATE|DONT-UPDATE] [OVERWRITE|DONT-OVERWRITE] [INCLUDE header]",
    "NODE_STATUS_FILE": "NODE_STATUS_FILE file [min-seconds] [ALWAYS-UPDATE]",
    "JOBSTATE_LOG": "JOBSTATE_LOG file",
    "SAVE_POINT_FILE": "SAVE_POINT_FILE node [file]",
    "REJECT": "REJECT",
    "DONE": "DONE node",
    "INCLUDE": "INCLUDE file",
    "CONNECT": "CONNECT out-splice in-splice",
    "PIN_IN": "PIN_IN node n",
    "PIN_OUT": "PIN_OUT node n",
}


def display_keyword(kw: str) -> str:
    """A normalized keyword in its documented spelling."""
    return {"ABORT_DAG_ON": "ABORT-DAG-ON", "SUBMIT_DESCRIPTION": "SUBMIT-DESCRIPTION"}.get(kw, kw)


def syntax_error(kw: str, what: str, path: str | None, line: int) -> DagSyntaxError:
    """A syntax error for command ``kw`` saying what is wrong and what is expected."""
    msg = f"{display_keyword(kw)}: {what}"
    if kw in SYNTAX:
        msg += f" (expected: {SYNTAX[kw]})"
    return DagSyntaxError(msg, path=path, line=line)
