"""The pages' own CSS and JavaScript, served from ``/static/`` (no CDN, no build step).

The script follows the page's live feed (``data-live`` on ``<body>``: an EventSource URL)
and puts what the server sends into the page: a board fragment replaces the board, a run
event is appended to its session (through the run page's ``ggAppendEvent`` when present).
What arrives is HTML the server escaped; every path that puts HTML in the page (the
board, a run's events, its summary, the run page's ``ggAppendEvent`` and
``ggReplaceSessions``) still goes through the one sanitising parse, :data:`SAFE_JS`'s
``ggSafeNodes``: parsed in a detached document, script-capable elements dropped, every
``on*`` attribute and every ``javascript:``/``data:``/``vbscript:`` URL removed, before
any node is moved in; every other text is set with ``textContent`` (issue 15 item 3).
"""

from __future__ import annotations

__all__ = ["APP_CSS", "APP_JS", "SAFE_JS"]

APP_CSS = """
:root{--fg:#1d2330;--muted:#667085;--line:#d0d5dd;--bg:#f6f7f9;--card:#fff;
--ok:#12805c;--bad:#b42318;--warn:#b54708;--accent:#175cd3}
*{box-sizing:border-box}
body{margin:0;font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);
background:var(--bg)}
header.top{display:flex;gap:1em;align-items:baseline;padding:.6em 1em;background:#101828;
color:#fff}
header.top a{color:#fff;text-decoration:none;font-weight:600}
header.top .ws{color:#d0d5dd;font-family:monospace;overflow-wrap:anywhere}
#live{margin-left:auto;font-size:12px;padding:1px 8px;border-radius:9px;background:#475467}
#live.on{background:var(--ok)}
main{padding:1em}
h1{font-size:18px;margin:.2em 0 .6em}
.board{display:grid;grid-template-columns:repeat(6,minmax(170px,1fr));gap:10px;
align-items:start}
.column{background:#eaecf0;border-radius:8px;padding:6px;min-height:80px}
.column h2{font-size:13px;text-transform:uppercase;letter-spacing:.04em;margin:4px 4px 8px;
color:#344054}
.column .count{float:right;color:var(--muted)}
.board .card{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:8px;
margin-bottom:8px;overflow-wrap:anywhere}
.board .card h3{font-size:14px;margin:0 0 4px}
.board .card .meta{color:var(--muted);margin:0 0 4px;font-size:12px}
.board .card .body,.board .card .summary{margin:4px 0;white-space:pre-wrap}
.board .card .summary{border-left:3px solid var(--accent);padding-left:6px}
.board .round summary{cursor:pointer;font-weight:600;font-size:12px}
.board .verdict{margin:4px 0;padding:4px 6px;border-radius:4px;background:#f2f4f7}
.board .verdict.v-approve{background:#ecfdf3;color:var(--ok)}
.board .verdict.v-request_changes{background:#fffaeb;color:var(--warn)}
.board .verdict .items{margin:2px 0 0 0;padding-left:18px;color:var(--fg)}
.board .sessions{list-style:none;padding:0;margin:4px 0;font-size:12px;color:#475467}
.board .sess.st-stopped,.board .sess.st-abandoned{color:var(--bad)}
.board .sess.st-running{color:var(--accent);font-weight:600}
.board .result{margin:6px 0 0;font-weight:600}
.board .result.merged{color:var(--ok)}
.board .diag,.board .result.diag{color:var(--bad);white-space:pre-wrap}
table.runs{border-collapse:collapse;width:100%;background:var(--card);margin-top:.5em}
table.runs th,table.runs td{border-bottom:1px solid var(--line);padding:4px 8px;
text-align:left;font-size:13px}
table.runs td.id{font-family:monospace}
table.runs .st-ended{color:var(--ok)} table.runs .st-stopped{color:var(--bad)}
table.runs .st-unended{color:var(--warn)}
table.runs .seal{font-weight:600;color:var(--bad)}
table.runs .seal-intact,table.runs .seal-running{color:var(--ok)}
table.runs .seal-unended{color:var(--warn)}
.note{color:var(--muted)} .error{color:var(--bad);white-space:pre-wrap}
"""

SAFE_JS = r"""
(function () {
  "use strict";
  if (typeof window.ggSafeNodes === "function") { return; }
  var DROP = "script,iframe,frame,frameset,object,embed,applet,base,meta,link,style," +
    "template,noscript,form,portal,animate,set,animateMotion,animateTransform,foreignObject";
  var URLISH = /^(href|src|action|formaction|xlink:href|poster|background|data|srcset|ping)$/i;
  var BADURL = /^(javascript|vbscript|data):/i;
  /* The one way HTML from the server becomes nodes of the page: nothing in it can run. */
  window.ggSafeNodes = function (html) {
    var doc = new DOMParser().parseFromString("<!doctype html><body>" + html, "text/html");
    Array.prototype.forEach.call(doc.querySelectorAll(DROP), function (el) { el.remove(); });
    Array.prototype.forEach.call(doc.body.querySelectorAll("*"), function (el) {
      Array.prototype.slice.call(el.attributes).forEach(function (a) {
        var value = a.value.replace(/[\u0000-\u0020\u007f-\u00a0]+/g, "");
        if (/^on/i.test(a.name) || /^srcdoc$/i.test(a.name) ||
            (URLISH.test(a.name) && BADURL.test(value))) {
          el.removeAttribute(a.name);
        }
      });
    });
    return Array.prototype.slice.call(doc.body.childNodes);
  };
})();
"""
"""``window.ggSafeNodes(html)``: the pages' one sanitising parse (both scripts carry it)."""

APP_JS = (
    SAFE_JS
    + r"""
(function () {
  "use strict";
  var body = document.body;
  var url = body.getAttribute("data-live");
  var badge = document.getElementById("live");
  var seen = { events: 0, boards: 0 };
  window.ggLive = seen;
  function say(text, on) {
    if (!badge) { return; }
    badge.textContent = text;
    badge.className = on ? "on" : "";
  }
  function fragment(html) { return window.ggSafeNodes(html); }
  function replaceBoard(html) {
    var target = document.getElementById("board-live");
    if (!target) { return; }
    var nodes = fragment(html);
    target.replaceChildren.apply(target, nodes);
    seen.boards += 1;
    document.dispatchEvent(new CustomEvent("gg:board"));
  }
  function containerFor(sid) {
    var sel = '[data-events-of="' + CSS.escape(sid) + '"]';
    return document.querySelector(sel) || document.getElementById("run-events");
  }
  function place(html, id) {
    if (id) { body.setAttribute("data-last-line", id); }
    if (typeof window.ggAppendEvent === "function") {
      var added = window.ggAppendEvent(html);
      if (added) { document.dispatchEvent(new CustomEvent("gg:event", { detail: added })); }
    } else {
      append(html);
    }
    seen.events += 1;
  }
  function append(html) {
    fragment(html).forEach(function (node) {
      if (node.nodeType !== 1) { return; }
      var box = containerFor(node.getAttribute("data-session") || "");
      if (box) { box.appendChild(node); }
      document.dispatchEvent(new CustomEvent("gg:event", { detail: node }));
    });
  }
  function verdict(text) {
    var line = document.querySelector(".run-head .verdict");
    if (!line) { return; }
    line.textContent = text;
    var kind = /^stream intact but/.test(text) ? "warn" :
      /^stream intact/.test(text) ? "ok" : "bad";
    line.className = "verdict " + kind;
  }
  function summary(html) {
    var box = document.createElement("div");
    fragment(html).forEach(function (node) { box.appendChild(node); });
    [".run-head", "section.sessions", "section.charts"].forEach(function (sel) {
      var fresh = box.querySelector(".gg-run > " + sel);
      var old = document.querySelector(".gg-run > " + sel);
      if (fresh && old) { old.replaceWith(fresh); }
    });
    seen.summaries = (seen.summaries || 0) + 1;
  }
  if (!url || !window.EventSource) { return; }
  var source = new EventSource(url);
  source.onopen = function () { say("live", true); };
  source.onerror = function () { say("reconnecting", false); };
  source.addEventListener("board", function (m) { replaceBoard(m.data); });
  source.addEventListener("event", function (m) { place(m.data, m.lastEventId); });
  source.addEventListener("summary", function (m) { summary(m.data); });
  source.addEventListener("verdict", function (m) { verdict(m.data); });
  source.addEventListener("end", function () { source.close(); say("run over", false); });
})();
"""
)
