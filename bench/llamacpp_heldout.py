#!/usr/bin/env python3
"""llamacpp_heldout.py — nanoserve against llama.cpp on prompts no golden has.

The shared goldens (../shared/checks/gguf_goldens.py, gguf_quants.py) fix four
prompts per file. This script draws new ones — seeded, so a run is repeatable,
and a different --seed is a different held-out set — and compares, for every
GGUF file given, nanoserve's greedy continuation with llama-server's on the
same file, the way the goldens were made (POST /tokenize with add_special,
POST /completion greedy with the top-10 logprobs of the raw logits, flash
attention on, F16 KV cache):

  - prompt ids: must be equal (the tokenizer, BOS and pre-tokenizer);
  - generated ids: equal up to the first divergence; a divergence is a
    near-tie when llama.cpp's own logprobs for its token and for ours differ
    by less than --tie (F16/F32) or --tie-quant, otherwise a failure;
  - logprobs: every step both took the same token, the largest |Δ| between
    the two engines' logprobs of each token in both top-10 lists must stay
    within --tol (F16/F32) or --tol-quant.

A file FAILs on a tokenizer difference or a run that does not complete; a
logprob or greedy difference beyond the bounds is DIFF (a failure with
--strict). Which of those are llama.cpp's own roundings (its F16 matmul
inputs and flash-attention accumulator; MoE router near-ties they break
differently) and which would be ours is what the Go test decides: with
--write DIR, `NANOSERVE_HELDOUT=DIR go test ./model -run TestHeldOutLcpp
-timeout 40m` checks our forward against the float64 reference over the
same F16 cache (≤ 0.1) and the reference with llama.cpp's roundings against
llama.cpp (model/heldout_lcpp_test.go). Each golden records its file's
sha256, and for a file `nanoserve bench --synthetic` wrote (its
nanoserve.synthetic.* keys) the shape, type and seed that re-make it: the
test then writes the file itself (gguf_synthetic), so a golden of an
architecture no shared fixture has can be committed without the file.

Prompts (per file, --prompts of them, cycling through the kinds): Shakespeare
excerpts of 60-1600 characters (../shared/corpus), this repository's own Go
source, arithmetic and digit runs, mixed-script text (CJK, Cyrillic, Arabic,
Greek, accents, emoji), whitespace runs and a chat-like transcript. Long
kinds are there so the recurrent state of the hybrids and the sliding windows
matter.

  python3 bench/llamacpp_heldout.py                      # every shared GGUF file
  python3 bench/llamacpp_heldout.py --seed 7 --prompts 12 ../shared/testdata/gguf-archs/qwen35
  LLAMA_BIN=~/.cache/llamacpp/llama.cpp/build/bin python3 bench/llamacpp_heldout.py FILE.gguf
  python3 bench/llamacpp_heldout.py --tokenizers --prompts 24  # the llama.cpp vocabularies, llama-tokenize

llama-server comes from ../shared/tools/llamacpp-build.sh (LLAMA_BIN, default
~/.cache/llamacpp/llama.cpp/build/bin). Standard library only. Exit status 1
when any file FAILs.
"""
import argparse, glob, hashlib, json, math, os, re, random, socket, struct, subprocess, sys, tempfile, time, urllib.error, urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared"))

SCRIPTS = [
    "北京是中国的首都，人口超过两千万。", "東京の天気は晴れです。", "Москва — столица России.",
    "مرحبا بالعالم", "Καλημέρα κόσμε", "naïve café déjà vu façade", "Grüße aus München",
    "🙂🚀✨ emoji 👍🏽", "한국어 문장입니다.", "मैं ठीक हूँ।", "ñandú, pingüino, año", "Ωμέγα ≠ ∑ ∞ ≤ ≥",
]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def post(port, path, body, timeout=600):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def make_prompts(rng, n, only=None):
    """n prompts, kinds in turn (only those in only, when given), each drawn from rng."""
    shakespeare = open(os.path.join(SHARED, "corpus", "tinyshakespeare.txt"), encoding="utf-8").read()
    gofiles = sorted(glob.glob(os.path.join(ROOT, "*", "*.go")))
    kinds = ["prose", "code", "digits", "scripts", "prose_long", "whitespace", "chat", "code_long"]
    if only:
        kinds = [k for k in kinds if k in only]
    out = []
    for i in range(n):
        kind = kinds[i % len(kinds)]
        if kind in ("prose", "prose_long"):
            ln = rng.randint(60, 400) if kind == "prose" else rng.randint(900, 1600)
            o = rng.randrange(len(shakespeare) - ln)
            p = shakespeare[o:o + ln]
        elif kind in ("code", "code_long"):
            src = open(rng.choice(gofiles), encoding="utf-8").read()
            ln = rng.randint(80, 400) if kind == "code" else rng.randint(800, 1400)
            o = rng.randrange(max(1, len(src) - ln))
            p = src[o:o + ln]
        elif kind == "digits":
            parts = []
            for _ in range(rng.randint(4, 10)):
                a, b = rng.randint(0, 99999), rng.randint(0, 9999)
                parts.append(rng.choice([f"{a} + {b} = {a + b}", f"{a}*{b}={a * b}", f"{a / (b + 1):.6f}",
                                         f"0x{a:x}", f"{a:,}", f"v{a % 10}.{b % 100}.{a % 7}"]))
            p = "; ".join(parts)
        elif kind == "scripts":
            p = " ".join(rng.choice(SCRIPTS) for _ in range(rng.randint(3, 8)))
        elif kind == "whitespace":
            p = "".join(rng.choice(["\t", "  ", "    ", "\n", "\n\n", " x", "if (a) {", "}", "# hi", "\r\n"])
                        for _ in range(rng.randint(20, 60)))
        else:  # chat-like transcript, raw text (no template)
            turns = []
            for _ in range(rng.randint(2, 5)):
                o = rng.randrange(len(shakespeare) - 200)
                turns.append(rng.choice(["User: ", "Assistant: ", "<|user|>", "### Question:\n"]) +
                             shakespeare[o:o + rng.randint(40, 200)].strip())
            p = "\n".join(turns) + "\nAssistant:"
        out.append((kind, p))
    return out


def quant_of(path):
    """The weight type a file's name states (gemma4-F16.gguf: F16;
    qwen35-0.8b-q8_0-1.gguf, bench's synthetic files: Q8_0), else "?"."""
    m = re.search(r"(?i)(?:^|[-.])(f16|f32|bf16|q[0-9]_[0-9a-z_]+|iq[0-9]_[a-z_]+|mxfp4[a-z_]*)(?:-[0-9]+)?$",
                  os.path.basename(path).rsplit(".", 1)[0])
    return m.group(1).upper() if m else "?"


def gguf_kvs(path, prefix):
    """The metadata values of a GGUF file whose keys start with prefix
    (scalars only; arrays are skipped): GGUF v2/v3's header, then n_kv of
    (key, type, value)."""
    scalar = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
    out = {}
    with open(path, "rb") as f:
        magic, version, _n_tensors, n_kv = struct.unpack("<4sIQQ", f.read(24))
        if magic != b"GGUF" or version < 2:
            return out

        def string():
            (n,) = struct.unpack("<Q", f.read(8))
            return f.read(n).decode("utf-8", "replace")

        def value(t):
            if t == 8:
                return string()
            if t == 9:
                (et, n) = struct.unpack("<IQ", f.read(12))
                if et in scalar:
                    f.seek(n * struct.calcsize(scalar[et]), 1)
                else:
                    for _ in range(n):
                        value(et)
                return None
            fmt = scalar[t]
            return struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]

        for _ in range(n_kv):
            key = string()
            (t,) = struct.unpack("<I", f.read(4))
            v = value(t)
            if key.startswith(prefix) and v is not None:
                out[key[len(prefix):]] = v
    return out


def golden_source(gguf):
    """The fields that let the Go test find and check the file a golden was
    made from: its sha256 and, for a file bench --synthetic wrote (the
    nanoserve.synthetic.* keys), the shape, type and seed that re-make it
    (TestHeldOutLcpp's gguf_synthetic)."""
    h = hashlib.sha256()
    with open(gguf, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    src = {"gguf_sha256": h.hexdigest()}
    syn = gguf_kvs(gguf, "nanoserve.synthetic.")
    if {"shape", "type", "seed"} <= syn.keys():
        src["gguf_synthetic"] = {"shape": syn["shape"], "type": syn["type"], "seed": syn["seed"]}
    return src


def run_file(args, gguf, prompts, nanoserve):
    exact = quant_of(gguf) in ("F16", "F32")
    tol = args.tol if exact else args.tol_quant
    tie = args.tie if exact else args.tie_quant
    port = free_port()
    srv = subprocess.Popen([os.path.join(args.llama_bin, "llama-server"), "-m", gguf, "-t", "1", "-tb", "1",
                            "-c", "0", "-np", "1", "-fa", "on", "--host", "127.0.0.1",
                            "--port", str(port), "--no-webui"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(600):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except Exception:
                if srv.poll() is not None:
                    return [f"llama-server exited: {srv.stderr.read()[-400:]}"], [], 0, 0, 0, 0
                time.sleep(0.1)
        fails, diffs, ties, unknown, worst, checked = [], [], 0, 0, 0.0, 0
        golden = []  # this file's prompts in the shared goldens' schema (--write)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/props", timeout=10) as r:
            n_ctx = json.loads(r.read())["default_generation_settings"]["n_ctx"]  # the model's trained context (-c 0)
        for kind, prompt in prompts:
            tok = post(port, "/tokenize", {"content": prompt, "add_special": True})["tokens"]
            if len(tok) + args.tokens > n_ctx:
                continue  # longer than the model's context: not checked
            checked += 1
            body = {"n_predict": args.tokens, "temperature": 0, "top_k": 1, "n_probs": 10, "samplers": ["top_k"],
                    "repeat_penalty": 1, "cache_prompt": False, "return_tokens": True,
                    "post_sampling_probs": False, "seed": 0, "prompt": prompt}
            try:
                ref = post(port, "/completion", body)
            except urllib.error.HTTPError as e:
                fails.append(f"{kind} ({len(tok)} tokens): llama-server: {e.code} {e.read()[:300]!r}")
                continue
            # llama-server's ids are "tokens"; its completion_probabilities
            # leave out the steps whose token ends inside a UTF-8 character
            # (a byte token, half an emoji), so they are matched to the ids in
            # order and those steps have no reference logprobs.
            ref_ids, probs, j = ref["tokens"], ref.get("completion_probabilities", []), 0
            ref_top = []
            for t in ref_ids:
                if j < len(probs) and probs[j]["id"] == t:
                    ref_top.append({u["id"]: u["logprob"] for u in probs[j]["top_logprobs"]})
                    j += 1
                else:
                    ref_top.append(None)
            if j != len(probs):
                fails.append(f"{kind} ({len(tok)} tokens): llama-server's logprobs do not follow its ids")
                continue
            n = next((i for i, t in enumerate(ref_top) if t is None), len(ref_top))  # steps with logprobs
            if n > 0:
                golden.append({"prompt": prompt, "category": kind, "prompt_ids": tok, "generated_ids": ref_ids[:n],
                               "steps": [{"id": ref_ids[i], "logprob": ref_top[i][ref_ids[i]],
                                          "top": sorted(([k, v] for k, v in ref_top[i].items()), key=lambda e: -e[1])}
                                         for i in range(n)]})
            r = subprocess.run([nanoserve, "generate", "--model", gguf, "--temperature", "0", "--ignore-eos",
                                "--max-tokens", str(len(ref_ids)), "--logprobs", "10", "--ctx-size", str(n_ctx),
                                "--json", prompt], capture_output=True, text=True, timeout=600)
            label = f"{kind} ({len(tok)} tokens) {prompt[:24]!r}"
            if args.verbose:
                print(f"     {label}: ids {ref_ids[:8]}...", flush=True)
            try:
                out = json.loads(r.stdout.strip().splitlines()[-1])
            except Exception:
                fails.append(f"{label}: nanoserve failed: {r.stderr[-300:]}")
                continue
            if out["prompt_ids"] != tok:
                i = next((i for i, (a, b) in enumerate(zip(out["prompt_ids"], tok)) if a != b),
                         min(len(tok), len(out["prompt_ids"])))
                fails.append(f"{label}: prompt ids differ at {i}: ours {out['prompt_ids'][i:i + 4]} llama.cpp {tok[i:i + 4]}")
                continue
            steps = [{"id": s["id"], "top": {t["id"]: t["logprob"] for t in s["top"]}} for s in out["logprobs"]]
            for i, (a, b_id, b_top) in enumerate(zip(steps, ref_ids, ref_top)):
                if b_top is not None:
                    # Logprobs of the tokens both lists hold, this step.
                    common = set(a["top"]) & set(b_top)
                    d = max((abs(a["top"][t] - b_top[t]) for t in common), default=0.0)
                    worst = max(worst, d)
                    if d > tol:
                        diffs.append(f"{label}: step {i}: logprobs differ by {d:.3f} > {tol}")
                        break
                if a["id"] != b_id:
                    gap = None if b_top is None else b_top[b_id] - b_top.get(a["id"], -math.inf)
                    if gap is None:
                        unknown += 1  # llama-server gave no logprobs for this step
                    elif gap < tie:
                        ties += 1  # a near-tie in llama.cpp's own logits: the rest is a different text
                    else:
                        diffs.append(f"{label}: step {i}: ours {a['id']} llama.cpp {b_id} (llama.cpp's gap {gap:.3f} >= {tie})")
                    break
        if args.write and golden:
            model = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/props", timeout=10).read()).get("model_alias", "")
            name = os.path.basename(gguf)[:-5].rsplit("-", 1)[0]  # gemma4-F16.gguf: gemma4
            os.makedirs(os.path.join(args.write, name), exist_ok=True)
            with open(os.path.join(args.write, name, os.path.basename(gguf)[:-5] + ".json"), "w") as fo:
                apath = os.path.abspath(gguf)
                json.dump({"model": name, "gguf_file": os.path.basename(gguf), "gguf_path": apath,
                           "gguf_shared": os.path.relpath(apath, SHARED) if apath.startswith(SHARED + os.sep) else "",
                           **golden_source(gguf),
                           "quant": quant_of(gguf), "seed": args.seed, "llama_server_model": model,
                           "request": {"endpoint": "POST /completion", "body": body}, "prompts": golden}, fo)
        return fails, diffs, ties, unknown, worst, checked
    finally:
        srv.terminate()
        srv.wait()


def check_vocabs(args, nanoserve, texts):
    """--tokenizers: every ggml-vocab-*.gguf under the folder, each text
    through llama-tokenize (no BOS, special-token text as plain text, as
    ../shared/checks/llamacpp_vocab.py's cases are made) and nanoserve
    tokenize --jsonl. Returns the number of vocabularies with a difference."""
    bad = 0
    tmp = tempfile.mkdtemp()
    for gguf in sorted(glob.glob(os.path.join(args.tokenizers, "ggml-vocab-*.gguf"))):
        name = os.path.basename(gguf)[len("ggml-vocab-"):-len(".gguf")]
        want = []
        for i, t in enumerate(texts):
            f = os.path.join(tmp, f"{i}.txt")
            with open(f, "wb") as fo:
                fo.write(t.encode())
            r = subprocess.run([os.path.join(args.llama_bin, "llama-tokenize"), "-m", gguf, "-f", f, "--ids", "--log-disable",
                                "--no-bos", "--no-parse-special", "--no-escape"], capture_output=True, text=True, timeout=120)
            want.append(json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else None)
        inp = "".join(json.dumps({"text": t}) + "\n" for t in texts)
        r = subprocess.run([nanoserve, "tokenize", "--model", gguf, "--jsonl"], input=inp, capture_output=True, text=True, timeout=600)
        got = [json.loads(l).get("ids") for l in r.stdout.splitlines() if l.strip()]
        diffs = []
        for k, t in enumerate(texts):
            if want[k] is None:
                diffs.append(f"{t[:30]!r}: llama-tokenize failed")
            elif k >= len(got) or got[k] != want[k]:
                g = got[k] if k < len(got) else None
                i = next((i for i, (a, b) in enumerate(zip(g or [], want[k])) if a != b), min(len(g or []), len(want[k])))
                diffs.append(f"{t[:30]!r}: ids differ at {i}: ours {(g or [])[i:i + 4]} llama.cpp {want[k][i:i + 4]}")
        print(f"{'FAIL' if diffs else 'ok':4} vocab {name}: {len(texts) - len(diffs)}/{len(texts)} texts", flush=True)
        for d in diffs[:10]:
            print(f"     {d}", flush=True)
        bad += bool(diffs)
    return bad


def vocab_texts(rng, n):
    """Prompts as make_prompts draws them, plus the shapes pre-tokenizers
    split on: contractions in any case, digit runs of every length, runs of
    spaces before words and line ends, combining marks, ZWJ emoji, CRLF."""
    texts = [p for _, p in make_prompts(rng, n)]
    pieces = ["I'LL", "we'Ve", "DON'T", "it's", " 's", "1234567890123", "3.14159", "  hello", "\t\tx", "   \n  \n",
              "e\u0301", "\u0915\u094d\u0937", "👨‍👩‍👧‍👦", "🏳️‍🌈", "a\r\nb", "\u200b", "ﬁ", "Ⅻ", "①②", "ＡＢＣ", "x²+y³",
              "<|endoftext|>", "<s>", "[INST]", "\u00a0nbsp", "ǅ", "İstanbul", "straße", "๑๒๓ ภาษาไทย", "\U0001F600"]
    for _ in range(n):
        texts.append("".join(rng.choice(pieces + [" ", "", "\n"]) for _ in range(rng.randint(3, 12))))
    return texts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("paths", nargs="*", help="GGUF files or folders (default: every file under ../shared/testdata/gguf*)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--prompts", type=int, default=8, help="prompts per file")
    ap.add_argument("--kinds", help="only these prompt kinds, comma-separated (prose, code, digits, scripts, prose_long, whitespace, chat, code_long)")
    ap.add_argument("--tokens", type=int, default=24, help="generated tokens per prompt")
    ap.add_argument("--tol", type=float, default=0.15, help="max |Δlogprob| for F16/F32 files")
    ap.add_argument("--tol-quant", type=float, default=1.0, help="max |Δlogprob| for quantized files (../shared/README.md: K-quants and Q4_1 of its tiny random llamaq within ~1.0 of llama.cpp)")
    ap.add_argument("--tie", type=float, default=0.05, help="llama.cpp's logprob gap below which a divergence is a near-tie (F16/F32)")
    ap.add_argument("--tie-quant", type=float, default=0.3)
    ap.add_argument("--write", metavar="DIR", help="also write llama.cpp's answers as goldens, DIR/<folder>/<file>.json in the shared "
                    "goldens' schema (steps up to the first without logprobs) with the file's sha256 and, for bench's synthetic "
                    "files, gguf_synthetic, for model/heldout_lcpp_test.go (NANOSERVE_HELDOUT=DIR)")
    ap.add_argument("--strict", action="store_true", help="numeric differences (DIFF) fail too")
    ap.add_argument("--tokenizers", metavar="DIR", nargs="?", const=os.path.join(SHARED, "testdata", "tokenizers", "llamacpp-vocab"),
                    help="instead: tokenize held-out texts with every ggml-vocab-*.gguf in DIR (default: the shared llama.cpp vocabularies) "
                    "through llama-tokenize and nanoserve")
    ap.add_argument("--verbose", action="store_true", help="print each prompt's kind, length and first ids")
    ap.add_argument("--llama-bin", default=os.environ.get("LLAMA_BIN", os.path.expanduser("~/.cache/llamacpp/llama.cpp/build/bin")))
    args = ap.parse_args()
    if not all(os.path.exists(os.path.join(args.llama_bin, b)) for b in ("llama-server", "llama-tokenize")):
        print(f"no llama-server or llama-tokenize in {args.llama_bin} (../shared/tools/llamacpp-build.sh builds them)")
        return 1
    paths = args.paths or [os.path.join(SHARED, "testdata", d) for d in ("gguf", "gguf-archs", "gguf-quants")]
    files = []
    for p in paths:
        files += [p] if p.endswith(".gguf") else sorted(glob.glob(os.path.join(p, "**", "*.gguf"), recursive=True))
    nanoserve = os.path.join(tempfile.mkdtemp(), "nanoserve")
    b = subprocess.run(["go", "build", "-o", nanoserve, "./cmd/nanoserve"], cwd=ROOT, capture_output=True, text=True)
    if b.returncode != 0:
        print(b.stderr[-2000:])
        return 1
    if args.tokenizers:
        bad = check_vocabs(args, nanoserve, vocab_texts(random.Random(args.seed), args.prompts))
        print(f"{bad} vocabularies differ")
        return 1 if bad else 0
    prompts = make_prompts(random.Random(args.seed), args.prompts, args.kinds.split(",") if args.kinds else None)
    bad = differ = 0
    for f in files:
        fails, diffs, ties, unknown, worst, checked = run_file(args, f, prompts, nanoserve)
        name = os.path.relpath(f, SHARED) if f.startswith(SHARED) else f
        status = "FAIL" if fails or (diffs and args.strict) else "DIFF" if diffs else "ok" if checked else "skip"
        print(f"{status:4} {name}: {checked - len(fails) - len(diffs)}/{checked} prompts agree ({len(prompts) - checked} longer "
              f"than the context), {ties} near-ties, {unknown} divergences at steps without llama.cpp logprobs, "
              f"max |Δlogprob| {worst:.3f}", flush=True)
        for m in fails + diffs:
            print(f"     {m}", flush=True)
        bad += bool(fails) or bool(diffs and args.strict)
        differ += bool(diffs)
    print(f"{len(files) - bad} files passed, {bad} failed ({differ} with numeric differences{' (--strict)' if args.strict else ''})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
