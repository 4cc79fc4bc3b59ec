"""Reading the PTX that NVRTC emits: module variables, functions, registers, labels, instructions.

The parser keeps what the executor needs and nothing else: each instruction as (guard, opcode with
its modifiers, operands), the source line it came from, the registers each function declares, the
`.shared`/`.global`/`.local` variables with their alignment, size and initialiser, and each
function's `.param` list. Inline-asm blocks open a brace scope whose `.reg` names (`P` in
`{ .reg .pred P; ... }`) are renamed so that two blocks never share one register; `.param`
declarations of a call sequence are scoped the same way.

Operands come back as small tuples so that the decoder can turn each into a fast accessor once:
  ('reg', name)  ('imm', text)  ('sym', name)  ('addr', base, offset)  ('vec', [operands])
  ('sink',)      ('tensor', base-operand, [coordinate operands])  ('neg', operand) for !%p
PTX ISA chapters 4 (syntax), 5 (state spaces, types, variables) and 6 (instruction operands).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["PtxError", "Instr", "Variable", "Function", "Module", "parse"]

files_ref: dict = {}   # the .file table of the module being parsed (to tell headers from the kernel)


class PtxError(ValueError):
    """The emulator cannot read this PTX (the message names the line)."""


@dataclass
class Instr:
    op: str                 # 'add.s32', 'mbarrier.try_wait.parity.shared::cta.b64', ...
    args: list              # operand tuples
    guard: tuple | None     # (register, negated) for @%p / @!%p
    line: int               # 1-based line in the PTX text
    text: str               # the instruction as written (for messages)
    label: str | None = None  # for bra/call: the target name
    loc: tuple | None = None  # (file number, line) of the CUDA source (NVRTC --generate-line-info)


@dataclass
class Variable:
    name: str
    space: str              # 'shared', 'global', 'local', 'const'
    align: int
    size: int               # bytes (0 for extern .shared: the dynamic shared memory)
    init: bytes | None = None
    extern: bool = False
    # initializer entries that name a symbol (`= {func, generic(var)+8}`): (byte offset, width, symbol, addend),
    # resolved to addresses when the program places its variables (Program._layout)
    relocs: tuple = ()


@dataclass
class Param:
    name: str
    type: str
    size: int
    align: int


@dataclass
class Function:
    name: str
    entry: bool
    params: list = field(default_factory=list)     # [Param]
    rets: list = field(default_factory=list)       # [Param] (.func return values)
    regs: dict = field(default_factory=dict)       # name -> type
    body: list = field(default_factory=list)       # [Instr]
    labels: dict = field(default_factory=dict)     # label -> index in body
    variables: list = field(default_factory=list)  # function-scope .shared/.local variables
    call_params: list = field(default_factory=list)  # scoped .param declarations: [Param]
    maxntid: tuple | None = None
    reqntid: tuple | None = None
    cluster_dims: tuple | None = None


@dataclass
class Module:
    version: str = ""
    target: str = ""
    variables: list = field(default_factory=list)
    functions: dict = field(default_factory=dict)
    files: dict = field(default_factory=dict)      # .file number -> path

    @property
    def entries(self) -> list:
        return [f.name for f in self.functions.values() if f.entry]


_TYPE_BYTES = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2,
               "b32": 4, "u32": 4, "s32": 4, "f32": 4, "f16x2": 4, "bf16x2": 4,
               "b64": 8, "u64": 8, "s64": 8, "f64": 8, "b128": 16, "pred": 1}


def type_bytes(t: str) -> int:
    return _TYPE_BYTES[t.lstrip(".")]


_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def _strip(text: str) -> list:
    """(line number, statement) pairs: comments removed, statements split at ';', '{' and '}'
    kept as their own statements, labels as their own."""
    out = []
    # keep line numbers: replace comments by as many newlines as they span
    text = _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    buf, start = [], None
    depth_paren = 0
    for lineno, line in enumerate(text.split("\n"), 1):
        head = line.strip()
        if not buf and re.match(r"\.(loc|file|version|target|address_size)\s", head + " "):
            # these directives end at the end of their line, with no ';'
            out.append((lineno, head))
            continue
        i = 0
        while i < len(line):
            ch = line[i]
            if ch == "(":
                depth_paren += 1
            elif ch == ")":
                depth_paren -= 1
            if depth_paren == 0 and ch in "{};" and not (ch in "{}" and _inside_vector(buf)):
                stmt = "".join(buf).strip()
                if stmt:
                    out.append((start or lineno, stmt))
                buf, start = [], None
                if ch in "{}":
                    out.append((lineno, ch))
            else:
                if not buf and ch.isspace():
                    i += 1
                    continue
                if start is None:
                    start = lineno
                buf.append(ch)
                # a label ends at ':' when it is the whole statement so far
                if (ch == ":" and (i + 1 >= len(line) or line[i + 1] != ":") and (i == 0 or line[i - 1] != ":")
                        and re.fullmatch(r"\s*[$%\w.]+:", "".join(buf))):
                    out.append((start, "".join(buf).strip()))
                    buf, start = [], None
            i += 1
        if buf:
            buf.append(" ")
    stmt = "".join(buf).strip()
    if stmt:
        out.append((start, stmt))
    return out


def _inside_vector(buf) -> bool:
    """True while `buf` is an instruction whose operand list is open (a '{' of a vector operand
    follows an opcode): a statement that already has an opcode and a space."""
    s = "".join(buf).lstrip()
    if s.startswith(".") and s.rstrip().endswith("="):   # '.global .b8 $str[48] = {119, 37, ...}'
        return True
    if not s or s.startswith("."):
        return False
    # '{' right after an opcode and operands, e.g. 'st.shared.v4.b32 [%r1], {' or '[%rd7, {'
    return bool(re.match(r"(@!?%?\w+\s+)?[a-z][\w.:]*\s", s))


def _split_operands(s: str) -> list:
    out, depth, cur = [], 0, []
    for ch in s:
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


_ADDR = re.compile(r"^\[\s*([^\]+\-]+?)\s*(?:([+-])\s*(-?(?:0x[0-9a-fA-F]+|\d+)))?\s*\]$")


def _operand(s: str):
    s = s.strip()
    if s == "_":
        return ("sink",)
    if s.startswith("!"):
        return ("neg", _operand(s[1:]))
    if s.startswith("{") and s.endswith("}"):
        return ("vec", [_operand(x) for x in _split_operands(s[1:-1])])
    if "|" in s and not s.startswith("["):   # 'p|q' destinations of setp / elect.sync / shfl.sync
        return ("vec", [_operand(x) for x in s.split("|")])
    if s.startswith("["):
        inner = s[1:-1].strip()
        if "," in inner:  # tensor operand [tmap, {c0, c1}]
            parts = _split_operands(inner)
            return ("tensor", _operand(parts[0]), [_operand(x) for x in
                                                   _split_operands(parts[1].strip()[1:-1])])
        m = _ADDR.match(s)
        if not m:
            raise PtxError(f"cannot read the address operand {s!r}")
        base, sign, off = m.groups()
        off = 0 if off is None else int(off, 0) * (-1 if sign == "-" else 1)
        b = base.strip()
        if re.fullmatch(r"-?(0x[0-9a-fA-F]+|\d+)", b):
            return ("addr", ("imm", b), off)
        return ("addr", ("reg", b) if b.startswith("%") else ("sym", b), off)
    if s.startswith("%"):
        return ("reg", s)
    if re.fullmatch(r"-?(0[xX][0-9a-fA-F]+[uU]?|0[fFdD][0-9a-fA-F]+|\d+[uU]?|\d*\.\d+(e[-+]?\d+)?)", s):
        return ("imm", s)
    return ("sym", s)


_DECL = re.compile(r"^\.(reg|shared|global|local|const|param)\b(.*)$")


def _parse_decl(stmt: str):
    """'.reg .b32 %r<21>' / '.shared .align 8 .b8 name[16]' -> (space, type, align, names[(name, count|None)], init)."""
    init = None
    if "=" in stmt:
        stmt, init = stmt.split("=", 1)
        init = init.strip()
    toks = re.sub(r"^(\s*\.\w+)(\.)", r"\1 \2", stmt).split()   # '.reg.b32 f' (cuda_fp16.hpp's asm)
    space = toks[0][1:]
    align, typ, names = None, None, []
    i = 1
    extern = False
    while i < len(toks):
        t = toks[i]
        if t == ".align":
            align = int(toks[i + 1])
            i += 2
            continue
        if t.startswith(".v") and t[2:].isdigit():
            raise PtxError(f"vector variables are not modelled: {stmt}")
        if t.startswith(".") and t[1:] in _TYPE_BYTES:
            typ = t[1:]
        elif t.startswith("."):
            pass  # .ptr, .attribute(...) and other qualifiers
        else:
            names.append(" ".join(toks[i:]))
            break
        i += 1
    return space, typ, align, " ".join(names).strip(), init, extern


_SYM_INIT = re.compile(r"(generic\()?\s*([A-Za-z_$%][\w$]*)\s*\)?\s*(?:\+\s*(\d+))?")


def _init_bytes(init: str, typ: str, size: int) -> tuple[bytes, tuple]:
    """An initializer's bytes, and its entries that name a symbol (a function: a function pointer table;
    a variable, plain or `generic(var)`, with an optional `+ offset`) as relocations, left 0 here."""
    vals = [v.strip() for v in init.strip().strip("{}").split(",") if v.strip()]
    n = type_bytes(typ)
    out = bytearray(size)
    relocs = []
    for k, v in enumerate(vals):
        if re.fullmatch(r"0[fF][0-9a-fA-F]{8}", v):
            x = int(v[2:], 16)
        elif re.fullmatch(r"0[dD][0-9a-fA-F]{16}", v):
            x = int(v[2:], 16)
        elif re.fullmatch(r"[-+]?(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9]\d*|0[bB][01]+)[uU]?", v):
            x = int(v.rstrip("uU"), 0)
        else:
            m = _SYM_INIT.fullmatch(v)
            if not m:
                raise PtxError(f"cannot read the initializer entry {v!r} (a number, a symbol, generic(symbol), "
                               "each with an optional + offset)")
            relocs.append((k * n, n, m.group(2), int(m.group(3) or 0)))
            x = 0
        out[k * n:(k + 1) * n] = (x & ((1 << (8 * n)) - 1)).to_bytes(n, "little")
    return bytes(out), tuple(relocs)


def _variable(stmt: str, space: str) -> Variable:
    _, typ, align, rest, init, _ = _parse_decl(stmt)
    extern = stmt.lstrip().startswith(".extern") or ".extern" in stmt.split()[0:2]
    m = re.fullmatch(r"([$\w.]+)\s*(\[\s*(\d*)\s*\])?", rest)
    if not m:
        raise PtxError(f"cannot read the variable declaration {stmt!r}")
    name, brk, count = m.groups()
    n = type_bytes(typ)
    size = n * (int(count) if count else (0 if brk else 1))
    if brk and not count:
        extern = True
    data, relocs = _init_bytes(init, typ, size) if init else (None, ())
    return Variable(name, space, align or n, size, data, extern, relocs)


_REGS = re.compile(r"^(%?[$\w]+)\s*(?:<\s*(\d+)\s*>)?$")


def parse(text: str) -> Module:
    """Parse a PTX module (the text of `bwlab.compile.Compiled.ptx`)."""
    mod = Module()
    stmts = _strip(text)
    for _, st in stmts:
        mm = re.match(r'\.file\s+(\d+)\s+"([^"]*)"', st)
        if mm:
            mod.files[int(mm.group(1))] = mm.group(2)
    global files_ref
    files_ref = mod.files
    i = 0
    n = len(stmts)

    def params_of(sig: str) -> list:
        out = []
        for p in _split_operands(sig):
            p = p.strip()
            if not p:
                continue
            toks = p.split()
            align = None
            typ = None
            name = toks[-1]
            for k, t in enumerate(toks):
                # `.ptr .align N` (CUDA 12.8+ for sm_100a) is the alignment of what the pointer points at,
                # not of the parameter itself (PTX ISA 5.1.6.1 "Kernel parameter attribute: .ptr")
                if t == ".align" and ".ptr" not in toks[:k]:
                    align = int(toks[k + 1])
                elif t.startswith(".") and t[1:] in _TYPE_BYTES:
                    typ = t[1:]
            m = re.fullmatch(r"([$\w.]+)(\[(\d+)\])?", name)
            if not m:
                raise PtxError(f"cannot read the parameter {p!r}")
            size = type_bytes(typ) * (int(m.group(3)) if m.group(3) else 1)
            out.append(Param(m.group(1), typ, size, align or type_bytes(typ)))
        return out

    while i < n:
        lineno, s = stmts[i]
        if s.startswith(".version"):
            mod.version = s.split()[1]
        elif s.startswith(".target"):
            mod.target = s.split()[1]
        elif s.startswith(".file"):
            mm = re.match(r'\.file\s+(\d+)\s+"([^"]*)"', s)
            if mm:
                mod.files[int(mm.group(1))] = mm.group(2)
        elif s.startswith(".address_size") or s in ("{", "}"):
            pass
        elif re.match(r"^(\.(visible|weak|extern)\s+)*\.(entry|func)\b", s):
            header = s
            # the header may be split by ';' only at the end; the body follows as '{'
            is_entry = ".entry" in header.split("(")[0]
            hdr = header
            rets = []
            m = re.match(r"^(?:\.(?:visible|weak|extern)\s+)*\.(?:entry|func)\s*(\((?P<ret>[^)]*)\))?\s*"
                         r"(?P<name>[$\w]+)\s*(\((?P<params>.*?)\))?(?P<rest>.*)$", hdr, re.S)
            if not m:
                raise PtxError(f"line {lineno}: cannot read the function header {hdr[:80]!r}")
            fn = Function(m.group("name"), is_entry)
            if m.group("ret"):
                rets = params_of(m.group("ret"))
            fn.rets = rets
            fn.params = params_of(m.group("params") or "")
            rest = m.group("rest") or ""
            for key, attr in ((".maxntid", "maxntid"), (".reqntid", "reqntid"),
                              (".explicitcluster", None), (".reqnctapercluster", "cluster_dims")):
                mm = re.search(re.escape(key) + r"\s*([\d,\s]+)", rest)
                if mm and attr:
                    vals = tuple(int(x) for x in mm.group(1).split(",") if x.strip())
                    setattr(fn, attr, vals + (1,) * (3 - len(vals)))
            i += 1
            if i < n and stmts[i][1] == "{":
                i = _parse_body(stmts, i, fn)
                mod.functions[fn.name] = fn
            else:
                # a declaration only (prototype); the body comes later or is external
                i -= 1
            i += 1
            continue
        elif re.match(r"^(\.(visible|weak|extern)\s+)*\.(global|shared|const)\b", s):
            space = re.search(r"\.(global|shared|const)\b", s).group(1)
            body = re.sub(r"^(\.(visible|weak)\s+)+", "", s)
            mod.variables.append(_variable(body.replace(".extern ", ""), space))
            if ".extern" in s.split(".shared")[0]:
                mod.variables[-1].extern = True
        i += 1
    return mod


def _parse_body(stmts, i: int, fn: Function) -> int:
    """Parse a function body starting at its '{'; return the index of the matching '}'."""
    assert stmts[i][1] == "{"
    depth = 0
    scopes = [{}]          # name -> renamed, per brace scope
    counter = [0]
    loc = [None]
    own = [None]
    param_names = set()

    def rename(name: str) -> str:
        for sc in reversed(scopes):
            if name in sc:
                return sc[name]
        return name

    def map_operand(op):
        kind = op[0]
        if kind == "reg":
            base = op[1]
            # vector element access like %r1.x is not used by NVRTC's output; keep as is
            return ("reg", rename(base))
        if kind == "sym":
            new = rename(op[1])
            return ("reg", new) if new != op[1] and new not in param_names else ("sym", new)
        if kind == "addr":
            return ("addr", map_operand(op[1]), op[2])
        if kind == "vec":
            return ("vec", [map_operand(x) for x in op[1]])
        if kind == "tensor":
            return ("tensor", map_operand(op[1]), [map_operand(x) for x in op[2]])
        if kind == "neg":
            return ("neg", map_operand(op[1]))
        return op

    while True:
        lineno, s = stmts[i]
        if s == "{":
            depth += 1
            scopes.append({})
            i += 1
            continue
        if s == "}":
            depth -= 1
            scopes.pop()
            if depth == 0:
                return i
            i += 1
            continue
        m = _DECL.match(s)
        if m and not s.startswith(".param") or (m and depth > 1):
            space, typ, align, rest, init, _ = _parse_decl(s)
            if space == "reg":
                for part in _split_operands(rest):
                    mm = _REGS.match(part.strip())
                    if not mm:
                        raise PtxError(f"line {lineno}: cannot read the register declaration {s!r}")
                    base, count = mm.groups()
                    names = [f"{base}{k}" for k in range(int(count))] if count else [base]
                    for nm in names:
                        if depth > 1:
                            counter[0] += 1
                            new = f"{nm}#{counter[0]}"
                            scopes[-1][nm] = new
                            nm = new
                        fn.regs[nm] = typ
            elif space == "param":
                mm = re.fullmatch(r"([$\w]+)(\[(\d+)\])?", rest.strip())
                counter[0] += 1
                new = f"{mm.group(1)}#{counter[0]}"
                scopes[-1][mm.group(1)] = new
                param_names.add(new)
                size = type_bytes(typ) * (int(mm.group(3)) if mm.group(3) else 1)
                fn.call_params.append(Param(new, typ, size, align or type_bytes(typ)))
            else:
                v = _variable(s, space)
                fn.variables.append(v)
            i += 1
            continue
        if s.startswith(".loc"):
            mm = re.match(r"\.loc\s+(\d+)\s+(\d+)", s)
            if mm:
                loc[0] = (int(mm.group(1)), int(mm.group(2)))
                at = re.search(r"inlined_at\s+(\d+)\s+(\d+)", s)
                # the kernel's own line: the latest location (or inline site) outside a header
                for f_, l_ in [(int(mm.group(1)), int(mm.group(2)))] + (
                        [(int(at.group(1)), int(at.group(2)))] if at else []):
                    if not files_ref.get(f_, "").endswith((".cuh", ".h", ".hpp")):
                        own[0] = (f_, l_)
                if own[0] and own[0] != loc[0]:
                    loc[0] += own[0]
            i += 1
            continue
        if s.startswith("."):
            # .pragma and other directives the executor does not need
            i += 1
            continue
        if s.endswith(":"):
            fn.labels[s[:-1].strip()] = len(fn.body)
            i += 1
            continue
        if re.match(r"[$\w]+\s*:\s*\.callprototype", s):
            # the prototype an indirect call names: the callee's own declaration is what the call checks
            i += 1
            continue
        fn.body.append(_instruction(s, lineno, map_operand))
        fn.body[-1].loc = loc[0]
        i += 1


_INSTR = re.compile(r"^(?:@(?P<neg>!)?(?P<pred>%?[$\w#]+)\s+)?(?P<op>[a-z][\w.:]*)\s*(?P<rest>.*)$", re.S)


def _instruction(s: str, lineno: int, map_operand) -> Instr:
    m = _INSTR.match(s)
    if not m:
        raise PtxError(f"line {lineno}: cannot read the instruction {s!r}")
    op, rest = m.group("op"), m.group("rest").strip()
    guard = None
    if m.group("pred"):
        g = map_operand(("reg", m.group("pred")))
        guard = (g[1], bool(m.group("neg")))
    text = " ".join(s.split())
    if op.startswith("call"):
        # call.uni (ret), func, (a, b);  or  call.uni func, (a, b);
        parts = _split_operands(rest)
        rets, args = [], []
        if parts and parts[0].startswith("("):
            rets = [map_operand(("sym", x.strip())) for x in parts[0].strip("() ").split(",") if x.strip()]
            parts = parts[1:]
        target = parts[0].strip()
        if len(parts) > 1:
            args = [map_operand(("sym", x.strip())) for x in parts[1].strip("() ").split(",") if x.strip()]
        return Instr(op, [rets, args], guard, lineno, text, label=target)
    args = [map_operand(_operand(x)) for x in _split_operands(rest)] if rest else []
    label = None
    if op.startswith("bra"):
        label = args[0][1] if args else None
    return Instr(op, args, guard, lineno, text, label=label)
