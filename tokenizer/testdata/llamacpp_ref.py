#!/usr/bin/env python3
"""An independent reference for the llama.cpp vocabularies nanoserve added in issue 31.

It re-implements, in Python with the `regex` module, how llama.cpp (src/llama-vocab.cpp,
src/unicode.cpp) tokenizes with add_special=false, parse_special=false:

  - special-token partition: llama.cpp's algorithm (each non-control special token, longest text
    first, cut out of every text fragment), after its load-time type fixes by token text;
  - the pre-tokenizer expressions of falcon, deepseek-coder, deepseek-llm and qwen35 as regexes
    with llama.cpp's class semantics (\\s is ASCII \\t\\n\\v\\f\\r space plus Unicode White_Space;
    code-point ranges never match whitespace), each stage cutting the pieces of the previous one,
    matches and the gaps between them both kept;
  - byte-level BPE by merge rank over the byte-encoded pieces (merges by text);
  - Gemma 4: spaces as U+2581, lines and newline runs, BPE over characters, <0xNN> fallback;
  - WordPiece (BERT): llama.cpp's normalisation and greedy longest match;
  - SentencePiece (llama-spm, phi-3): llama.cpp's session (highest-scoring token pair first, any
    token type, leftovers as <0xNN>), a space in front of text that starts the input or follows a
    special token.

Usage (from the repository root):
  python3 tokenizer/testdata/llamacpp_ref.py verify    # the reference against llama.cpp's .inp/.out
  python3 tokenizer/testdata/llamacpp_ref.py heldout   # writes tokenizer/testdata/llamacpp_heldout/NAME.jsonl
  (--all: also the vocabularies supported before: gpt-2, mpt, starcoder, refact, command-r,
  llama-bpe, qwen2, and SentencePiece llama-spm, phi-3)
  python3 tokenizer/testdata/llamacpp_ref.py splits    # writes tokenizer/testdata/pretok_llamacpp_splits.json
The held-out files run through nanoserve with
  python3 ../shared/checks/llamacpp_vocab.py --cases tokenizer/testdata/llamacpp_heldout
Characters are kept to Unicode 15.0 (Go's tables) so that category data agrees.
"""
import json, os, random, struct, sys, unicodedata

import regex

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VOCABS = os.path.normpath(os.path.join(ROOT, "..", "shared", "testdata", "tokenizers", "llamacpp-vocab"))
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "llamacpp_heldout")
NAMES = ["falcon", "deepseek-coder", "deepseek-llm", "qwen35", "gemma-4", "bert-bge"]


def read_gguf(path):
    d = open(path, "rb").read()
    off = 4
    def u(fmt):
        nonlocal off
        v = struct.unpack_from("<" + fmt, d, off)[0]
        off += struct.calcsize(fmt)
        return v
    def s():
        nonlocal off
        n = u("Q")
        v = d[off:off + n].decode("utf-8")
        off += n
        return v
    fm = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
    def val(t):
        if t in fm:
            return u(fm[t])
        if t == 8:
            return s()
        at, n = u("I"), u("Q")
        return [val(at) for _ in range(n)]
    assert d[:4] == b"GGUF"
    u("I")
    u("Q")
    kv = {}
    for _ in range(u("Q")):
        k = s()
        kv[k] = val(u("I"))
    return kv


WSC = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
WS = "[" + WSC + "]"
NOTWS = "[^" + WSC + "]"
GPT2 = (r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^" + WSC + r"\p{L}\p{N}]+|" + WS + "+(?!" + NOTWS + ")")
CJK = r"(?:(?!" + WS + r")[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff])+"
# deepseek-llm's letter class, as its tokenizer.json writes it
DS_LETTERS = ("A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293\u0295-\u02af\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1\u03a3-\u03f5\u03f7-\u0481\u048a-\u052f\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45\u1f48-\u1f4d\u1f50-\u1f57\u1f59\u1f5b\u1f5d\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe\u1fc2-\u1fc4\u1fc6-\u1fcc\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc\u2102\u2107\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134\u2139\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee\u2cf2\u2cf3\ua640-\ua66d\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e\uab70-\uabbf\ufb00-\ufb06\ufb13-\ufb17\uff21-\uff3a\uff41-\uff5a\U00010400-\U0001044f\U000104b0-\U000104d3\U000104d8-\U000104fb\U00010c80-\U00010cb2\U00010cc0-\U00010cf2\U000118a0-\U000118df\U0001e900-\U0001e943")
PRE = {
    "falcon": [r"(?:[!-/:-@\[-`{-~]|(?![\x00-\x7f])\p{P})+", GPT2, r"[0-9][0-9][0-9]"],
    "deepseek-coder": [r"[\r\n]", WS + r"?\p{L}+", WS + r"?\p{P}+", CJK, r"\p{N}"],
    "deepseek-llm": [r"[\r\n]", WS + "?[" + DS_LETTERS + "]+", WS + "?(?:(?!" + WS + ")[!-/:-~！-／：-～‘-‟　-。])+",
                     WS + r"+\Z", CJK, r"\p{N}+"],
    "qwen35": [r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^"
               + WSC + r"\p{L}\p{M}\p{N}]+[\r\n]*|" + WS + r"*[\r\n]+|" + WS + "+(?!" + NOTWS + ")|" + WS + "+"],
    "gemma-4": [r"[^\n]+|[\n]+"],
}
# The byte-level vocabularies that were supported before issue 31 (for held-out cases).
_LLAMA3 = (r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^"
           + WSC + r"\p{L}\p{N}]+[\r\n]*|" + WS + r"*[\r\n]+|" + WS + "+(?!" + NOTWS + ")|" + WS + "+")
PRE.update({
    "gpt-2": [GPT2], "mpt": [GPT2],
    "starcoder": [r"\p{N}", GPT2], "refact": [r"\p{N}", GPT2], "command-r": [r"\p{N}", GPT2],
    "llama-bpe": [_LLAMA3],
    "qwen2": [_LLAMA3.replace(r"\p{N}{1,3}", r"\p{N}")],
})
IGNORE_MERGES = {"llama-bpe"}
MORE_NAMES = ["gpt-2", "mpt", "starcoder", "refact", "command-r", "llama-bpe", "qwen2", "llama-spm", "phi-3"]


def split(text, exprs):
    pieces = [text]
    for e in exprs:
        rx = regex.compile(e)
        nxt = []
        for p in pieces:
            pos = 0
            for m in rx.finditer(p):
                if m.start() > pos:
                    nxt.append(p[pos:m.start()])
                if m.end() > m.start():
                    nxt.append(m.group())
                pos = m.end()
            if pos < len(p):
                nxt.append(p[pos:])
        pieces = nxt
    return pieces


def byte_chars():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


BYTE = byte_chars()
EOG = ["<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "<end_of_turn>",
       "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
       "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~["]


class Vocab:
    def __init__(self, name):
        kv = read_gguf(os.path.join(VOCABS, f"ggml-vocab-{name}.gguf"))
        self.name = name
        self.model = kv["tokenizer.ggml.model"]
        self.tokens = kv["tokenizer.ggml.tokens"]
        self.types = list(kv.get("tokenizer.ggml.token_type", [1] * len(self.tokens)))
        self.ids = {}
        for i, t in enumerate(self.tokens):
            self.ids[t] = i  # the last id of a text, as llama.cpp's map
        self.ranks = {}
        for r, m in enumerate(kv.get("tokenizer.ggml.merges", [])):
            sp = m.find(" ", 1)
            self.ranks.setdefault((m[:sp], m[sp + 1:]), r)
        self.unk = kv.get("tokenizer.ggml.unknown_token_id", 100 if self.model == "bert" else None)
        self.scores = kv.get("tokenizer.ggml.scores")
        self.space_prefix = kv.get("tokenizer.ggml.add_space_prefix", self.model == "llama")
        # load-time fixes by text
        for i, t in enumerate(self.tokens):
            if t in EOG:
                self.types[i] = 3
            if t in ("<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"):
                self.types[i] = 4
        if "<|tool_response>" in self.ids and "</s>" in self.ids:
            self.types[self.ids["</s>"]] = 1
        # parse_special=false: only user-defined tokens cut the text (longest text first)
        self.special = sorted((i for i, ty in enumerate(self.types) if ty == 4), key=lambda i: -len(self.tokens[i].encode()))
        self.maxlen = max(len(t.encode()) for t in self.tokens)

    def partition(self, text):
        frags = [text]  # str: raw text, int: token
        for sid in self.special:
            st = self.tokens[sid]
            nxt = []
            for f in frags:
                if isinstance(f, int):
                    nxt.append(f)
                    continue
                pos = 0
                while True:
                    k = f.find(st, pos)
                    if k < 0:
                        break
                    if k > pos:
                        nxt.append(f[pos:k])
                    nxt.append(sid)
                    pos = k + len(st)
                if pos < len(f):
                    nxt.append(f[pos:])
            frags = nxt
        return frags

    def bpe(self, syms):
        while len(syms) > 1:
            best = None
            for i in range(len(syms) - 1):
                r = self.ranks.get((syms[i], syms[i + 1]))
                if r is not None and (best is None or r < best[0]):
                    best = (r, i)
            if best is None:
                break
            i = best[1]
            syms[i:i + 2] = [syms[i] + syms[i + 1]]
        return syms

    def spm(self, text):
        """llama.cpp's SentencePiece session: merge the adjacent pair whose text is the
        highest-scoring token (leftmost on ties), any token type; what is left as no
        token becomes <0xNN> byte tokens."""
        import heapq
        b = text.encode()
        start, size, nxt, prv = [], [], [], []
        o = 0
        while o < len(b):
            n = min({0xF: 4, 0xE: 3, 0xC: 2, 0xD: 2}.get(b[o] >> 4, 1), len(b) - o)
            start.append(o)
            size.append(n)
            o += n
        k = len(start)
        nxt = [i + 1 if i + 1 < k else -1 for i in range(k)]
        prv = [i - 1 for i in range(k)]
        heap = []
        def bigram(l, r):
            if l < 0 or r < 0:
                return
            t = b[start[l]:start[l] + size[l] + size[r]]
            try:
                tid = self.ids.get(t.decode())
            except UnicodeDecodeError:
                return
            if tid is not None:
                heapq.heappush(heap, (-self.scores[tid], l, r, len(t)))
        for i in range(1, k):
            bigram(i - 1, i)
        while heap:
            _, l, r, n = heapq.heappop(heap)
            if size[l] == 0 or size[r] == 0 or size[l] + size[r] != n:
                continue
            size[l] += size[r]
            size[r] = 0
            nxt[l] = nxt[r]
            if nxt[r] >= 0:
                prv[nxt[r]] = l
            bigram(prv[l], l)
            bigram(l, nxt[l])
        out = []
        i = 0 if k else -1
        while i != -1:
            t = b[start[i]:start[i] + size[i]]
            try:
                tid = self.ids.get(t.decode())
            except UnicodeDecodeError:
                tid = None
            if tid is not None:
                out.append(tid)
            else:
                out += [self.ids[f"<0x{c:02X}>"] for c in t]
            i = nxt[i]
        return out

    def encode(self, text):
        out = []
        prev_special = True
        for f in self.partition(text):
            if f == "":
                continue  # llama.cpp makes no fragment of empty text
            if isinstance(f, int):
                out.append(f)
                prev_special = True
            elif self.model == "llama":
                out += self.spm(((" " if self.space_prefix and prev_special else "") + f).replace(" ", "▁"))
                prev_special = False
            elif self.model == "bert":
                out += self.wpm(f)
            elif self.model == "gemma4":
                for w in split(f.replace(" ", "▁"), PRE["gemma-4"]):
                    if w.strip("\n") == "" and w in self.ids:
                        out.append(self.ids[w])
                        continue
                    for s in self.bpe(list(w)):
                        if s in self.ids:
                            out.append(self.ids[s])
                        else:
                            out += [self.ids[f"<0x{b:02X}>"] for b in s.encode() if f"<0x{b:02X}>" in self.ids]
            else:
                for w in split(f, PRE[self.name]):
                    enc = "".join(BYTE[b] for b in w.encode())
                    if self.name in IGNORE_MERGES and enc in self.ids:
                        out.append(self.ids[enc])
                        continue
                    for s in self.bpe(list(enc)):
                        if s in self.ids:
                            out.append(self.ids[s])
                        else:
                            # llama.cpp looks each byte of the symbol's text up as a one-byte
                            # string: only ASCII ones can be tokens
                            out += [self.ids[chr(b)] for b in s.encode() if b < 0x80 and chr(b) in self.ids]
        return out

    def wpm(self, text):
        words = [""]
        for c in text:
            n = unicodedata.normalize("NFD", c)[0] if ord(c) >= 0x80 else c
            cat = unicodedata.category(n)
            if regex.match(WS, n):
                if words[-1]:
                    words.append("")
                continue
            if n in ("\x00", "\ufffd") or cat in ("Cc", "Cf", "Co", "Cs") or cat.startswith("M"):
                continue
            lo = n.lower() if len(n.lower()) == 1 else n
            o = ord(n)
            cjk = (0x4E00 <= o <= 0x9FFF or 0x3400 <= o <= 0x4DBF or 0x20000 <= o <= 0x2A6DF or 0x2A700 <= o <= 0x2B73F
                   or 0x2B740 <= o <= 0x2B81F or 0x2B920 <= o <= 0x2CEAF or 0xF900 <= o <= 0xFAFF or 0x2F800 <= o <= 0x2FA1F)
            if cat.startswith("P") or (o < 0x7F and cat.startswith("S")) or cjk:
                if words[-1]:
                    words.append("")
                words[-1] = lo
                words.append("")
            else:
                words[-1] += lo
        out = []
        for w in words:
            if not w:
                continue
            b = ("▁" + w).encode()
            got, i = [], 0
            while i < len(b):
                for j in range(min(len(b), i + self.maxlen + 1), i, -1):
                    try:
                        t = b[i:j].decode()
                    except UnicodeDecodeError:
                        continue
                    if t in self.ids:
                        got.append(self.ids[t])
                        i = j
                        break
                else:
                    got = []
                    break
            out += got if got else [self.unk]
        return out


def read_tests(name):
    g = os.path.join(VOCABS, f"ggml-vocab-{name}.gguf")
    raw = open(g + ".inp", encoding="utf-8").read()
    texts = raw.split("\n__ggml_vocab_test__\n")
    if texts and texts[-1] == "":
        texts.pop()
    lines = open(g + ".out", encoding="utf-8").read().split("\n")
    return [(t, [int(x) for x in l.split()]) for t, l in zip(texts, lines)]


CURATED = [
    "", " ", "  ", "\t", "\n", "\r\n", " \n \n", "\n\n\n", "a\n\nb", "  leading", "trailing   ", "mid   dle",
    "Hello, world! It's 2026.", "I'M DON'T we'Ll they'VE x'ſ", "don't  'tis 'twas ''", "3.14159 1,000,000 007 12345678",
    "٣٤٥ ⅫⅣ ½ ²³", "Ünïcödé naïve café résumé", "e\u0301 a\u0308 n\u0303", "Привет, мир! Ёлка", "Γειά σου κόσμε",
    "שלום עולם", "مرحبا بالعالم ١٢٣", "नमस्ते दुनिया", "สวัสดีชาวโลก", "こんにちは、世界！", "カタカナ ｶﾀｶﾅ",
    "你好，世界。中文测试", "한국어 텍스트", "全角ＡＢＣ１２３！？", "emoji 😀👍🏽 🇫🇷 ❤️ 👨‍👩‍👧",
    "tabs\tand\vvertical\fform", "nbsp\u00a0here\u3000ideo\u2003em", "line\u2028sep\u2029para",
    "<s>[INST] Hello [/INST]</s>", "<|im_start|>user\nhi<|im_end|>", "<|endoftext|> <unk> <pad>",
    "[CLS] [SEP] [MASK] [UNK]", "<|tool_call>call:f{}<tool_call|>", "<|\"|>quoted<|\"|>", "<|channel>x<channel|>",
    "<|tool_response>r<tool_response|>", "<bos><eos></s><s>", ">>TITLE<< >>ABSTRACT<<", "<0x41><0xFF>",
    "def f(x):\n    return x**2  # comment\n", "if (a && b || !c) { y = \"s\"; }", "$HOME ~/path/to/file.txt",
    "a+b=c<d>e^f|g`h~i", "...!!!???---___***", "“quotes” ‘single’ «guillemets» — dash … ellipsis",
    "x²+y²=z² ∑∫√∞ ≠ ≤ ≥", "€100 £50 ¥1000 ₹500 ₿", "ǅungla ǈ ǋ ΐ ΰ ẞ ß", "ﬁne ﬂow ﬃ", "Ⅷ ⅷ Ↄↄ",
    "İstanbul ıi KELVIN K", "mixed日本語and English123文字", "  \n\t  \r\n  x", "word\u200bjoiner\u200dzwj\ufeffbom",
    "\u0000nul\u0001ctrl\u007fdel", "a" * 40 + " " + "b" * 3, "1" * 25, " " * 30 + "x", "\n" * 7 + "y",
]
ALPHABET = ["a", "Z", "é", "\u0301", " ", "  ", "\n", "\r", "\t", "'", "s", "1", "9", "٣", "½", "!", ".", ",", "$", "`",
            "😀", "中", "한", "ア", "、", "。", "！", "Ａ", "\u3000", "\u00a0", "ß", "Ω", "ſ", "-", "_", "<", ">", "|",
            "(", ")", "“", "—", "€", "→", "ก", "\u0e31", "म", "\u093f"]


def cases(seed=31, n=120):
    rnd = random.Random(seed)
    out = list(CURATED)
    for _ in range(n):
        out.append("".join(rnd.choice(ALPHABET) for _ in range(rnd.randint(1, 24))))
    return out


def main():
    cmd = sys.argv[1] if len(sys.argv) > 1 else "verify"
    if cmd == "splits":
        # pre-tokenizer splits for the Go unit tests (TestLlamaCppPreTokenizerReference)
        cs = cases(seed=7, n=300)
        ref = {"about": "pieces of each case by llama.cpp's expressions, from llamacpp_ref.py splits",
               "cases": cs,
               "splits": {pre: [split(c, PRE[name]) for c in cs]
                          for name, pre in [("falcon", "falcon"), ("deepseek-coder", "deepseek-coder"),
                                            ("deepseek-llm", "deepseek-llm"), ("qwen35", "qwen35"), ("gemma-4", "gemma4")]}}
        with open(os.path.join(os.path.dirname(OUT), "pretok_llamacpp_splits.json"), "w", encoding="utf-8") as f:
            json.dump(ref, f, ensure_ascii=False, indent=0)
        return 0
    bad = 0
    names = NAMES + (MORE_NAMES if "--all" in sys.argv else [])
    for name in names:
        v = Vocab(name)
        if cmd == "verify":
            rows = read_tests(name)
            ok = sum(1 for t, ids in rows if v.encode(t) == ids)
            for t, ids in rows:
                if v.encode(t) != ids and bad < 10:
                    print(f"  {name} {t[:40]!r}: want {ids[:12]} got {v.encode(t)[:12]}")
            bad += len(rows) - ok
            print(f"{name}: reference {ok}/{len(rows)} of llama.cpp's cases")
        else:
            os.makedirs(OUT, exist_ok=True)
            with open(os.path.join(OUT, f"{name}.jsonl"), "w", encoding="utf-8") as f:
                for t in cases():
                    f.write(json.dumps({"text": t, "ids": v.encode(t)}, ensure_ascii=False) + "\n")
            print(f"{name}: wrote {len(cases())} cases")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
