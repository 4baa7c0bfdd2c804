// app.js: nanoserve's chat page, a client of the server's own API.
//
// State: conversations (localStorage "nanoserve.conversations"), settings
// (localStorage "nanoserve.settings"), the API key (sessionStorage, or
// localStorage when remembered: "nanoserve.apiKey"). One generation runs
// at a time; its AbortController is the Stop button.
//
// A reply streams from POST /v1/chat/completions (models with a chat
// template) or POST /v1/completions (models without one: the conversation
// is then one document the model continues), both as server-sent events.
// Each reply keeps its answer, its reasoning (reasoning_content deltas, shown
// folded), its tool calls, and its numbers: time to first token and tokens
// per second after the first token.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const els = {
    model: $("model"), modelKind: $("model-kind"), tabChat: $("tab-chat"), tabFim: $("tab-fim"),
    chatPanel: $("chat-panel"), fimPanel: $("fim-panel"), newChat: $("new-chat"), convs: $("conversations"),
    system: $("system"), temperature: $("temperature"), topP: $("top-p"), maxTokens: $("max-tokens"),
    messages: $("messages"), composer: $("composer"), input: $("input"), send: $("send"), stop: $("stop"),
    regenerate: $("regenerate"), status: $("status"), keyDialog: $("key-dialog"), keyForm: $("key-form"),
    apiKey: $("api-key"), keyRemember: $("key-remember"), keyCancel: $("key-cancel"), keyWhy: $("key-why"),
    fimPrefix: $("fim-prefix"), fimSuffix: $("fim-suffix"), fimMax: $("fim-max"), fimRun: $("fim-run"),
    fimStop: $("fim-stop"), fimOut: $("fim-out"),
  };

  // ---- storage ----
  const CONVS = "nanoserve.conversations", SETTINGS = "nanoserve.settings", KEY = "nanoserve.apiKey";
  function load(name, fallback) {
    try {
      const v = JSON.parse(localStorage.getItem(name));
      return v === null ? fallback : v;
    } catch (e) {
      return fallback;
    }
  }
  function save(name, v) {
    try {
      localStorage.setItem(name, JSON.stringify(v));
    } catch (e) {
      setStatus("Could not save to the browser's storage: " + e.message);
    }
  }
  let conversations = load(CONVS, []);
  if (!Array.isArray(conversations)) conversations = [];
  const settings = Object.assign({ system: "", temperature: "", top_p: "", max_tokens: "", model: "", current: "" }, load(SETTINGS, {}));
  let current = conversations.find((c) => c.id === settings.current) || null;

  function saveConversations() {
    save(CONVS, conversations);
  }
  function saveSettings() {
    settings.current = current ? current.id : "";
    save(SETTINGS, settings);
  }

  function apiKey() {
    return sessionStorage.getItem(KEY) || localStorage.getItem(KEY) || "";
  }

  // ---- status line ----
  function setStatus(text) {
    els.status.textContent = text;
  }

  // ---- API calls ----
  // askKey shows the key dialog and resolves true when a key was given.
  function askKey(why) {
    return new Promise((resolve) => {
      els.keyWhy.textContent = why;
      els.apiKey.value = "";
      const done = (ok) => {
        els.keyForm.removeEventListener("submit", onSubmit);
        els.keyCancel.removeEventListener("click", onCancel);
        els.keyDialog.removeEventListener("cancel", onCancel);
        if (els.keyDialog.open) els.keyDialog.close();
        resolve(ok);
      };
      const onSubmit = (ev) => {
        ev.preventDefault();
        const k = els.apiKey.value.trim();
        if (!k) return;
        sessionStorage.removeItem(KEY);
        localStorage.removeItem(KEY);
        (els.keyRemember.checked ? localStorage : sessionStorage).setItem(KEY, k);
        done(true);
      };
      const onCancel = (ev) => {
        if (ev) ev.preventDefault();
        done(false);
      };
      els.keyForm.addEventListener("submit", onSubmit);
      els.keyCancel.addEventListener("click", onCancel);
      els.keyDialog.addEventListener("cancel", onCancel);
      els.keyDialog.showModal();
      els.apiKey.focus();
    });
  }

  // api sends a request to the server (same origin), asking for the API
  // key when the server answers 401, and returns the Response of a 2xx; it
  // throws an Error with the server's message otherwise.
  async function api(path, opts) {
    for (let attempt = 0; ; attempt++) {
      const headers = Object.assign({}, (opts && opts.headers) || {});
      const key = apiKey();
      if (key) headers["Authorization"] = "Bearer " + key;
      if (opts && opts.body) headers["Content-Type"] = "application/json";
      const resp = await fetch(path, Object.assign({}, opts, { headers, credentials: "same-origin", cache: "no-store" }));
      if (resp.status === 401 && attempt < 3) {
        const ok = await askKey(key ? "The server refused that key. Enter the API key again." : "This server needs an API key.");
        if (!ok) throw new Error("no API key given");
        continue;
      }
      if (!resp.ok) {
        let msg = resp.status + " " + resp.statusText;
        try {
          const j = await resp.json();
          if (j && j.error) msg = typeof j.error === "string" ? j.error : j.error.message || msg;
        } catch (e) {
          // not JSON: keep the status
        }
        const err = new Error(msg);
        err.status = resp.status;
        throw err;
      }
      return resp;
    }
  }

  // sse yields the JSON of each "data:" event of a server-sent event stream
  // until "[DONE]" or the end of the body.
  async function* sse(resp) {
    const reader = resp.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let cut;
      while ((cut = buf.search(/\r?\n\r?\n/)) >= 0) {
        const event = buf.slice(0, cut);
        buf = buf.slice(cut).replace(/^\r?\n\r?\n/, "");
        const data = event.split(/\r?\n/).filter((l) => l.startsWith("data:")).map((l) => l.slice(5).replace(/^ /, "")).join("\n");
        if (data === "") continue;
        if (data === "[DONE]") return;
        yield JSON.parse(data);
      }
    }
  }

  // ---- models ----
  const modelInfo = {}; // id -> {chat: bool, fim: bool}
  async function loadModels() {
    let list;
    try {
      list = await (await api("/v1/models")).json();
    } catch (e) {
      setStatus("Could not list the models: " + e.message);
      return;
    }
    els.model.textContent = "";
    for (const m of list.data || []) {
      const o = document.createElement("option");
      o.value = m.id;
      o.textContent = m.id;
      els.model.appendChild(o);
    }
    const want = (current && current.model) || settings.model;
    if (want && [...els.model.options].some((o) => o.value === want)) els.model.value = want;
    await describeModel();
  }

  // describeModel learns whether the selected model has a chat template and
  // FIM tokens (Ollama's /api/show: template, capabilities).
  async function describeModel() {
    const id = els.model.value;
    if (!id) return;
    settings.model = id;
    saveSettings();
    if (!modelInfo[id]) {
      try {
        const j = await (await api("/api/show", { method: "POST", body: JSON.stringify({ model: id }) })).json();
        modelInfo[id] = { chat: !!j.template, fim: (j.capabilities || []).includes("insert") };
      } catch (e) {
        modelInfo[id] = { chat: true, fim: false };
        setStatus("Could not describe " + id + ": " + e.message);
      }
    }
    const info = modelInfo[id];
    els.modelKind.textContent = info.chat ? "chat" : "completion (no chat template)";
    els.tabFim.disabled = !info.fim;
    els.tabFim.title = info.fim ? "" : "this model has no fill-in-the-middle tokens";
    if (!info.fim && !els.fimPanel.hidden) selectTab(els.tabChat);
  }

  // ---- conversations ----
  function newConversation() {
    current = { id: "c" + Date.now().toString(36) + Math.random().toString(36).slice(2, 7), title: "New conversation", model: els.model.value, messages: [], updated: Date.now() };
    conversations.unshift(current);
    saveConversations();
    saveSettings();
    renderAll();
    els.input.focus();
  }

  function renderConversations() {
    els.convs.textContent = "";
    for (const c of conversations) {
      const li = document.createElement("li");
      const open = document.createElement("button");
      open.type = "button";
      open.className = "conv";
      open.textContent = c.title || "Conversation";
      if (c === current) open.setAttribute("aria-current", "true");
      open.addEventListener("click", () => {
        if (busy) return;
        current = c;
        if (c.model && [...els.model.options].some((o) => o.value === c.model)) {
          els.model.value = c.model;
          describeModel();
        }
        saveSettings();
        renderAll();
      });
      const del = document.createElement("button");
      del.type = "button";
      del.className = "del";
      del.textContent = "×";
      del.setAttribute("aria-label", "Delete conversation " + (c.title || ""));
      del.addEventListener("click", () => {
        if (busy) return;
        conversations = conversations.filter((x) => x !== c);
        if (current === c) current = null;
        saveConversations();
        saveSettings();
        renderAll();
      });
      li.append(open, del);
      els.convs.appendChild(li);
    }
  }

  // messageView builds one message's element (or updates el in place).
  function messageView(msg, el) {
    if (!el) {
      el = document.createElement("article");
      el.className = "msg " + msg.role;
    }
    el.textContent = "";
    const who = document.createElement("h2");
    who.className = "who";
    who.textContent = msg.role === "user" ? "You" : msg.role === "assistant" ? "Assistant" + (msg.model ? " · " + msg.model : "") : msg.role;
    el.appendChild(who);
    if (msg.reasoning) {
      const d = document.createElement("details");
      d.className = "reasoning";
      d.open = !!msg.reasoningOpen;
      d.addEventListener("toggle", () => { msg.reasoningOpen = d.open; });
      const s = document.createElement("summary");
      s.textContent = msg.content || msg.tool_calls ? "Reasoning" : "Reasoning…";
      const body = document.createElement("div");
      body.className = "reasoning-text";
      body.appendChild(renderMarkdown(msg.reasoning));
      d.append(s, body);
      el.appendChild(d);
    }
    const content = document.createElement("div");
    content.className = "content";
    content.appendChild(renderMarkdown(msg.content || ""));
    el.appendChild(content);
    for (const tc of msg.tool_calls || []) {
      const box = document.createElement("div");
      box.className = "toolcall";
      const label = document.createElement("span");
      label.className = "toolcall-label";
      label.textContent = "Tool call";
      const code = document.createElement("code");
      let args = (tc.function && tc.function.arguments) || "";
      try {
        args = JSON.stringify(JSON.parse(args), null, 2);
      } catch (e) {
        // partial JSON while streaming: shown as it is
      }
      code.textContent = ((tc.function && tc.function.name) || "?") + "(" + args + ")";
      const pre = document.createElement("pre");
      pre.appendChild(code);
      box.append(label, pre);
      el.appendChild(box);
    }
    if (msg.error) {
      const e = document.createElement("p");
      e.className = "error";
      e.textContent = "Error: " + msg.error;
      el.appendChild(e);
    }
    if (msg.stats || msg.stopped) {
      const p = document.createElement("p");
      p.className = "stats";
      const parts = [];
      const st = msg.stats || {};
      if (st.ttft_ms !== undefined) parts.push("first token " + Math.round(st.ttft_ms) + " ms");
      if (st.tokens_per_s !== undefined) parts.push(st.tokens_per_s.toFixed(1) + " tokens/s");
      if (st.tokens !== undefined) parts.push(st.tokens + " tokens");
      if (msg.finish) parts.push(msg.finish);
      if (msg.stopped) parts.push("stopped");
      p.textContent = parts.join(" · ");
      el.appendChild(p);
    }
    return el;
  }

  function renderMessages() {
    els.messages.textContent = "";
    if (!current) return;
    for (const m of current.messages) els.messages.appendChild(messageView(m));
    els.messages.scrollTop = els.messages.scrollHeight;
  }

  function renderAll() {
    renderConversations();
    renderMessages();
    updateButtons();
  }

  // ---- generation ----
  let busy = null; // the AbortController of the running generation

  function updateButtons() {
    els.send.disabled = !!busy;
    els.stop.disabled = !busy;
    els.fimRun.disabled = !!busy;
    els.fimStop.disabled = !busy;
    els.regenerate.disabled = !!busy || !current || !current.messages.some((m) => m.role === "user");
  }

  function num(input, int) {
    const v = input.value.trim();
    if (v === "") return undefined;
    const n = int ? parseInt(v, 10) : parseFloat(v);
    return Number.isFinite(n) ? n : undefined;
  }

  function sampling() {
    const o = {};
    const t = num(els.temperature), p = num(els.topP), mt = num(els.maxTokens, true);
    if (t !== undefined) o.temperature = t;
    if (p !== undefined) o.top_p = p;
    if (mt !== undefined) o.max_tokens = mt;
    return o;
  }

  // generate streams the assistant's reply to the current conversation.
  async function generate() {
    const conv = current;
    const model = els.model.value;
    const info = modelInfo[model] || { chat: true };
    const reply = { role: "assistant", content: "", model };
    conv.messages.push(reply);
    conv.updated = Date.now();
    const view = messageView(reply);
    view.setAttribute("aria-busy", "true");
    els.messages.appendChild(view);
    const ctrl = new AbortController();
    busy = ctrl;
    updateButtons();
    setStatus("Generating…");
    // A reply that failed before any text is not part of the conversation.
    const history = conv.messages.slice(0, -1).filter((m) => !(m.error && !m.content && !m.tool_calls));
    const system = els.system.value;
    let path, body;
    if (info.chat) {
      const msgs = [];
      if (system.trim()) msgs.push({ role: "system", content: system });
      for (const m of history) {
        const out = { role: m.role, content: m.content || "" };
        if (m.tool_calls && m.tool_calls.length) out.tool_calls = m.tool_calls;
        msgs.push(out);
      }
      path = "/v1/chat/completions";
      body = Object.assign({ model, messages: msgs, stream: true, stream_options: { include_usage: true } }, sampling());
    } else {
      // No chat template: the conversation is one document the model continues.
      path = "/v1/completions";
      const prompt = (system.trim() ? system + "\n" : "") + history.map((m) => m.content || "").join("");
      body = Object.assign({ model, prompt, stream: true, stream_options: { include_usage: true } }, sampling());
      if (body.max_tokens === undefined) body.max_tokens = 256;
    }
    const t0 = performance.now();
    let tFirst = 0, tLast = 0, chunks = 0, usage = null;
    let frame = 0;
    const redraw = () => {
      if (frame) return;
      frame = requestAnimationFrame(() => {
        frame = 0;
        messageView(reply, view);
        view.setAttribute("aria-busy", "true");
        els.messages.scrollTop = els.messages.scrollHeight;
      });
    };
    try {
      const resp = await api(path, { method: "POST", body: JSON.stringify(body), signal: ctrl.signal });
      for await (const ev of sse(resp)) {
        if (ev.error) throw new Error(ev.error.message || String(ev.error));
        if (ev.usage) usage = ev.usage;
        const ch = ev.choices && ev.choices[0];
        if (!ch) continue;
        let piece = false;
        if (info.chat) {
          const d = ch.delta || {};
          if (d.content) { reply.content += d.content; piece = true; }
          const r = d.reasoning_content || d.reasoning;
          if (r) { reply.reasoning = (reply.reasoning || "") + r; piece = true; }
          for (const tc of d.tool_calls || []) {
            reply.tool_calls = reply.tool_calls || [];
            const k = tc.index || 0;
            const t = reply.tool_calls[k] || (reply.tool_calls[k] = { id: "", type: "function", function: { name: "", arguments: "" } });
            if (tc.id) t.id = tc.id;
            if (tc.function && tc.function.name) t.function.name += tc.function.name;
            if (tc.function && tc.function.arguments) t.function.arguments += tc.function.arguments;
            piece = true;
          }
        } else if (ch.text) {
          reply.content += ch.text;
          piece = true;
        }
        if (ch.finish_reason) reply.finish = ch.finish_reason;
        if (piece) {
          chunks++;
          tLast = performance.now();
          if (!tFirst) tFirst = tLast;
          redraw();
        }
      }
    } catch (e) {
      if (ctrl.signal.aborted) {
        reply.stopped = true;
      } else {
        reply.error = e.message;
      }
    }
    if (frame) cancelAnimationFrame(frame);
    frame = 0;
    const tokens = usage && usage.completion_tokens ? usage.completion_tokens : chunks;
    reply.stats = { tokens };
    if (tFirst) {
      reply.stats.ttft_ms = tFirst - t0;
      // The decode rate: the tokens after the first over the time they took
      // to arrive. A short reply can arrive in one burst (the network
      // coalesces events); then the rate over the whole request, a lower
      // bound, is what can honestly be told.
      if (tokens > 1 && tLast - tFirst >= 20) {
        reply.stats.tokens_per_s = (tokens - 1) / ((tLast - tFirst) / 1000);
      } else if (tLast > t0) {
        reply.stats.tokens_per_s = tokens / ((tLast - t0) / 1000);
      }
    }
    busy = null;
    messageView(reply, view);
    view.removeAttribute("aria-busy");
    saveConversations();
    renderConversations();
    updateButtons();
    setStatus(reply.error ? "Error: " + reply.error : reply.stopped ? "Stopped." : "Done" + (reply.stats.tokens_per_s ? ": " + reply.stats.tokens_per_s.toFixed(1) + " tokens/s." : "."));
  }

  function send() {
    const text = els.input.value;
    if (!els.model.value && !busy) {
      loadModels(); // the list failed (no key given, server down): try again
      return;
    }
    if (busy || !text.trim()) return;
    if (!current) newConversation();
    if (!current.messages.length || current.title === "New conversation") current.title = text.trim().slice(0, 48);
    current.model = els.model.value;
    current.messages.push({ role: "user", content: text });
    els.input.value = "";
    els.messages.appendChild(messageView(current.messages[current.messages.length - 1]));
    saveConversations();
    saveSettings();
    renderConversations();
    generate();
  }

  function regenerate() {
    if (busy || !current) return;
    while (current.messages.length && current.messages[current.messages.length - 1].role !== "user") current.messages.pop();
    if (!current.messages.length) return;
    renderMessages();
    generate();
  }

  function stop() {
    if (busy) busy.abort();
  }

  // ---- fill in the middle ----
  async function fim() {
    if (busy) return;
    const model = els.model.value;
    const ctrl = new AbortController();
    busy = ctrl;
    updateButtons();
    const code = els.fimOut.firstElementChild;
    code.textContent = "";
    const pre = document.createElement("span"), mid = document.createElement("mark"), suf = document.createElement("span");
    pre.className = "fim-prefix";
    suf.className = "fim-suffix";
    pre.textContent = els.fimPrefix.value;
    suf.textContent = els.fimSuffix.value;
    code.append(pre, mid, suf);
    setStatus("Filling…");
    const body = { model, input_prefix: els.fimPrefix.value, input_suffix: els.fimSuffix.value, stream: true };
    const n = num(els.fimMax, true);
    if (n !== undefined) body.n_predict = n;
    Object.assign(body, (({ temperature, top_p }) => ({ temperature, top_p }))(sampling()));
    const t0 = performance.now();
    let tFirst = 0, pieces = 0;
    try {
      const resp = await api("/infill", { method: "POST", body: JSON.stringify(body), signal: ctrl.signal });
      for await (const ev of sse(resp)) {
        if (ev.error) throw new Error(ev.error.message || String(ev.error));
        if (ev.content) {
          if (!tFirst) tFirst = performance.now();
          pieces++;
          mid.textContent += ev.content;
        }
        if (ev.stop) break;
      }
      setStatus("Filled: " + pieces + " pieces" + (tFirst ? ", first token " + Math.round(tFirst - t0) + " ms." : "."));
    } catch (e) {
      setStatus(ctrl.signal.aborted ? "Stopped." : "Error: " + e.message);
    }
    busy = null;
    updateButtons();
  }

  // ---- tabs ----
  function selectTab(tab) {
    for (const t of [els.tabChat, els.tabFim]) {
      const on = t === tab;
      t.setAttribute("aria-selected", String(on));
      t.tabIndex = on ? 0 : -1;
      $(t.getAttribute("aria-controls")).hidden = !on;
    }
  }

  // ---- wiring ----
  els.system.value = settings.system;
  els.temperature.value = settings.temperature;
  els.topP.value = settings.top_p;
  els.maxTokens.value = settings.max_tokens;
  for (const [el, k] of [[els.system, "system"], [els.temperature, "temperature"], [els.topP, "top_p"], [els.maxTokens, "max_tokens"]]) {
    el.addEventListener("change", () => { settings[k] = el.value; saveSettings(); });
  }
  els.model.addEventListener("change", describeModel);
  els.composer.addEventListener("submit", (ev) => { ev.preventDefault(); send(); });
  els.input.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      send();
    }
  });
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape" && busy && !els.keyDialog.open) stop();
  });
  els.stop.addEventListener("click", stop);
  els.fimStop.addEventListener("click", stop);
  els.regenerate.addEventListener("click", regenerate);
  els.newChat.addEventListener("click", () => { if (!busy) newConversation(); });
  els.fimRun.addEventListener("click", fim);
  for (const t of [els.tabChat, els.tabFim]) {
    t.addEventListener("click", () => selectTab(t));
    t.addEventListener("keydown", (ev) => {
      if (ev.key === "ArrowRight" || ev.key === "ArrowLeft") {
        const other = t === els.tabChat ? els.tabFim : els.tabChat;
        if (!other.disabled) {
          selectTab(other);
          other.focus();
        }
      }
    });
  }

  renderAll();
  loadModels();
})();
