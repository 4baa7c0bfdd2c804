// markdown.js: a small Markdown renderer that never parses HTML.
//
// renderMarkdown(text) returns a DocumentFragment built with
// document.createElement and text nodes only: model output (or anything
// else) is never parsed as HTML, so "<script>" or "<img onerror=...>"
// in a reply shows as those characters. What it knows: fenced code blocks
// (``` or ~~~, with a language; an unclosed fence runs to the end, as a
// reply that is still streaming has), headings (#..######), block quotes
// (>), lists (-, *, + and 1.), horizontal rules, paragraphs; inline code,
// **bold**, *italic* / _italic_, ~~strike~~ and [links](http...). Links keep
// only http, https and mailto targets, open in a new tab without a
// referrer. Images are shown as links: an <img> would fetch from another
// host.
"use strict";

(function (global) {
  // block splits text into block tokens.
  function blocks(text) {
    const lines = text.replace(/\r\n?/g, "\n").split("\n");
    const out = [];
    let i = 0;
    let para = [];
    const flush = () => {
      if (para.length) out.push({ type: "p", text: para.join("\n") });
      para = [];
    };
    while (i < lines.length) {
      const line = lines[i];
      const fence = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)/.exec(line);
      if (fence) {
        flush();
        const mark = fence[1];
        const body = [];
        i++;
        const isClose = (l) => {
          const c = /^ {0,3}(`{3,}|~{3,})\s*$/.exec(l);
          return c !== null && c[1][0] === mark[0] && c[1].length >= mark.length;
        };
        while (i < lines.length && !isClose(lines[i])) {
          body.push(lines[i]);
          i++;
        }
        const closed = i < lines.length;
        i++; // the closing fence
        out.push({ type: "code", lang: fence[2] || "", text: body.join("\n"), closed });
        continue;
      }
      const h = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
      if (h) {
        flush();
        out.push({ type: "h", level: h[1].length, text: h[2] });
        i++;
        continue;
      }
      if (/^ {0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) {
        flush();
        out.push({ type: "hr" });
        i++;
        continue;
      }
      if (/^ {0,3}>/.test(line)) {
        flush();
        const q = [];
        while (i < lines.length && /^ {0,3}>/.test(lines[i])) {
          q.push(lines[i].replace(/^ {0,3}> ?/, ""));
          i++;
        }
        out.push({ type: "quote", text: q.join("\n") });
        continue;
      }
      const li = /^ {0,3}([-*+]|\d{1,9}[.)])\s+(.*)$/.exec(line);
      if (li) {
        flush();
        const ordered = /\d/.test(li[1]);
        const items = [];
        while (i < lines.length) {
          const m = /^ {0,3}([-*+]|\d{1,9}[.)])\s+(.*)$/.exec(lines[i]);
          if (m && /\d/.test(m[1]) === ordered) {
            items.push(m[2]);
          } else if (items.length && /^\s{2,}\S/.test(lines[i])) {
            items[items.length - 1] += "\n" + lines[i].trim();
          } else {
            break;
          }
          i++;
        }
        out.push({ type: ordered ? "ol" : "ul", items, start: ordered ? parseInt(li[1], 10) : 1 });
        continue;
      }
      if (line.trim() === "") {
        flush();
      } else {
        para.push(line);
      }
      i++;
    }
    flush();
    return out;
  }

  // safeHref returns url if it is an absolute http(s) or mailto link,
  // else "" (javascript:, data:, relative paths).
  function safeHref(url) {
    try {
      const u = new URL(url);
      if (u.protocol === "http:" || u.protocol === "https:" || u.protocol === "mailto:") {
        return u.href;
      }
    } catch (e) {
      // not a URL: shown as text
    }
    return "";
  }

  // inline appends text's inline Markdown to parent as DOM nodes.
  function inline(parent, text) {
    const doc = parent.ownerDocument;
    // One pass over the text: the earliest match of any inline form wins.
    const re = /(`+)([\s\S]*?[^`])\1(?!`)|\*\*([\s\S]+?)\*\*|__([\s\S]+?)__|~~([\s\S]+?)~~|\*([^\s*][\s\S]*?)\*|\b_([^\s_][\s\S]*?)_\b|(!?)\[([^\]\n]*)\]\(([^)\s]+)\)/g;
    let last = 0;
    let m;
    while ((m = re.exec(text)) !== null) {
      if (m.index > last) parent.appendChild(doc.createTextNode(text.slice(last, m.index)));
      last = re.lastIndex;
      if (m[1] !== undefined) {
        const c = doc.createElement("code");
        c.textContent = m[2].replace(/^ (.*) $/, "$1");
        parent.appendChild(c);
      } else if (m[3] !== undefined || m[4] !== undefined) {
        const b = doc.createElement("strong");
        inline(b, m[3] !== undefined ? m[3] : m[4]);
        parent.appendChild(b);
      } else if (m[5] !== undefined) {
        const s = doc.createElement("del");
        inline(s, m[5]);
        parent.appendChild(s);
      } else if (m[6] !== undefined || m[7] !== undefined) {
        const e = doc.createElement("em");
        inline(e, m[6] !== undefined ? m[6] : m[7]);
        parent.appendChild(e);
      } else {
        const href = safeHref(m[10]);
        const label = m[9] || m[10];
        if (!href) {
          parent.appendChild(doc.createTextNode(m[0]));
          continue;
        }
        const a = doc.createElement("a");
        a.href = href;
        a.rel = "noopener noreferrer";
        a.target = "_blank";
        if (m[8]) {
          a.textContent = "image: " + label; // never an <img>: no request to another host
        } else {
          inline(a, label);
        }
        parent.appendChild(a);
      }
    }
    if (last < text.length) parent.appendChild(doc.createTextNode(text.slice(last)));
  }

  // appendLines appends text whose single newlines become <br>.
  function inlineLines(parent, text) {
    const lines = text.split("\n");
    lines.forEach((l, k) => {
      if (k > 0) parent.appendChild(parent.ownerDocument.createElement("br"));
      inline(parent, l);
    });
  }

  // renderMarkdown returns text rendered as a DocumentFragment of doc
  // (default: the page's document).
  function renderMarkdown(text, doc) {
    doc = doc || global.document;
    const frag = doc.createDocumentFragment();
    for (const b of blocks(String(text || ""))) {
      let el;
      switch (b.type) {
        case "code": {
          el = doc.createElement("div");
          el.className = "codeblock";
          const bar = doc.createElement("div");
          bar.className = "codebar";
          const lang = doc.createElement("span");
          lang.textContent = b.lang || "code";
          const copy = doc.createElement("button");
          copy.type = "button";
          copy.className = "copy";
          copy.textContent = "Copy";
          copy.setAttribute("aria-label", "Copy " + (b.lang || "code") + " block");
          const body = b.text;
          copy.addEventListener("click", () => {
            if (global.navigator && navigator.clipboard) {
              navigator.clipboard.writeText(body).then(() => { copy.textContent = "Copied"; }, () => { copy.textContent = "Copy failed"; });
            } else {
              copy.textContent = "Copy needs https or localhost"; // the Clipboard API exists only in secure contexts
            }
          });
          bar.append(lang, copy);
          const pre = doc.createElement("pre");
          const code = doc.createElement("code");
          if (b.lang) code.className = "language-" + b.lang.replace(/[^\w+#.-]/g, "");
          code.textContent = b.text;
          pre.appendChild(code);
          pre.tabIndex = 0; // a wide block scrolls with the keyboard
          el.append(bar, pre);
          break;
        }
        case "h":
          el = doc.createElement("h" + Math.min(6, b.level + 2)); // the page's own h1/h2 stay on top
          el.className = "md-h" + b.level;
          inline(el, b.text);
          break;
        case "hr":
          el = doc.createElement("hr");
          break;
        case "quote":
          el = doc.createElement("blockquote");
          el.appendChild(renderMarkdown(b.text, doc));
          break;
        case "ul":
        case "ol":
          el = doc.createElement(b.type);
          if (b.type === "ol" && b.start !== 1) el.start = b.start;
          for (const it of b.items) {
            const li = doc.createElement("li");
            inlineLines(li, it);
            el.appendChild(li);
          }
          break;
        default:
          el = doc.createElement("p");
          inlineLines(el, b.text);
      }
      frag.appendChild(el);
    }
    return frag;
  }

  global.renderMarkdown = renderMarkdown;
})(typeof window !== "undefined" ? window : globalThis);
