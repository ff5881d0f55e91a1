/**
 * The slice of Python that AgentBench's DBBench leans on: `repr()` of fetched rows (what the agent
 * sees), `eval()` of the agent's answer (a literal parser, never code execution), `float()` and
 * `==` / `set()` equality.
 */

/** a value as mysql-connector hands it to Python */
export type PyValue =
  | null
  | boolean
  | bigint // int
  | number // float
  | string
  | { readonly kind: 'decimal'; readonly text: string }
  | { readonly kind: 'date'; readonly repr: string }
  | { readonly kind: 'bytes'; readonly data: Uint8Array };

/** a value produced by evaluating a Python literal */
export type PyLit =
  | { t: 'none' }
  | { t: 'bool'; v: boolean }
  | { t: 'int'; v: bigint }
  | { t: 'float'; v: number }
  | { t: 'str'; v: string }
  | { t: 'list' | 'tuple' | 'set'; items: PyLit[] }
  | { t: 'dict'; keys: PyLit[] };

// ---------------------------------------------------------------- repr

/** Python's repr(float): shortest round-trip digits, exponent form outside 1e-4 ≤ |x| < 1e16 */
export function pyFloatRepr(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const [mant = '0', expS = '0'] = x.toExponential().split('e');
  const exp = Number(expS);
  const neg = mant.startsWith('-');
  const digits = mant.replace('-', '').replace('.', '');
  let out: string;
  if (exp < -4 || exp >= 16) {
    const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const e = Math.abs(exp);
    out = `${m}e${exp < 0 ? '-' : '+'}${e < 10 ? '0' : ''}${e}`;
  } else if (exp < 0) {
    out = `0.${'0'.repeat(-exp - 1)}${digits}`;
  } else if (digits.length <= exp + 1) {
    out = `${digits}${'0'.repeat(exp + 1 - digits.length)}.0`;
  } else {
    out = `${digits.slice(0, exp + 1)}.${digits.slice(exp + 1)}`;
  }
  return neg ? `-${out}` : out;
}

// characters Python's str.isprintable() rejects: controls, separators other than ' ', unassigned
const NON_PRINTABLE = /[\p{C}\p{Z}]/u;

/** Python's repr(str) */
export function pyStrRepr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of s) {
    if (ch === quote || ch === '\\') out += `\\${ch}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch !== ' ' && NON_PRINTABLE.test(ch)) {
      const cp = ch.codePointAt(0) ?? 0;
      if (cp < 0x100) out += `\\x${cp.toString(16).padStart(2, '0')}`;
      else if (cp < 0x10000) out += `\\u${cp.toString(16).padStart(4, '0')}`;
      else out += `\\U${cp.toString(16).padStart(8, '0')}`;
    } else out += ch;
  }
  return out + quote;
}

function bytesRepr(data: Uint8Array): string {
  let out = "bytearray(b'";
  for (const b of data) {
    if (b === 0x27 || b === 0x5c) out += `\\${String.fromCharCode(b)}`;
    else if (b === 0x0a) out += '\\n';
    else if (b === 0x0d) out += '\\r';
    else if (b === 0x09) out += '\\t';
    else if (b < 0x20 || b >= 0x7f) out += `\\x${b.toString(16).padStart(2, '0')}`;
    else out += String.fromCharCode(b);
  }
  return `${out}')`;
}

export function pyRepr(v: PyValue): string {
  if (v === null) return 'None';
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') return pyFloatRepr(v);
  if (typeof v === 'string') return pyStrRepr(v);
  if (v.kind === 'decimal') return `Decimal('${v.text}')`;
  if (v.kind === 'date') return v.repr;
  return bytesRepr(v.data);
}

export function pyTupleRepr(row: readonly PyValue[]): string {
  if (row.length === 1) return `(${pyRepr(row[0] ?? null)},)`;
  return `(${row.map(pyRepr).join(', ')})`;
}

/**
 * repr(list of tuples), built only as far as `limit` characters need (the env truncates at 800
 * anyway, so a 5,000-row result costs what 30 rows cost).
 */
export function pyRowsRepr(rows: readonly (readonly PyValue[])[], limit = Infinity): string {
  let out = '[';
  for (let i = 0; i < rows.length; i++) {
    if (i > 0) out += ', ';
    out += pyTupleRepr(rows[i] ?? []);
    if (out.length > limit) return out;
  }
  return `${out}]`;
}

// ---------------------------------------------------------------- float()

const PY_FLOAT = /^[+-]?(?:(?:\d(?:_?\d)*)?\.?\d(?:_?\d)*(?:[eE][+-]?\d(?:_?\d)*)?|\d(?:_?\d)*\.|inf|infinity|nan)$/i;

/** Python's float(x) for str / int / float / bool; null where Python raises */
export function pyFloat(x: unknown): number | null {
  if (typeof x === 'number') return x;
  if (typeof x === 'bigint') return Number(x);
  if (typeof x === 'boolean') return x ? 1 : 0;
  if (typeof x !== 'string') return null;
  const s = x.trim();
  if (!PY_FLOAT.test(s)) return null;
  const low = s.toLowerCase().replace(/^[+]/, '');
  if (low === 'nan' || low === '-nan') return NaN;
  if (/^-?inf(inity)?$/.test(low)) return low.startsWith('-') ? -Infinity : Infinity;
  return Number(s.replace(/_/g, ''));
}

// ---------------------------------------------------------------- eval() of literals

class LitParser {
  private i = 0;
  constructor(private readonly s: string) {}

  parseAll(): PyLit {
    this.ws();
    const v = this.expr();
    this.ws();
    if (this.i !== this.s.length) throw new SyntaxError(`trailing input at ${this.i}`);
    return v;
  }

  private ws(): void {
    while (this.i < this.s.length && /[ \t\n\r\f\v]/.test(this.s[this.i] ?? '')) this.i++;
  }

  private peek(): string {
    return this.s[this.i] ?? '';
  }

  // a bare comma-separated sequence at top level is a tuple: eval('1, 2') == (1, 2)
  private expr(): PyLit {
    const first = this.atom();
    this.ws();
    if (this.peek() !== ',') return first;
    const items = [first];
    while (this.peek() === ',') {
      this.i++;
      this.ws();
      if (this.i >= this.s.length) break;
      items.push(this.atom());
      this.ws();
    }
    return { t: 'tuple', items };
  }

  private seq(close: string): PyLit[] {
    const items: PyLit[] = [];
    this.ws();
    while (this.peek() !== close) {
      if (this.i >= this.s.length) throw new SyntaxError('unclosed bracket');
      items.push(this.atom());
      this.ws();
      if (this.peek() === ',') {
        this.i++;
        this.ws();
      } else if (this.peek() !== close) throw new SyntaxError(`expected , or ${close}`);
    }
    this.i++;
    return items;
  }

  private atom(): PyLit {
    this.ws();
    const c = this.peek();
    if (c === '[') {
      this.i++;
      return { t: 'list', items: this.seq(']') };
    }
    if (c === '(') {
      this.i++;
      // parenthesised expression vs tuple
      const start = this.i;
      const items = this.seq(')');
      const inner = this.s.slice(start, this.i - 1).trim();
      if (items.length === 1 && !inner.endsWith(',')) return items[0] as PyLit;
      return { t: 'tuple', items };
    }
    if (c === '{') {
      this.i++;
      const keys: PyLit[] = [];
      let isDict = false;
      this.ws();
      while (this.peek() !== '}') {
        if (this.i >= this.s.length) throw new SyntaxError('unclosed brace');
        keys.push(this.atom());
        this.ws();
        if (this.peek() === ':') {
          isDict = true;
          this.i++;
          this.atom();
          this.ws();
        }
        if (this.peek() === ',') {
          this.i++;
          this.ws();
        } else if (this.peek() !== '}') throw new SyntaxError('expected , or }');
      }
      this.i++;
      return isDict || keys.length === 0 ? { t: 'dict', keys } : { t: 'set', items: keys };
    }
    if (c === '-' || c === '+') {
      this.i++;
      const v = this.atom();
      if (v.t === 'int') return { t: 'int', v: c === '-' ? -v.v : v.v };
      if (v.t === 'float') return { t: 'float', v: c === '-' ? -v.v : v.v };
      if (v.t === 'bool') return { t: 'int', v: BigInt(v.v ? (c === '-' ? -1 : 1) : 0) };
      throw new SyntaxError('bad operand for unary sign');
    }
    const str = this.string();
    if (str !== null) {
      // implicit concatenation: 'a' 'b' == 'ab'
      let v = str;
      for (;;) {
        const save = this.i;
        this.ws();
        const next = this.string();
        if (next === null) {
          this.i = save;
          break;
        }
        v += next;
      }
      return { t: 'str', v };
    }
    const num = /^(?:\d(?:_?\d)*)?(?:\.\d(?:_?\d)*|\d\.?)?(?:[eE][+-]?\d+)?/.exec(this.s.slice(this.i))?.[0] ?? '';
    if (num !== '' && /\d/.test(num)) {
      this.i += num.length;
      const clean = num.replace(/_/g, '');
      if (/^\d+$/.test(clean)) {
        if (clean.length > 1 && clean.startsWith('0') && /[1-9]/.test(clean)) throw new SyntaxError('leading zeros');
        return { t: 'int', v: BigInt(clean) };
      }
      return { t: 'float', v: Number(clean) };
    }
    const word = /^[A-Za-z_]\w*/.exec(this.s.slice(this.i))?.[0];
    if (word === 'None') return this.adv(word, { t: 'none' });
    if (word === 'True') return this.adv(word, { t: 'bool', v: true });
    if (word === 'False') return this.adv(word, { t: 'bool', v: false });
    throw new SyntaxError(`unexpected ${JSON.stringify(c)} at ${this.i}`);
  }

  private adv(word: string, v: PyLit): PyLit {
    this.i += word.length;
    return v;
  }

  private string(): string | null {
    const m = /^([rRbBuU]{0,2})('''|"""|'|")/.exec(this.s.slice(this.i));
    if (!m) return null;
    const prefix = (m[1] ?? '').toLowerCase();
    if (prefix.includes('b')) throw new SyntaxError('bytes literals are not answers');
    const raw = prefix.includes('r');
    const q = m[2] ?? "'";
    this.i += m[0].length;
    let out = '';
    for (;;) {
      if (this.i >= this.s.length) throw new SyntaxError('unterminated string');
      if (this.s.startsWith(q, this.i)) {
        this.i += q.length;
        return out;
      }
      const ch = this.s[this.i] ?? '';
      if (ch === '\n' && q.length === 1) throw new SyntaxError('newline in string');
      if (ch === '\\') {
        const n = this.s[this.i + 1] ?? '';
        if (raw) {
          out += ch + n;
          this.i += 2;
          continue;
        }
        this.i += 2;
        const simple: Record<string, string> = {
          '\n': '', '\\': '\\', "'": "'", '"': '"', a: '\x07', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v',
        };
        if (n in simple) out += simple[n];
        else if (n === 'x' || n === 'u' || n === 'U') {
          const len = n === 'x' ? 2 : n === 'u' ? 4 : 8;
          const hex = this.s.slice(this.i, this.i + len);
          if (!new RegExp(`^[0-9a-fA-F]{${len}}$`).test(hex)) throw new SyntaxError('bad escape');
          out += String.fromCodePoint(parseInt(hex, 16));
          this.i += len;
        } else if (/[0-7]/.test(n)) {
          const oct = /^[0-7]{0,2}/.exec(this.s.slice(this.i))?.[0] ?? '';
          out += String.fromCodePoint(parseInt(n + oct, 8));
          this.i += oct.length;
        } else out += `\\${n}`;
        continue;
      }
      out += ch;
      this.i++;
    }
  }
}

/** eval() restricted to literals; throws SyntaxError where Python's eval would fail on a literal */
export function pyLiteralEval(src: string): PyLit {
  return new LitParser(src).parseAll();
}

/** Python's list(x) for an evaluated literal; null where it raises TypeError */
export function pyListOf(v: PyLit): PyLit[] | null {
  switch (v.t) {
    case 'list':
    case 'tuple':
    case 'set':
      return v.items;
    case 'dict':
      return v.keys;
    case 'str':
      return [...v.v].map((c) => ({ t: 'str', v: c }) as PyLit);
    default:
      return null;
  }
}

let nanCounter = 0;

/** a key equal for values Python's == calls equal (1 == 1.0 == True); null if unhashable */
export function pyHashKey(v: PyLit): string | null {
  switch (v.t) {
    case 'none':
      return 'N';
    case 'bool':
      return `n${v.v ? 1 : 0}`;
    case 'int':
      return `n${Number(v.v)}`;
    case 'float':
      // every nan is a distinct object in Python, so it never equals another
      return Number.isNaN(v.v) ? `nan${nanCounter++}` : `n${v.v}`;
    case 'str':
      return `s${v.v}`;
    case 'tuple': {
      const ks = v.items.map(pyHashKey);
      if (ks.some((k) => k === null)) return null;
      return `t(${ks.join('\u0001')})`;
    }
    default:
      return null;
  }
}

/** str(x) of an evaluated literal (used by main-fc's answer cleaning) */
export function pyStr(v: PyLit): string {
  switch (v.t) {
    case 'str':
      return v.v;
    default:
      return pyLitRepr(v);
  }
}

export function pyLitRepr(v: PyLit): string {
  switch (v.t) {
    case 'none':
      return 'None';
    case 'bool':
      return v.v ? 'True' : 'False';
    case 'int':
      return v.v.toString();
    case 'float':
      return pyFloatRepr(v.v);
    case 'str':
      return pyStrRepr(v.v);
    case 'list':
      return `[${v.items.map(pyLitRepr).join(', ')}]`;
    case 'tuple':
      return v.items.length === 1 ? `(${pyLitRepr(v.items[0] as PyLit)},)` : `(${v.items.map(pyLitRepr).join(', ')})`;
    case 'set':
      return v.items.length === 0 ? 'set()' : `{${v.items.map(pyLitRepr).join(', ')}}`;
    case 'dict':
      return `{${v.keys.map((k) => `${pyLitRepr(k)}: ...`).join(', ')}}`;
  }
}
