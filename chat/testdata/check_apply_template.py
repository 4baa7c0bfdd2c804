#!/usr/bin/env python3
"""Check chat templates end to end through the nanoserve binary, the way the
held-out check of issue 33 does: start

    nanoserve serve --model ../shared/testdata/gguf/qwen2/qwen2-F16.gguf --chat-template FILE

then POST /apply-template {"messages": ...} for every conversation of
cases.json without tools, and compare the returned prompt with Python Jinja2's
render (HF environment, see render_golden.py) given add_generation_prompt=True,
bos_token="" and eos_token="<|im_end|>" (this model's texts) and no other
variables. A template Jinja2 can render must not be refused at start either.

Usage (from the worktree root):
    go build -o /tmp/nanoserve ./cmd/nanoserve
    python3 chat/testdata/check_apply_template.py /tmp/nanoserve [TEMPLATE.jinja ...]
(default: chat/testdata/templates/**/*.jinja). Needs jinja2.
"""
import glob
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from datetime import datetime

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import render_golden as rg  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port, path, body):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def main():
    binary = sys.argv[1]
    files = sys.argv[2:] or sorted(glob.glob(os.path.join(HERE, "templates", "**", "*.jinja"), recursive=True))
    root = os.path.dirname(os.path.dirname(HERE))
    model = os.path.join(root, "..", "shared", "testdata", "gguf", "qwen2", "qwen2-F16.gguf")
    with open(os.path.join(HERE, "cases.json"), encoding="utf-8") as f:
        cases = [c for c in json.load(f)["cases"] if not c.get("tools")]
    env = rg.make_env(datetime.now())
    same = differ = skipped = 0
    for path in files:
        with open(path, encoding="utf-8") as f:
            tmpl = env.from_string(f.read())
        port = free_port()
        proc = subprocess.Popen([binary, "serve", "--model", model, "--chat-template", path, "--port", str(port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            for _ in range(200):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    if proc.poll() is not None:
                        break
                    time.sleep(0.1)
            if proc.poll() is not None:
                print("REFUSED AT START", os.path.basename(path), proc.stderr.read().decode()[-300:])
                differ += len(cases)
                continue
            for c in cases:
                try:
                    want = tmpl.render(messages=rg.hf_messages(c), add_generation_prompt=True, bos_token="", eos_token="<|im_end|>")
                except Exception:
                    skipped += 1  # Jinja2 cannot render it: nothing to match
                    continue
                code, body = post(port, "/apply-template", {"messages": c["messages"]})
                if code == 200 and body.get("prompt") == want:
                    same += 1
                else:
                    differ += 1
                    print("DIFF", os.path.basename(path), c["name"], code, json.dumps(body)[:300])
        finally:
            proc.terminate()
            proc.wait()
    print("apply-template: %d identical, %d different, %d not renderable by Jinja2 (%d templates)" % (same, differ, skipped, len(files)))
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
