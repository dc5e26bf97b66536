// The inspector's Ask box: POST /ask with "stream": true, the answer's text shown as it
// arrives (server-sent events read from the fetch body), then its sources, each [n] of the
// answer a link to the passage it cites. Uses inspector.js's helpers ($, el, api's headers).
"use strict";

// One server-sent event block ("event: x\ndata: {...}") as {name, data}.
function parseEvent(block) {
  let name = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (line.startsWith("event:")) name = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).trim());
  }
  return { name, data: data.length ? JSON.parse(data.join("\n")) : null };
}

// The answer's text with each [n] (or [n, m]) a link to passage n of the list below.
function citedText(text, numbers) {
  const out = document.createDocumentFragment();
  const marker = /\[(\d+(?:\s*,\s*\d+)*)\]/g;
  let at = 0;
  for (const match of text.matchAll(marker)) {
    out.append(document.createTextNode(text.slice(at, match.index)));
    out.append("[");
    match[1].split(",").map((n) => Number(n.trim())).forEach((n, i) => {
      if (i) out.append(", ");
      const link = el("a", { class: "cite", href: `#passage-${n}`, "data-n": String(n) }, String(n));
      if (!numbers.has(n)) link.className = "cite unknown";
      link.addEventListener("click", (event) => {
        event.preventDefault();
        const item = $(`passage-${n}`);
        if (!item) return;
        item.classList.add("flash");
        item.scrollIntoView({ block: "nearest" });
        setTimeout(() => item.classList.remove("flash"), 1200);
      });
      out.append(link);
    });
    out.append("]");
    at = match.index + match[0].length;
  }
  out.append(document.createTextNode(text.slice(at)));
  return out;
}

function passagePlace(p) {
  const parts = [p.source || p.document_id];
  if (p.place) parts.push(p.place);
  if (p.title) parts.push(p.title);
  if (p.section) parts.push(p.section);
  parts.push(`chars ${p.start}-${p.end}`);
  return parts.join(" · ");
}

function renderAskResult(result) {
  const cited = new Set(result.citations.map((c) => c.n));
  const status = $("answer-status");
  status.replaceChildren();
  const notes = [];
  if (result.abstained) notes.push(el("span", { class: "abstained", text: "not covered by the material" }));
  if (result.degraded) notes.push(el("span", { class: "degraded", text: `degraded: ${result.reason}` }));
  if (result.invalid_citations.length) {
    const numbers = result.invalid_citations.map((n) => `[${n}]`).join(", ");
    notes.push(el("span", { class: "invalid", text: `cited no passage given: ${numbers} (taken out)` }));
  }
  const took = result.timings && result.timings.total ? `${fmt(result.timings.total, 0)} ms` : "";
  status.append(`${result.model || "no model"} · ${result.rounds} tool round(s) · ${took}`);
  for (const note of notes) status.append(" · ", note);
  $("answer").replaceChildren(citedText(result.answer, cited));
  const shown = result.passages.filter((p) => cited.has(p.number));
  const list = $("answer-sources");
  list.replaceChildren(...(shown.length ? shown : result.passages).map((p) => {
    const item = el("li", { id: `passage-${p.number}`, class: cited.has(p.number) ? "cited" : "" },
      el("span", { class: "number", text: `[${p.number}]` }),
      el("span", { class: "where", text: passagePlace(p) }));
    const open = el("button", { type: "button", class: "open-document" }, "Show in document");
    open.addEventListener("click", () => showDocument(
      { ...p, chunk_id: (p.chunk_ids && p.chunk_ids[0]) || p.document_id }, item));
    item.append(el("p", { class: "snippet", text: p.text }), open);
    return item;
  }));
}

async function runAsk(event) {
  const request = startRequest(event);
  if (!request) return;
  delete request.query;
  delete request.explain;
  delete request.tokens;
  request.question = $("ask-question").value;
  request.stream = true;
  const headers = { Accept: "text/event-stream", "Content-Type": "application/json" };
  if (token()) headers.Authorization = `Bearer ${token()}`;
  const answer = $("answer");
  answer.replaceChildren();
  $("answer-sources").replaceChildren();
  $("answer-status").textContent = "answering…";
  $("answer-box").hidden = false;
  $("ask-button").disabled = true;
  try {
    const response = await fetch("/ask", { method: "POST", headers, body: JSON.stringify(request) });
    if (!response.ok) {
      let payload = null;
      try { payload = await response.json(); } catch (_) { payload = null; }
      throw readError(response.status, payload);
    }
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = parseEvent(buffer.slice(0, cut));
        buffer = buffer.slice(cut + 2);
        if (block.name === "text") answer.append(document.createTextNode(block.data.text));
        else if (block.name === "done") renderAskResult(block.data);
        else if (block.name === "error") throw readError(502, block.data);
      }
    }
  } catch (error) {
    $("answer-status").textContent = "failed";
    showError(error);
  } finally {
    $("ask-button").disabled = false;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("ask-form").addEventListener("submit", runAsk);
});
