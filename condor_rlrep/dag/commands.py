"""The non-defining DAG commands (DAGMan's second pass), one handler each,
and the loop that runs a scope's deferred commands in file order.

Each handler gets the parse state, the scope (DAG file) the command belongs
to, the normalized keyword, the logical line and its location, and applies
the command to the workflow being built. Syntax errors name the command and
show the expected form (:data:`~.syntax.SYNTAX`).

Pass 2 runs after pass 1 (:mod:`.firstpass`) has defined every node of the
scope, so a command may name a node defined further down the file. Runs of
deferred ``PARENT`` lines take the bulk path (:mod:`.bulk`), as in pass 1.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import DagError
from .bulk import CHUNK, MIN_RUN, VARS_LINE, bulk_edges, fast_edge
from .lexer import Lexer, LexError, Token, is_plain, normalize_keyword, split_tokens
from .mixed import MIXED_EDGES
from .model import Script, VarAssignment
from .syntax import syntax_error

if TYPE_CHECKING:
    from .parsestate import ParseState, Scope, Splice

__all__ = ["COMMANDS", "run_deferred", "run_command"]

log = logging.getLogger(__name__)

_INT = re.compile(r"[+-]?[0-9]+\Z")
_TOLERANCE = re.compile(r"[0-9]+%?\Z")
_SCRIPT_KINDS = frozenset({"PRE", "POST", "HOLD"})
_DEBUG_TYPES = frozenset({"STDOUT", "STDERR", "ALL"})

# DAGMan reads these numbers into C ints: anything outside is an error there too.
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1


def _shown(tok: str) -> str:
    """A token as error messages show it: a 5,000-digit number is cut short."""
    return tok if len(tok) <= 40 else f"{tok[:20]}…{tok[-8:]} ({len(tok)} characters)"


def _int(p: ParseState, kw: str, tok: str, what: str, path: str | None, lineno: int, lo: int | None = None, hi: int | None = None) -> int:
    if not _INT.match(tok):
        raise syntax_error(kw, f"invalid {what} '{_shown(tok)}' (not an integer)", path, lineno)
    # the length test first: int() refuses strings of more than 4,300 digits
    v = int(tok) if len(tok) <= 12 else None
    if v is None or not _INT_MIN <= v <= _INT_MAX:
        raise syntax_error(kw, f"invalid {what} '{_shown(tok)}' (out of range for a 32-bit integer)", path, lineno)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
        raise syntax_error(kw, f"invalid {what} '{tok}' (must be {rng})", path, lineno)
    return v


def _no_more(p: ParseState, kw: str, raws: list[str], i: int, path: str | None, lineno: int) -> None:
    if len(raws) > i:
        raise syntax_error(kw, f"unexpected token '{raws[i]}'", path, lineno)


# -- pass 2 commands -------------------------------------------------------

def _cmd_parent(p: ParseState, scope: Scope, kw: str, line: str, path: str | None, lineno: int) -> None:
    raws = line.split() if is_plain(line) else [t.raw for t in Lexer(line).all()]
    weak = kw == "WEAK"
    start = 1
    if weak:
        if len(raws) < 2 or raws[1].upper() != "PARENT":
            raise syntax_error("PARENT", "WEAK must be followed by PARENT", path, lineno)
        start = 2
    child_at = -1
    for k in range(start, len(raws)):
        if raws[k].upper() == "CHILD":
            child_at = k
            break
    if child_at == start or len(raws) == start:
        raise syntax_error("PARENT", "no parent node(s) given", path, lineno)
    if child_at < 0:
        raise syntax_error("PARENT", "missing CHILD", path, lineno)
    if child_at == len(raws) - 1:
        raise syntax_error("PARENT", "no child node(s) given", path, lineno)
    parents: list[str] = []
    for name in raws[start:child_at]:
        parents.extend(p.endpoints(scope, name, True, path, lineno))
    children: list[str] = []
    for name in raws[child_at + 1 :]:
        if name.upper() == "CHILD":
            continue
        children.extend(p.endpoints(scope, name, False, path, lineno))
    p.add_edges(scope, parents, children, weak, path, lineno)


def _cmd_script(p: ParseState, scope: Scope, kw: str, line: str, path: str | None, lineno: int) -> None:
    lex = Lexer(line)
    lex.next()
    defer: tuple[int, int] | None = None
    debug: tuple[str, str] | None = None
    while True:
        tok = lex.next()
        word = tok.raw.upper() if tok else ""
        if word in _SCRIPT_KINDS:
            stype = word
            break
        if word == "DEFER":
            s = lex.next()
            t = lex.next()
            if s is None or t is None:
                raise syntax_error(kw, "DEFER needs a status and a time", path, lineno)
            defer = (_int(p, kw, s.raw, "DEFER status", path, lineno), _int(p, kw, t.raw, "DEFER time", path, lineno))
        elif word == "DEBUG":
            f = lex.next()
            t = lex.next()
            if f is None or t is None:
                raise syntax_error(kw, "DEBUG needs a file and STDOUT, STDERR or ALL", path, lineno)
            dtype = t.raw.upper()
            if dtype not in _DEBUG_TYPES:
                raise syntax_error(kw, f"unknown DEBUG output stream type '{t.raw}'", path, lineno)
            debug = (f.raw, dtype)
        else:
            got = f"unexpected token '{tok.raw}'" if tok else "missing script type"
            raise syntax_error(kw, f"{got}: expected PRE, POST or HOLD (after optional DEFER/DEBUG)", path, lineno)
    tok = lex.next()
    if tok is None:
        raise syntax_error(kw, "no node name given", path, lineno)
    argv = lex.remain().split()
    if not argv:
        raise syntax_error(kw, f"no script given for node '{tok.raw}'", path, lineno)
    for node in p.targets(scope, kw, tok.raw, path, lineno):
        if stype in node.scripts:
            log.warning("%s:%s: SCRIPT %s of node %s replaces an earlier one", path, lineno, stype, node.name)
        node.scripts[stype] = Script(
            kind=stype, executable=argv[0], arguments=argv[1:],
            defer_status=defer[0] if defer else None, defer_seconds=defer[1] if defer else None,
            debug_file=debug[0] if debug else None, debug_type=debug[1] if debug else None,  # type: ignore[arg-type]
        )


def _cmd_pre_skip(p: ParseState, scope: Scope, kw: str, line: str, path: str | None, lineno: int) -> None:
    raws, _t = split_tokens(line)
    if len(raws) < 3:
        raise syntax_error(kw, "missing node name or exit code", path, lineno)
    _no_more(p, kw, raws, 3, path, lineno)
    code = _int(p, kw, raws[2], "exit code", path, lineno)
    for node in p.targets(scope, kw, raws[1], path, lineno):
        node.pre_skip = code


def _cmd_retry(p: ParseState, scope: Scope, kw: str, line: str, path: str | None, lineno: int) -> None:
    raws, _t = split_tokens(line)
    if len(raws) < 3:
        raise syntax_error(kw, "missing node name or retry count", path, lineno)
    n = _int(p, kw, raws[2], "retry count", path, lineno, lo=0)
    unless = None
    if len(raws) > 3:
        if normalize_keyword(raws[3]) != "UNLESS_EXIT":
            raise syntax_error(kw, f"unexpected token '{raws[3]}'", path, lineno)
        if len(raws) < 5:
            raise syntax_error(kw, "UNLESS-EXIT needs an exit code", path, lineno)
        unless = _int(p, kw, raws[4], "UNLESS-EXIT code", path, lineno)
        _no_more(p, kw, raws, 5, path, lineno)
    for node in p.targets(scope, kw, raws[1], path, lineno):
        node.retry = n
        node.retry_unless_exit = unless


def _cmd_abort(p: ParseState, scope: Scope, kw: str, line: str, path: str | None, lineno: int) -> None:
    raws, _t = split_tokens(line)
    if len(raws) < 3:
        raise syntax_error(kw, "missing node name or exit value", path, lineno)
    value = _int(p, kw, raws[2], "exit value", path, lineno)
    ret = None
    if len(raws) > 3:
        if raws[3].upper() != "RETURN":
            raise syntax_error(kw, f"unexpected token '{raws[3]}'", path, lineno)
        if len(raws) < 5:
            raise syntax_error(kw, "RETURN needs a value", path, lineno)
        ret = _int(p, kw, raws[4], "RETURN code", path, lineno, lo=0, hi=255)
        _no_more(p, kw, raws, 5, path, lineno)
    for node in p.targets(scope, kw, raws[1], path, lineno):
        node.abort_dag_on = (value, ret)


def _cmd_vars(p: ParseState, scope: Scope, kw: str, line: str, path: str | None, lineno: int) -> None:
    m = VARS_LINE.match(line)
    if m is not None:  # the common shape, without the character-level lexer
        for node in p.targets(scope, kw, m[1], path, lineno):
            node.vars.append(VarAssignment(m[2], m[3]))
        return
    toks = Lexer(line).all() if not is_plain(line) else [Token(t, t) for t in line.split()]
    if len(toks) < 2:
        raise syntax_error(kw, "no node name given", path, lineno)
    name = toks[1].raw
    k = 2
    placement = None
    if len(toks) > 2 and toks[2].raw.upper() in ("PREPEND", "APPEND"):
        placement = toks[2].raw.upper()
        k = 3
    pairs: list[VarAssignment] = []
    for tok in toks[k:]:
        eq = tok.raw.find("=")
        if eq < 0:
            raise syntax_error(kw, f"'{tok.raw}' is not a key=value pair", path, lineno)
        key = tok.raw[:eq]
        if not key:
            raise syntax_error(kw, f"'{tok.raw}': missing key", path, lineno)
        if '"' in key or "'" in key:
            raise syntax_error(kw, f"'{tok.raw}': a key may not contain quotes", path, lineno)
        # The key has no quotes, so '=' sits at the same place in the unquoted text.
        value = tok.text[eq + 1 :]
        if key == "+" or key.upper() == "MY.":
            raise syntax_error(kw, f"'{tok.raw}': the variable name needs at least one character after '{key}'", path, lineno)
        if key[0] == "+":
            key = "My." + key[1:]
        if key.lower().startswith("queue"):
            raise syntax_error(kw, f"illegal variable name '{key}': a name cannot begin with 'queue'", path, lineno)
        pairs.append(VarAssignment(key, value, placement))  # type: ignore[arg-type]
    if not pairs:
        raise syntax_error(kw, f"no key=value pairs given for node '{name}'", path, lineno)
    for node in p.targets(scope, kw, name, path, lineno):
        node.vars.extend(VarAssignment(v.key, v.value, v.placement) for v in pairs)


def _cmd_priority(p: ParseState, scope: Scope, kw: str, line: str, path: str | None, lineno: int) -> None:
    raws, _t = split_tokens(line)
    if len(raws) < 3:
        raise syntax_error(kw, "missing node name or priority value", path, lineno)
    _no_more(p, kw, raws, 3, path, lineno)
    prio = _int(p, kw, raws[2], "priority value", path, lineno)
    for node in p.targets(scope, kw, raws[1], path, lineno):
        node.priority = prio


def _scoped_category(scope: Scope, cat: str) -> str:
    return cat if cat.startswith("+") else scope.prefix + cat


def _cmd_category(p: ParseState, scope: Scope, kw: str, line: str, path: str | None, lineno: int) -> None:
    raws, _t = split_tokens(line)
    if len(raws) < 3:
        raise syntax_error(kw, "missing node name or category name", path, lineno)
    _no_more(p, kw, raws, 3, path, lineno)
    cat = _scoped_category(scope, raws[2])
    for node in p.targets(scope, kw, raws[1], path, lineno):
        node.category = cat


def _cmd_maxjobs(p: ParseState, scope: Scope, kw: str, line: str, path: str | None, lineno: int) -> None:
    raws, _t = split_tokens(line)
    if len(raws) < 3:
        raise syntax_error(kw, "missing category name or limit", path, lineno)
    _no_more(p, kw, raws, 3, path, lineno)
    p.wf.maxjobs[_scoped_category(scope, raws[1])] = _int(p, kw, raws[2], "throttle limit", path, lineno, lo=0)


def _cmd_tolerance(p: ParseState, scope: Scope, kw: str, line: str, path: str | None, lineno: int) -> None:
    raws, _t = split_tokens(line)
    if len(raws) < 3:
        raise syntax_error(kw, "missing node name or tolerance", path, lineno)
    if not _TOLERANCE.match(raws[2]):
        raise syntax_error(kw, f"invalid tolerance '{_shown(raws[2])}' (an integer, optionally followed by %)", path, lineno)
    _int(p, kw, raws[2].rstrip("%"), "tolerance", path, lineno, lo=0)
    if len(raws) > 3 and normalize_keyword(raws[3]) not in ("FAIL_FAST", "WAIT"):
        raise syntax_error(kw, f"unexpected token '{raws[3]}'", path, lineno)
    _no_more(p, kw, raws, 4, path, lineno)
    text = " ".join(raws[2:])
    for node in p.targets(scope, kw, raws[1], path, lineno):
        node.tolerance = text


def _cmd_done(p: ParseState, scope: Scope, kw: str, line: str, path: str | None, lineno: int) -> None:
    raws, _t = split_tokens(line)
    if len(raws) < 2:
        raise syntax_error(kw, "no node name given", path, lineno)
    _no_more(p, kw, raws, 2, path, lineno)
    for node in p.targets(scope, kw, raws[1], path, lineno, all_nodes=False):
        node.done = True


def _cmd_save_point(p: ParseState, scope: Scope, kw: str, line: str, path: str | None, lineno: int) -> None:
    raws, texts = split_tokens(line)
    if len(raws) < 2:
        raise syntax_error(kw, "no node name given", path, lineno)
    _no_more(p, kw, raws, 3, path, lineno)
    for node in p.targets(scope, kw, raws[1], path, lineno, all_nodes=False):
        node.save_point = True
        node.save_point_file = texts[2] if len(raws) > 2 else None


def _top_only(p: ParseState, scope: Scope, kw: str, path: str | None, lineno: int) -> bool:
    if scope.is_splice:
        log.info("%s:%s: %s inside a splice is ignored (as DAGMan does)", path, lineno, kw)
        return False
    return True


def _cmd_config(p: ParseState, scope: Scope, kw: str, line: str, path: str | None, lineno: int) -> None:
    raws, texts = split_tokens(line)
    if len(raws) < 2:
        raise syntax_error(kw, "no configuration file given", path, lineno)
    _no_more(p, kw, raws, 2, path, lineno)
    if not _top_only(p, scope, kw, path, lineno):
        return
    if p.wf.config is not None and p.wf.config != texts[1]:
        raise DagError(f"CONFIG '{texts[1]}': a different CONFIG file ('{p.wf.config}') is already given", path=path, line=lineno)
    p.wf.config = texts[1]


def _cmd_set_job_attr(p: ParseState, scope: Scope, kw: str, line: str, path: str | None, lineno: int) -> None:
    rest = line.split(None, 1)[1] if len(line.split(None, 1)) > 1 else ""
    key, eq, value = rest.partition("=")
    if not eq or not key.strip():
        raise syntax_error(kw, f"'{rest}' is not an attribute assignment", path, lineno)
    if _top_only(p, scope, kw, path, lineno):
        p.wf.set_job_attrs.append((key.strip(), value.strip()))


def _cmd_env(p: ParseState, scope: Scope, kw: str, line: str, path: str | None, lineno: int) -> None:
    lex = Lexer(line)
    lex.next()
    action = lex.next()
    if action is None or action.raw.upper() not in ("GET", "SET"):
        got = f"unexpected token '{action.raw}'" if action else "missing action"
        raise syntax_error(kw, f"{got}: expected GET or SET", path, lineno)
    rest = lex.remain()
    if not rest:
        raise syntax_error(kw, "no environment variables given", path, lineno)
    if _top_only(p, scope, kw, path, lineno):
        p.wf.env.append((action.raw.upper(), rest))


def _cmd_dot(p: ParseState, scope: Scope, kw: str, line: str, path: str | None, lineno: int) -> None:
    raws, _t = split_tokens(line)
    if len(raws) < 2:
        raise syntax_error(kw, "no file given", path, lineno)
    i = 2
    while i < len(raws):
        opt = normalize_keyword(raws[i])
        if opt == "INCLUDE":
            i += 1
            if i >= len(raws):
                raise syntax_error(kw, "INCLUDE needs a header file", path, lineno)
        elif opt not in ("UPDATE", "DONT_UPDATE", "OVERWRITE", "DONT_OVERWRITE"):
            raise syntax_error(kw, f"unexpected token '{raws[i]}'", path, lineno)
        i += 1
    if _top_only(p, scope, kw, path, lineno):
        p.wf.dot = line.split(None, 1)[1].strip()


def _cmd_node_status(p: ParseState, scope: Scope, kw: str, line: str, path: str | None, lineno: int) -> None:
    raws, texts = split_tokens(line)
    if len(raws) < 2:
        raise syntax_error(kw, "no file given", path, lineno)
    min_secs = None
    always = False
    for tok in raws[2:]:
        if normalize_keyword(tok) == "ALWAYS_UPDATE":
            always = True
        elif _INT.match(tok):
            min_secs = _int(p, kw, tok, "minimum update interval", path, lineno, lo=0)
        else:
            raise syntax_error(kw, f"unexpected token '{tok}'", path, lineno)
    if _top_only(p, scope, kw, path, lineno) and p.first_only(p.wf.node_status_file, kw, texts[1], path, lineno):
        p.wf.node_status_file = texts[1]
        p.wf.node_status_min_seconds = min_secs
        p.wf.node_status_always_update = always


def _cmd_jobstate_log(p: ParseState, scope: Scope, kw: str, line: str, path: str | None, lineno: int) -> None:
    raws, texts = split_tokens(line)
    if len(raws) < 2:
        raise syntax_error(kw, "no file given", path, lineno)
    _no_more(p, kw, raws, 2, path, lineno)
    if _top_only(p, scope, kw, path, lineno) and p.first_only(p.wf.jobstate_log, kw, texts[1], path, lineno):
        p.wf.jobstate_log = texts[1]


def _cmd_reject(p: ParseState, scope: Scope, kw: str, line: str, path: str | None, lineno: int) -> None:
    raws, _t = split_tokens(line)
    _no_more(p, kw, raws, 1, path, lineno)
    raise DagError("REJECT: DAGMan refuses to run a DAG that holds a REJECT line, also in an INCLUDEd or spliced "
                   "file (remove it to run the DAG)", path=path, line=lineno)


def _cmd_pin(p: ParseState, scope: Scope, kw: str, line: str, path: str | None, lineno: int) -> None:
    raws, _t = split_tokens(line)
    if len(raws) < 3:
        raise syntax_error(kw, "missing node name or pin number", path, lineno)
    _no_more(p, kw, raws, 3, path, lineno)
    pin = _int(p, kw, raws[2], "pin number", path, lineno, lo=1)
    nodes = p.targets(scope, kw, raws[1], path, lineno, all_nodes=False)
    pins = scope.pins_in if kw == "PIN_IN" else scope.pins_out
    pins.setdefault(pin, []).extend(n.name for n in nodes)


def _check_pins(pins: dict[int, list[str]], what: str, splice: str, path: str | None, lineno: int) -> int:
    n = len(pins)
    if sorted(pins) != list(range(1, n + 1)):
        raise DagError(f"CONNECT: {what} pins of splice '{splice}' are not numbered 1..{n}: {sorted(pins)}", path=path, line=lineno)
    return n


def _cmd_connect(p: ParseState, scope: Scope, kw: str, line: str, path: str | None, lineno: int) -> None:
    raws, _t = split_tokens(line)
    if len(raws) < 3:
        raise syntax_error(kw, "missing splice(s) to connect", path, lineno)
    _no_more(p, kw, raws, 3, path, lineno)
    sp: list[Splice] = []
    for name in raws[1:3]:
        s = scope.splices.get(name)
        if s is None:
            what = "a node, not a splice" if name in scope.own else "not a known splice"
            raise DagError(f"CONNECT: '{name}' is {what}", path=path, line=lineno)
        sp.append(s)
    out, inp = sp
    n_out = _check_pins(out.pins_out, "PIN_OUT", out.name, path, lineno)
    n_in = _check_pins(inp.pins_in, "PIN_IN", inp.name, path, lineno)
    if n_out != n_in:
        raise DagError(
            f"CONNECT {out.name} {inp.name}: {n_out} PIN_OUT(s) of '{out.name}' do not match {n_in} PIN_IN(s) of '{inp.name}'",
            path=path, line=lineno,
        )
    pinned = {m for ms in inp.pins_in.values() for m in ms}
    loose = [m for m in inp.initial if m not in pinned]
    if loose:
        raise DagError(f"CONNECT: initial node '{loose[0]}' of splice '{inp.name}' is not connected to a PIN_IN", path=path, line=lineno)
    for k in range(1, n_out + 1):
        p.add_edges(scope, out.pins_out[k], inp.pins_in[k], False, path, lineno)


COMMANDS: dict[str, Callable[..., None]] = {
    "PARENT": _cmd_parent,
    "WEAK": _cmd_parent,
    "SCRIPT": _cmd_script,
    "PRE_SKIP": _cmd_pre_skip,
    "RETRY": _cmd_retry,
    "ABORT_DAG_ON": _cmd_abort,
    "VARS": _cmd_vars,
    "PRIORITY": _cmd_priority,
    "CATEGORY": _cmd_category,
    "MAXJOBS": _cmd_maxjobs,
    "TOLERANCE": _cmd_tolerance,
    "DONE": _cmd_done,
    "SAVE_POINT_FILE": _cmd_save_point,
    "CONFIG": _cmd_config,
    "SET_JOB_ATTR": _cmd_set_job_attr,
    "ENV": _cmd_env,
    "DOT": _cmd_dot,
    "NODE_STATUS_FILE": _cmd_node_status,
    "JOBSTATE_LOG": _cmd_jobstate_log,
    "REJECT": _cmd_reject,
    "PIN_IN": _cmd_pin,
    "PIN_OUT": _cmd_pin,
    "CONNECT": _cmd_connect,
}


def run_deferred(p: ParseState, scope: Scope) -> None:
    """Pass 2: every deferred command of ``scope``, in file order. Runs of
    deferred ``PARENT`` lines (a file whose edges come before their nodes:
    every edge is deferred) take the bulk path, as in pass 1."""
    deferred = scope.deferred
    bulk = not scope.is_splice
    k, total = 0, len(deferred)
    while k < total:
        kw, line, path, lineno = deferred[k]
        if kw == MIXED_EDGES:  # the edges of a shuffled run (.mixed)
            line.take_rest(p, scope, run_command)
        elif kw == "PARENT" and bulk:
            end = k + 1
            while end < total and deferred[end][0] == "PARENT":
                end += 1
            # a chunk at a time, as in pass 1: a whole file's edges at once are slower (memory)
            while end - k >= MIN_RUN and bulk_edges(p, scope, [item[1] for item in deferred[k : min(end, k + CHUNK)]]):
                k = min(end, k + CHUNK)
            if k == end:
                continue
            for kw, line, path, lineno in deferred[k:end]:
                if not fast_edge(p, scope, line):
                    run_command(p, scope, kw, line, path, lineno)
            k = end
            continue
        elif not (kw == "PARENT" and fast_edge(p, scope, line)):
            run_command(p, scope, kw, line, path, lineno)
        k += 1
    scope.deferred = []


def run_command(p: ParseState, scope: Scope, kw: str, line: str, path: str | None, lineno: int) -> None:
    """Apply one non-defining command (a lexer error becomes the command's syntax error)."""
    try:
        COMMANDS[kw](p, scope, kw, line, path, lineno)
    except LexError as err:
        raise p.syntax(kw, str(err), path, lineno) from None
