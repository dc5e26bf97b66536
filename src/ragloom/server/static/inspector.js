// ragloom inspector: a page over the sidecar's own JSON API (/stats, /query, /documents).
// No framework and no build step; every piece of indexed text is inserted as text, never HTML.
"use strict";

const TOKEN_KEY = "ragloom-token";
const STAGE_NAMES = {
  embed: "query embedding",
  lexical: "lexical leg",
  dense: "dense leg",
  fusion: "fusion and controls",
  rerank: "rerank",
  hydrate: "hydration",
  other: "other",
};

const $ = (id) => document.getElementById(id);

class ApiError extends Error {
  constructor(status, message, code, hint) {
    super(message);
    this.status = status;
    this.code = code;
    this.hint = hint;
  }
}

// The error envelope, in either shape the server has used:
// {"ok": false, "error": "<message>", "code": "...", "hint": "..."} or
// {"ok": false, "error": {"code": "...", "message": "...", "hint": "..."}}.
function readError(status, payload) {
  if (payload && typeof payload.error === "string") {
    return new ApiError(status, payload.error, payload.code || "error", payload.hint || null);
  }
  if (payload && payload.error && typeof payload.error === "object") {
    const e = payload.error;
    return new ApiError(status, e.message || "request failed", e.code || "error", e.hint || null);
  }
  return new ApiError(status, `HTTP ${status}`, "http_error", null);
}

function token() {
  return sessionStorage.getItem(TOKEN_KEY) || "";
}

async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (token()) headers.Authorization = `Bearer ${token()}`;
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let payload = null;
  try {
    payload = await response.json();
  } catch (_) {
    payload = null;
  }
  if (!response.ok || !payload || payload.ok === false) throw readError(response.status, payload);
  return payload;
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function fmt(value, digits = 4) {
  return typeof value === "number" ? value.toFixed(digits) : value === null ? "-" : String(value);
}

function showMessage(text, hint, isError) {
  const box = $("message");
  box.replaceChildren(el("div", { text }));
  if (hint) box.append(el("div", { class: "hint", text: hint }));
  box.className = isError ? "message error" : "message";
  box.hidden = false;
}

function showError(error) {
  if (error instanceof ApiError) {
    let hint = error.hint;
    if (error.status === 401) hint = hint || "Enter the server's bearer token above.";
    showMessage(`${error.message} (${error.code}, HTTP ${error.status})`, hint, true);
  } else {
    showMessage(String(error.message || error), null, true);
  }
}

function clearMessage() {
  $("message").hidden = true;
}

// Where a chunk lies in its file: "p. 3", "pp. 3-4", "slide 2", "cell 5" (as ragloom.types.place_of).
function placeOf(metadata) {
  const m = metadata || {};
  const isInt = (v) => Number.isInteger(v);
  if (Array.isArray(m.pages) && m.pages.length > 1 && m.pages.every(isInt)) {
    return `pp. ${Math.min(...m.pages)}-${Math.max(...m.pages)}`;
  }
  if (isInt(m.page)) return `p. ${m.page}`;
  if (isInt(m.slide)) return `slide ${m.slide}`;
  if (isInt(m.cell)) return `cell ${m.cell}`;
  return "";
}

// Text with [start, end) ranges wrapped in <mark class=...> (ranges sorted, non-overlapping).
function marked(text, ranges, className) {
  const out = document.createDocumentFragment();
  let at = 0;
  for (const [start, end] of ranges) {
    if (start < at || end <= start) continue;
    out.append(document.createTextNode(text.slice(at, start)));
    const mark = el("mark", className ? { class: className } : {});
    mark.textContent = text.slice(start, end);
    out.append(mark);
    at = end;
  }
  out.append(document.createTextNode(text.slice(at)));
  return out;
}

// ---------------------------------------------------------------- index stats
let statsCache = null;

async function loadStats() {
  let stats;
  try {
    stats = await api("GET", "/stats");
  } catch (error) {
    showError(error);
    return;
  }
  statsCache = stats;
  $("stats-path").textContent = `${stats.path}: ${stats.documents} documents, ${stats.chunks} chunks`;
  const body = $("stats-table").querySelector("tbody");
  body.replaceChildren();
  const select = $("collection");
  const chosen = select.value;
  select.replaceChildren();
  const names = Object.keys(stats.collections);
  for (const name of names) {
    const c = stats.collections[name];
    const pending = c.pending || 0;
    body.append(
      el("tr", { "data-collection": name },
        el("td", { text: name }),
        el("td", { text: c.documents }),
        el("td", { text: c.chunks }),
        el("td", { text: c.vectors }),
        el("td", { class: pending ? "pending nonzero" : "pending", text: pending }),
        el("td", { text: c.terms }),
        el("td", { text: c.embedding ? c.embedding.model : "none (lexical)" })));
    select.append(el("option", { value: name, text: name }));
  }
  if (!names.length) select.append(el("option", { value: "", text: "(empty index)" }));
  if (names.includes(chosen)) select.value = chosen;
}

// ---------------------------------------------------------------- search
function numberOrNull(id) {
  const raw = $(id).value.trim();
  return raw === "" ? null : Number(raw);
}

function buildRequest() {
  const request = {
    query: $("query").value,
    top_k: numberOrNull("top-k") || 5,
    explain: true,
    tokens: true,
  };
  const collection = $("collection").value;
  if (collection) request.collection = collection;
  for (const [id, key] of [["mode", "mode"], ["fusion", "fusion"], ["normalization", "normalization"]]) {
    if ($(id).value) request[key] = $(id).value;
  }
  const rrfK = numberOrNull("rrf-k");
  if (rrfK !== null) request.rrf_k = rrfK;
  const candidates = numberOrNull("candidates");
  if (candidates !== null) request.candidates = candidates;
  const weights = {};
  const lexical = numberOrNull("w-lexical");
  const dense = numberOrNull("w-dense");
  if (lexical !== null) weights.lexical = lexical;
  if (dense !== null) weights.dense = dense;
  if (Object.keys(weights).length) request.weights = weights;
  const filter = $("filter").value.trim();
  if (filter) {
    try {
      request.filters = JSON.parse(filter);
    } catch (error) {
      throw new Error(`the filter is not valid JSON: ${error.message}`);
    }
  }
  return request;
}

// A form's request from the page's controls, or null after saying why there is none.
function startRequest(event) {
  if (event) event.preventDefault();
  clearMessage();
  try {
    return buildRequest();
  } catch (error) {
    showError(error);
    return null;
  }
}

async function runSearch(event) {
  const request = startRequest(event);
  if (!request) return;
  $("search-button").disabled = true;
  try {
    const answer = await api("POST", "/query", request);
    renderAnswer(answer, request);
  } catch (error) {
    $("hits").replaceChildren();
    $("summary").hidden = true;
    $("timings").hidden = true;
    showError(error);
  } finally {
    $("search-button").disabled = false;
  }
}

function renderAnswer(answer, request) {
  const summary = $("summary");
  summary.replaceChildren(
    `${answer.results.length} hit(s), mode ${answer.mode || "-"}` +
      (request.filters ? ", filtered" : "") +
      (answer.timings ? `, ${fmt(answer.timings.total, 1)} ms` : ""));
  if (answer.degraded) {
    summary.append(" ", el("span", { class: "degraded", text: `degraded: ${answer.reason}` }));
  }
  summary.hidden = false;
  renderTimings(answer.timings);
  const list = $("hits");
  list.replaceChildren(...answer.results.map(renderHit));
  if (!answer.results.length) showMessage("No hits.", "Try another query, mode or filter.", false);
}

function renderTimings(timings) {
  const box = $("timings");
  if (!timings) {
    box.hidden = true;
    return;
  }
  const stages = Object.keys(timings).filter((k) => k !== "total");
  const sum = stages.reduce((total, k) => total + timings[k], 0) || 1;
  const bar = el("div", { class: "timing-bar", title: "time per search stage" });
  const legend = el("div", { class: "timing-legend" });
  for (const stage of stages) {
    const part = el("span", { class: `stage-${stage}`, title: `${STAGE_NAMES[stage] || stage}` });
    part.style.width = `${(100 * timings[stage]) / sum}%`;
    bar.append(part);
    legend.append(
      el("span", { "data-stage": stage },
        el("i", { class: `stage-${stage}` }),
        `${STAGE_NAMES[stage] || stage} ${fmt(timings[stage], 2)} ms`));
  }
  box.replaceChildren(bar, legend);
  box.hidden = false;
}

function renderHit(hit) {
  const highlights = hit.explain && hit.explain.highlights ? hit.explain.highlights : [];
  const card = el("li", { class: "hit", "data-chunk-id": hit.chunk_id });
  const title = hit.title || hit.document_id;
  card.append(
    el("div", { class: "hit-head" },
      el("span", { class: "rank", text: `#${hit.rank}` }),
      el("span", { class: "score", text: `score ${fmt(hit.score)}` }),
      el("span", { class: `badge ${hit.match}`, text: hit.match }),
      ...(hit.pending ? [el("span", { class: "badge pending", text: "vector pending" })] : []),
      el("span", { class: "hit-title", text: title }),
      el("span", {
        class: "where",
        text: `${hit.chunk_id}` + (placeOf(hit.metadata) ? ` · ${placeOf(hit.metadata)}` : "") +
          ` · chars ${hit.start}-${hit.end}` +
          (hit.source ? ` · ${hit.source}` : "") + (hit.tokens ? ` · ${hit.tokens} tokens` : ""),
      })));
  const text = el("p", { class: "hit-text" });
  text.append(marked(hit.text, highlights, null));
  card.append(text);
  const why = el("button", { type: "button", class: "why", "aria-expanded": "false" }, "Why this hit");
  const open = el("button", { type: "button", class: "open-document" }, "Show in document");
  card.append(el("div", { class: "actions" }, why, open));
  const explain = renderExplain(hit);
  explain.hidden = true;
  card.append(explain);
  why.addEventListener("click", () => {
    explain.hidden = !explain.hidden;
    why.setAttribute("aria-expanded", String(!explain.hidden));
  });
  open.addEventListener("click", () => showDocument(hit, card));
  return card;
}

function renderExplain(hit) {
  const box = el("dl", { class: "explain" });
  const add = (term, value) => box.append(el("dt", { text: term }), el("dd", { text: value }));
  const x = hit.explain;
  if (!x) {
    add("explanation", "not returned by the server");
    return box;
  }
  add("match", x.match);
  if (x.vector === "pending") add("vector", "pending: only the lexical leg can find it yet");
  const legs = x.legs || {};
  if (legs.lexical) add("lexical leg", `rank ${legs.lexical.rank}, BM25 ${fmt(legs.lexical.score)}`);
  else add("lexical leg", "not in its candidates");
  if (legs.dense) add("dense leg", `rank ${legs.dense.rank}, cosine ${fmt(legs.dense.cosine)}`);
  else add("dense leg", "not in its candidates");
  const f = x.fusion || {};
  const detail = [f.method];
  if (f.k !== undefined) detail.push(`k=${f.k}`);
  if (f.normalization) detail.push(f.normalization);
  if (f.weights !== undefined) {
    detail.push(`weights ${typeof f.weights === "string" ? f.weights : JSON.stringify(f.weights)}`);
  }
  add("fusion", `${detail.join(", ")} → ${fmt(f.score)}`);
  if (f.why && f.shares) {
    const why = f.why.probes
      ? `probes: lexical MRR ${f.why.probes.lexical_mrr}, dense MRR ${f.why.probes.dense_mrr}`
      : f.why.basis;
    add("weights chosen", `lexical share ${fmt(f.shares.lexical)}, dense share ${fmt(f.shares.dense)}; ${why}`);
  }
  if (f.metadata_score !== undefined) add("metadata fit", fmt(f.metadata_score));
  for (const boost of x.boosts || []) add("boost", `×${boost.factor} (${boost.rule})`);
  for (const note of x.diversity || []) add("diversity", note);
  if (x.matched_terms) add("matched terms", x.matched_terms.join(", ") || "none");
  add("final score", fmt(x.final_score));
  return box;
}

// ---------------------------------------------------------------- source document
async function showDocument(hit, card) {
  for (const other of document.querySelectorAll(".hit.selected")) other.classList.remove("selected");
  card.classList.add("selected");
  let doc;
  try {
    const segments = hit.document_id.split("/").map((s) =>
      s === "." || s === ".." ? s.replace(/\./g, "%2E") : encodeURIComponent(s));
    const path = `/documents/${segments.join("/")}`;
    doc = await api("GET", `${path}?collection=${encodeURIComponent(hit.collection)}`);
  } catch (error) {
    showError(error);
    return;
  }
  $("document-title").textContent = hit.title || hit.document_id;
  $("document-meta").textContent =
    `${hit.document_id} · ${hit.collection}` + (hit.source ? ` · ${hit.source}` : "") +
    ` · chunk ${hit.chunk_id}` + (placeOf(hit.metadata) ? `, ${placeOf(hit.metadata)}` : "") +
    `, chars ${hit.start}-${hit.end} of ${doc.text.length}`;
  const body = $("document-text");
  body.replaceChildren(marked(doc.text, [[hit.start, hit.end]], "span"));
  $("document").hidden = false;
  const span = body.querySelector("mark.span");
  if (span) span.scrollIntoView({ block: "center" });
}

// ---------------------------------------------------------------- wiring
function init() {
  $("token").value = token();
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $("token").value.trim());
    clearMessage();
    loadStats();
  });
  $("search-form").addEventListener("submit", runSearch);
  $("stats-refresh").addEventListener("click", loadStats);
  $("document-close").addEventListener("click", () => {
    $("document").hidden = true;
  });
  loadStats();
}

document.addEventListener("DOMContentLoaded", init);
