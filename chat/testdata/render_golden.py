#!/usr/bin/env python3
"""Render chat/testdata/cases.json through Python Jinja2 the way Hugging Face
transformers' apply_chat_template does, and write chat/testdata/golden/<template>.json.

Environment (as in transformers' chat-template utilities):
  ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                extensions=[jinja2.ext.loopcontrols, Generation])
  filters["tojson"]         = json.dumps(x, ensure_ascii=False, indent=indent,
                                         separators=separators, sort_keys=sort_keys)
  globals["raise_exception"] raises TemplateError(message)
  globals["strftime_now"]   formats a FIXED clock (cases.json "now") so goldens are stable
Variables: messages, tools (only when the case has tools; transformers would
pass None, on which a few templates fail), documents (never),
add_generation_prompt, then the special tokens (bos_token/eos_token always,
"" when the model has none, as llama.cpp and nanoserve pass them; the others
only when set),
the template's "vars" and the case's "vars".

Usage: python3 chat/testdata/render_golden.py [SHARED_DIR]
(SHARED_DIR defaults to the nearest ../shared holding README.md). Needs only jinja2.
Regenerate via: go test ./chat -run TestGolden -update
"""
import json
import os
import sys
from datetime import datetime

import jinja2
import jinja2.ext
from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))


class Raised(TemplateError):
    """What raise_exception throws, so the golden can tell it apart."""


class Generation(jinja2.ext.Extension):
    """{% generation %}...{% endgeneration %}: transformers registers an
    extension for this tag (to mark assistant tokens for training masks);
    rendering passes the body through unchanged, which is all this does."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def find_shared():
    d = HERE
    while True:
        cand = os.path.join(d, "shared")
        if os.path.isfile(os.path.join(cand, "README.md")):
            return cand
        parent = os.path.dirname(d)
        if parent == d:
            sys.exit("render_golden: cannot find shared/README.md above " + HERE)
        d = parent


def token_text(v):
    if isinstance(v, dict):
        return v.get("content")
    return v


def load_template(spec, shared):
    """Returns (source, variables) for one template spec."""
    variables = {}
    if "shared_config" in spec:
        with open(os.path.join(shared, spec["shared_config"]), encoding="utf-8") as f:
            cfg = json.load(f)
        src = cfg.get("chat_template")
        if isinstance(src, list):
            src = {t["name"]: t["template"] for t in src}.get("default")
        # special_tokens_map: only the tokens that are set
        for key in ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"):
            t = token_text(cfg.get(key))
            if t is not None:
                variables[key] = t
            elif key in ("bos_token", "eos_token"):
                variables[key] = ""
        if cfg.get("additional_special_tokens"):
            variables["additional_special_tokens"] = [token_text(t) for t in cfg["additional_special_tokens"]]
    else:
        with open(os.path.join(HERE, spec["file"]), encoding="utf-8") as f:
            src = f.read()
        for key, field in (("bos_token", "bos"), ("eos_token", "eos")):
            variables[key] = spec.get(field) or ""
    variables.update(spec.get("vars", {}))
    return src, variables


def make_env(now):
    def raise_exception(message):
        raise Raised(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return now.strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols, Generation])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def hf_messages(case):
    """The messages as HF templates take them: for an "openai" case, each
    tool call's string function.arguments is json.loads-ed in place."""
    msgs = case["messages"]
    if not case.get("openai"):
        return msgs
    msgs = json.loads(json.dumps(msgs))
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            fn = tc["function"]
            if isinstance(fn.get("arguments"), str):
                fn["arguments"] = json.loads(fn["arguments"])
    return msgs


def main():
    shared = sys.argv[1] if len(sys.argv) > 1 else find_shared()
    with open(os.path.join(HERE, "cases.json"), encoding="utf-8") as f:
        spec = json.load(f)
    now = datetime.strptime(spec["now"], "%Y-%m-%dT%H:%M:%SZ")
    env = make_env(now)
    outdir = os.path.join(HERE, "golden")
    os.makedirs(outdir, exist_ok=True)
    for tspec in spec["templates"]:
        src, tvars = load_template(tspec, shared)
        path = os.path.join(outdir, tspec["name"] + ".json")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            tmpl = env.from_string(src)
        except TemplateError as e:  # e.g. a filter Jinja2 does not have
            golden = {
                "template": tspec["name"],
                "generator": "render_golden.py, jinja2 " + jinja2.__version__,
                "parse_error": "%s: %s" % (type(e).__name__, e),
                "results": [],
            }
            with open(path, "w", encoding="utf-8") as f:
                json.dump(golden, f, ensure_ascii=False, indent=1)
                f.write("\n")
            print("wrote", os.path.relpath(path, HERE), "parse error")
            continue
        results = []
        for case in spec["cases"]:
            kwargs = dict(tvars)
            kwargs.update(case.get("vars", {}))
            if case.get("tools") is not None:
                kwargs["tools"] = case["tools"]
            try:
                out = tmpl.render(
                    messages=hf_messages(case),
                    add_generation_prompt=case["add_generation_prompt"],
                    **kwargs,
                )
                results.append({"case": case["name"], "output": out})
            except Raised as e:
                results.append({"case": case["name"], "raised": str(e)})
            except Exception as e:  # other template errors (undefined ops etc.)
                results.append({"case": case["name"], "error": "%s: %s" % (type(e).__name__, e)})
        golden = {
            "template": tspec["name"],
            "generator": "render_golden.py, jinja2 " + jinja2.__version__,
            "results": results,
        }
        with open(path, "w", encoding="utf-8") as f:
            json.dump(golden, f, ensure_ascii=False, indent=1)
            f.write("\n")
        print("wrote", os.path.relpath(path, HERE), len(results), "cases")


if __name__ == "__main__":
    main()
