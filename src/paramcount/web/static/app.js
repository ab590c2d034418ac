/* paramcount's page: picks a source, asks the local JSON API, draws what it answers.
   Nothing here counts; every figure on the page is the library's, via /api/*. */
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const C = window.Charts;
  const LABELS = {
    embeddings: "embeddings", attention: "attention", recurrent: "recurrent (SSM, linear attn.)",
    feed_forward: "feed-forward", experts: "experts",
    router: "router", norms: "norms", output_head: "output head", pooler: "pooler", other: "other",
  };
  const DEFAULT_MODEL = "google-bert/bert-base-chinese";
  const MAX_HEADER = 32 * 1024 * 1024; // the server's bound on header bytes

  const state = {
    source: { kind: "catalog", name: DEFAULT_MODEL },
    modelClass: "auto",
    numLabels: null,
    overrides: [],
    gguf: false, // the model is a GGUF file: Ollama's runtime is offered
    lang: "en",
    derive: "backbone",
    model: null,
    catalog: [],
    options: null,
    mem: {
      mode: "inference", scheme: "bf16", kv_dtype: "", optimizer: "adamw", recompute: "", // "": the library's default (full for LoRA, as peft/TRL recipes)
      lora_rank: 8, lora_targets: "", context: null, batch: 1, gpu: "rtx4090",
      schemes: { inference: "bf16", training: "mixed", lora: "qlora" }, // each mode keeps its own choice
      // null: the model's default runtime (llama.cpp for a GGUF file), which the plan names
      runtime: null, shown: "transformers", tp: 1, utilization: 0.92, flash_attn: "auto",
      ngl: "", ncmoe: null, ts: "", ot: "", // llama.cpp's -ngl, --n-cpu-moe, -ts and one -ot value ("" and null: unset)
      num_gpu: null, free_vram: "", // Ollama's num_gpu (null: its estimate) and the GPU's free memory ("" : all)
      ram: "", // host RAM, like 64GB (the CLI's --ram; "": not checked)
      vllm_version: "latest", device: "gpu", kv_space: null, // vLLM's --vllm-version, --device, --kv-cache-space
      group_size: 64, kv_bits: null, // mlx-lm's --group-size (of mlx-Nbit weights) and --kv-bits
      cpu: "", // the host CPU for speed's layers in RAM (paramcount speed --cpu; "": none)
      prompt: 512, // paramcount speed's --prompt: prefill and TTFT (NaN: not a number, which the API names)
    },
  };
  let modelSeq = 0;
  let memorySeq = 0;
  let speedSeq = 0;

  /* ---- the API ------------------------------------------------------------------------- */

  async function api(path, body) {
    const init = body === undefined ? {} : {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
    };
    const res = await fetch(path, init);
    let data;
    try {
      data = await res.json();
    } catch (e) {
      data = { error: `${res.status} ${res.statusText}` };
    }
    if (!res.ok) {
      const err = new Error(data.error || res.statusText);
      err.field = data.field;
      throw err;
    }
    return data;
  }

  function showError(box, err) {
    box.hidden = false;
    box.textContent = err.message;
    if (err.field) {
      const f = document.createElement("span");
      f.className = "field";
      f.textContent = err.field;
      box.appendChild(f);
    }
  }

  function fmt(n) {
    return C.fmtInt(n);
  }

  function gb(bytes) {
    return (bytes / 1e9).toFixed(2);
  }

  function gib(bytes) {
    return (bytes / 2 ** 30).toFixed(2);
  }

  // The card's unit (GiB for GDDR, HBM and unified memory; GB for a size given in GB): every
  // figure of a plan is stated in it, one unit per table, as the command line states them.
  function unit() {
    const g = state.plan ? state.plan.gpu : gpuOption(state.mem.gpu);
    return (g && g.unit) || "GB";
  }

  function size(bytes, u) {
    return (u || unit()) === "GiB" ? gib(bytes) : gb(bytes);
  }

  function sized(bytes, u) {
    return `${size(bytes, u)} ${u || unit()}`;
  }

  function gpuOption(key) {
    return state.options ? state.options.gpus.find((g) => g.key === key) : null;
  }

  function text(tag, cls, content) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (content !== undefined) node.textContent = content;
    return node;
  }

  /* ---- the model ----------------------------------------------------------------------- */

  function modelQuery() {
    return {
      source: state.source,
      model_class: state.modelClass === "auto" ? null : state.modelClass,
      num_labels: state.numLabels,
      overrides: state.overrides,
    };
  }

  async function loadModel() {
    const seq = ++modelSeq;
    $("loading").hidden = false;
    try {
      const m = await api("/api/model", { ...modelQuery(), lang: state.lang, derive: state.derive });
      if (seq !== modelSeq) return;
      state.model = m;
      pickStored(Boolean(m.storage) || m.class_name === "GGUF"); // a GGUF by name (ollama:, org/repo:QUANT) too
      $("error").hidden = true;
      markStale(false);
      renderModel(m);
      planMemory();
    } catch (err) {
      if (seq === modelSeq) fail(err);
    } finally {
      if (seq === modelSeq) $("loading").hidden = true;
    }
  }

  // Any error about the input: said once, with no progress line left claiming work goes on, and
  // the previous model's results (if any) dimmed and labelled as not of this input.
  function fail(err) {
    showError($("error"), err);
    $("loading").hidden = true;
    if ($("file-status").dataset.progress === "true") $("file-status").textContent = "";
    $("file-status").dataset.progress = "false";
    markStale(Boolean(state.model));
  }

  // After an error the results on screen are the previous model's: dim them and say so.
  function markStale(stale) {
    for (const id of ["overview", "memory", "derivation", "tensors"]) $(id).classList.toggle("stale", stale);
    const note = $("stale-note");
    note.hidden = !stale;
    if (stale) note.textContent = `The results below are still those of ${state.model.name}, not of this input.`;
  }

  function renderModel(m) {
    $("model-name").textContent = m.name;
    $("model-type").textContent = m.model_type;
    $("model-source").textContent = m.source;
    const scope = $("scope");
    scope.innerHTML = "";
    for (const s of m.scope || []) scope.appendChild(text("li", "", `scope: ${s}`));
    scope.hidden = !scope.children.length;
    $("class-name").textContent = m.class_name;
    $("total").textContent = fmt(m.total);
    $("backbone-class").textContent = m.backbone_class;
    $("backbone-total").textContent = fmt(m.backbone_total);
    $("active-stat").hidden = m.active === m.total;
    $("active-total").textContent = fmt(m.active);
    $("ties-stat").hidden = m.total_with_ties === m.total;
    $("with-ties").textContent = fmt(m.total_with_ties);
    renderClasses(m);
    renderComponents(m);
    renderSide(m);
    C.sunburst($("sunburst"), m.tree, LABELS, m.total);
    C.legend($("legend"), m.components.filter((c) => c.count > 0).map((c) => c.kind), LABELS);
    renderDerivation(m);
    renderTree(m.tree);
  }

  function renderClasses(m) {
    const select = $("class");
    select.innerHTML = "";
    const auto = new Option(state.modelClass === "auto" ? `${m.class_name} (as given)` : "as given", "auto");
    select.add(auto);
    for (const c of m.classes) {
      select.add(new Option(c === "base" ? `base (the backbone, ${m.backbone_class})` : c, c));
    }
    select.value = m.classes.includes(state.modelClass) ? state.modelClass : "auto";
    select.disabled = !m.classes.length;
    const configured = ["catalog", "config"].includes(state.source.kind);
    $("num-labels").disabled = !configured;
    $("overrides").disabled = !configured;
  }

  // A composite model's parts (vision encoder, projector, language model…): a bar and a table.
  const TOWER_COLORS = {
    vision_encoder: "#7c9cbf", audio_encoder: "#b48ead", text_encoder: "#8fbcbb",
    projector: "#e0a458", language_model: "#4c72b0", other: "#b0b7c3",
  };

  function renderTowers(m) {
    const towers = m.towers || [];
    $("towers-part").hidden = !towers.length;
    const body = $("towers").tBodies[0];
    body.innerHTML = "";
    const svg = $("towerbar");
    svg.innerHTML = "";
    if (!towers.length) return;
    const W = 1000, H = 18;
    svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
    svg.setAttribute("preserveAspectRatio", "none");
    let x = 0;
    for (const t of towers) {
      const share = m.total ? t.count / m.total : 0;
      const colour = TOWER_COLORS[t.tower] || TOWER_COLORS.other;
      const rect = document.createElementNS("http://www.w3.org/2000/svg", "rect");
      Object.entries({ x, y: 0, width: Math.max(share * W, 0), height: H, fill: colour }).forEach(([k, v]) => rect.setAttribute(k, v));
      rect.setAttribute("data-tower", t.tower);
      svg.appendChild(rect);
      x += share * W;
      const tr = document.createElement("tr");
      tr.dataset.tower = t.tower;
      const name = text("td");
      const sw = text("span", "swatch");
      sw.style.background = colour;
      name.append(sw, t.label);
      tr.append(name, text("td", "", fmt(t.count)), text("td", "", (100 * share).toFixed(2) + "%"));
      body.appendChild(tr);
    }
  }

  function renderComponents(m) {
    renderTowers(m);
    const body = $("components").tBodies[0];
    body.innerHTML = "";
    for (const c of m.components) {
      const tr = document.createElement("tr");
      const name = text("td");
      const sw = text("span", "swatch");
      sw.style.background = C.KIND_COLORS[c.kind] || C.KIND_COLORS.other;
      name.append(sw, c.label);
      const share = m.total ? (100 * c.count) / m.total : 0;
      const shareCell = text("td", "", share.toFixed(2) + "%");
      const bar = text("span", "sharebar");
      const fill = text("b");
      fill.style.width = share + "%";
      fill.style.background = sw.style.background;
      bar.appendChild(fill);
      shareCell.appendChild(bar);
      const tied = c.count === 0 && c.kind === "output_head";
      tr.append(name, text("td", "", tied ? "0 (tied)" : fmt(c.count)), shareCell);
      body.appendChild(tr);
    }
    const tr = text("tr", "total");
    tr.append(text("td", "", "total"), text("td", "", fmt(m.total)), text("td", "", "100.00%"));
    body.appendChild(tr);
  }

  function renderSide(m) {
    const runs = $("layer-runs");
    runs.innerHTML = "";
    for (const g of m.layers) {
      const div = text("div", "sub");
      const last = g.first + g.copies - 1;
      div.append(text("span", "mono", `${g.path}.${g.first}–${last}`), `: ${g.copies} × ${fmt(g.each)} = ${fmt(g.total)}`);
      runs.appendChild(div);
    }
    for (const t of m.ties) {
      const div = text("div", "sub");
      div.append("tied: ", text("span", "mono", t.name), " is ", text("span", "mono", t.target),
        `; its ${fmt(t.count)} parameters are counted once`);
      runs.appendChild(div);
    }
    renderStorage(m.storage);
    const notes = $("notes");
    notes.innerHTML = "";
    for (const n of m.notes) notes.appendChild(text("li", "", n));
  }

  function renderStorage(s) {
    const box = $("storage");
    box.innerHTML = "";
    if (!s) return;
    box.appendChild(text("h3", "", "What the file stores"));
    const table = text("table", "nums");
    table.innerHTML = "<thead><tr><th>stored as</th><th>tensors</th><th>elements</th><th>bytes</th></tr></thead>";
    const body = document.createElement("tbody");
    for (const r of s.by_dtype) {
      const tr = document.createElement("tr");
      tr.append(text("td", "mono", r.name), text("td", "", fmt(r.tensors)), text("td", "", fmt(r.elements)), text("td", "", fmt(r.bytes)));
      body.appendChild(tr);
    }
    table.appendChild(body);
    box.appendChild(table);
    const line = [];
    if (s.quantization) line.push(s.quantization);
    if (s.header_bytes !== null && s.file_bytes !== null) {
      line.push(`a header of ${fmt(s.header_bytes)} bytes in a ${gb(s.file_bytes)} GB file`);
    }
    box.appendChild(text("div", "sub muted", line.join(" · ")));
  }

  /* ---- the derivation ------------------------------------------------------------------ */

  function pieces(parent, cell) {
    for (const p of cell) {
      if (p.t === "math") {
        const span = text("span", "math");
        if (window.katex) {
          window.katex.render(p.v, span, { throwOnError: false });
        } else {
          span.textContent = p.text;
        }
        parent.appendChild(span);
      } else if (p.t === "code") {
        parent.appendChild(text("code", "", p.v));
      } else if (p.t === "mark") {
        parent.appendChild(text("span", "mark", p.v));
      } else {
        parent.appendChild(document.createTextNode(p.v));
      }
    }
  }

  function renderDerivation(m) {
    const body = $("derivation-body");
    body.innerHTML = "";
    if (!m.derivation) {
      body.appendChild(text("p", "muted", m.derivation_error || "no derivation for this source"));
      return;
    }
    for (const b of m.derivation.blocks) body.appendChild(docBlock(b));
  }

  function docBlock(b) {
    if (b.kind === "table") return docTable(b);
    const tag = { title: "div", heading: "div", para: "p" }[b.kind] || "p";
    const node = text(tag, b.kind === "title" ? "d-title" : b.kind === "heading" ? "d-heading" : "");
    pieces(node, b.cells[0] || []);
    return node;
  }

  // The parameter column (the last right-aligned one) is marked: on a phone it stays in view,
  // pinned to the right edge, while the wider columns before it wrap or scroll under it.
  function docClass(b, i) {
    const count = b.right.length && i === Math.max(...b.right) ? " count" : "";
    return (b.right.includes(i) ? "r" : "") + count;
  }

  function docTable(b) {
    const table = document.createElement("table");
    const head = document.createElement("tr");
    b.cells.forEach((c, i) => {
      const th = text("th", docClass(b, i));
      pieces(th, c);
      head.appendChild(th);
    });
    table.appendChild(document.createElement("thead")).appendChild(head);
    const body = table.appendChild(document.createElement("tbody"));
    b.rows.forEach((row, r) => {
      const tr = text("tr", b.strong.includes(r) ? "strong" : "");
      for (let i = 0; i < b.cells.length; i++) {
        const td = text("td", docClass(b, i));
        pieces(td, row[i] || []);
        tr.appendChild(td);
      }
      body.appendChild(tr);
    });
    return table;
  }

  /* ---- the tensor tree ------------------------------------------------------------------ */

  function shapeText(node) {
    const nums = node.shape.map((d) => d.toLocaleString("en-US")).join(" × ");
    const syms = node.dims.join(" × ");
    return syms !== node.shape.join(" × ") ? `${syms} = ${nums}` : nums;
  }

  function row(node, depth) {
    const name = text("span", "nm");
    const dot = text("span", "dot");
    dot.style.background = C.KIND_COLORS[node.kind] || C.KIND_COLORS.other;
    name.append(dot, node.name);
    let shape = "";
    let count = fmt(node.count);
    if (node.type === "block" && node.repeat !== null && node.repeat !== undefined) {
      const last = node.start + node.repeat - 1;
      name.lastChild.textContent = `${node.name}.${node.start}–${last}`;
      name.appendChild(text("span", "rep", `× ${node.repeat}`));
      const each = node.repeat ? node.count / node.repeat : 0;
      count = `${fmt(each)} each = ${fmt(node.count)}`;
    } else if (node.type !== "block") {
      shape = shapeText(node);
    }
    if (node.type === "tie") count = `tied → ${node.tied_to}`;
    return [name, text("span", "shape", shape), text("span", node.type === "tie" ? "ct tied" : "ct", count)];
  }

  function treeNode(node, depth) {
    if (node.type !== "block") {
      const leaf = text("div", "leaf");
      leaf.style.setProperty("--depth", depth);
      leaf.append(...row(node, depth));
      return leaf;
    }
    const details = document.createElement("details");
    const summary = document.createElement("summary");
    summary.style.setProperty("--depth", depth);
    summary.append(...row(node, depth));
    details.appendChild(summary);
    let filled = false;
    const fill = () => {
      if (filled) return;
      filled = true;
      for (const child of node.children) details.appendChild(treeNode(child, depth + 1));
    };
    details.addEventListener("toggle", () => details.open && fill());
    details.fill = fill;
    return details;
  }

  function renderTree(tree) {
    const box = $("tree");
    box.innerHTML = "";
    const top = treeNode(tree, 0);
    box.appendChild(top);
    top.open = true;
    top.fill();
  }

  function setOpen(open, maxDepth) {
    const walk = (details, depth) => {
      if (open && depth < maxDepth) {
        details.fill();
        details.open = true;
      } else if (!open && depth > 0) {
        details.open = false;
      }
      for (const child of details.children) if (child.tagName === "DETAILS") walk(child, depth + 1);
    };
    const top = $("tree").firstChild;
    if (top) walk(top, 0);
  }

  /* ---- the catalog search ---------------------------------------------------------------- */

  function matches(query) {
    const words = query.toLowerCase().split(/\s+/).filter(Boolean);
    const scored = [];
    for (const e of state.catalog) {
      const names = [e.id, ...e.aliases].map((s) => s.toLowerCase());
      const hay = names.join(" ");
      if (!words.every((w) => hay.includes(w))) continue;
      const q = query.toLowerCase().trim();
      const score = names.includes(q) ? 0 : names.some((n) => n.startsWith(q) || n.split("/").pop().startsWith(q)) ? 1 : 2;
      scored.push([score, e]);
    }
    scored.sort((a, b) => a[0] - b[0] || a[1].id.localeCompare(b[1].id));
    return scored.slice(0, 14).map((s) => s[1]);
  }

  function showResults() {
    const list = $("results");
    const found = matches($("search").value);
    list.innerHTML = "";
    found.forEach((e, i) => {
      const li = document.createElement("li");
      li.setAttribute("role", "option");
      li.setAttribute("aria-selected", i === 0 ? "true" : "false");
      li.dataset.id = e.id;
      li.append(text("span", "id", e.id), text("span", "n", C.short(e.total)),
        text("span", "cls", `${e.class_name} · ${fmt(e.total)} · backbone ${fmt(e.backbone_total)}`));
      li.addEventListener("mousedown", (ev) => {
        ev.preventDefault();
        pick(e.id);
      });
      list.appendChild(li);
    });
    list.hidden = !found.length;
    $("search").setAttribute("aria-expanded", String(!list.hidden));
  }

  function moveSelection(step) {
    const items = [...$("results").children];
    if (!items.length) return;
    let i = items.findIndex((li) => li.getAttribute("aria-selected") === "true");
    i = (i + step + items.length) % items.length;
    items.forEach((li, k) => li.setAttribute("aria-selected", k === i ? "true" : "false"));
    items[i].scrollIntoView({ block: "nearest" });
  }

  function pick(id) {
    $("search").value = id;
    $("results").hidden = true;
    $("search").setAttribute("aria-expanded", "false");
    setSource({ kind: "catalog", name: id });
  }

  function setSource(source) {
    state.source = source;
    state.modelClass = "auto";
    state.numLabels = null;
    state.overrides = [];
    state.mem.context = null;
    state.mem.runtime = null; // the default depends on the model: llama.cpp reads a GGUF file
    if (source.kind !== "upload") state.gguf = source.kind === "store"; // Ollama's plan reads a GGUF file alone
    $("num-labels").value = "";
    $("overrides").value = "";
    loadModel();
  }

  // A name typed or in the address: ollama:NAME and org/repo:QUANT are GGUF files the server reads
  // (Ollama's store, a Hub repository's header), as the CLI reads them; anything else, the catalog.
  const STORE_NAME = /^(ollama:\S+|[\w.-]+\/[\w.-]+:\S+)$/;
  function named(name) {
    return STORE_NAME.test(name) ? { kind: "store", name } : { kind: "catalog", name };
  }

  function bindSearch() {
    const input = $("search");
    input.addEventListener("input", showResults);
    input.addEventListener("focus", showResults);
    input.addEventListener("blur", () => setTimeout(() => ($("results").hidden = true), 120));
    input.addEventListener("keydown", (ev) => {
      if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
        ev.preventDefault();
        if ($("results").hidden) showResults();
        moveSelection(ev.key === "ArrowDown" ? 1 : -1);
      } else if (ev.key === "Enter") {
        ev.preventDefault();
        const chosen = $("results").querySelector('[aria-selected="true"]');
        if (chosen) pick(chosen.dataset.id);
        else if (input.value.trim()) setSource(named(input.value.trim()));
      } else if (ev.key === "Escape") {
        $("results").hidden = true;
      }
    });
  }

  /* ---- pasted text and dropped files ------------------------------------------------------ */

  function bindTabs() {
    for (const tab of document.querySelectorAll(".tab")) {
      tab.addEventListener("click", () => {
        for (const t of document.querySelectorAll(".tab")) t.setAttribute("aria-selected", String(t === tab));
        for (const p of document.querySelectorAll(".panel")) p.hidden = p.dataset.panel !== tab.dataset.tab;
      });
    }
  }

  function bindPaste() {
    $("count-config").addEventListener("click", () => {
      let config;
      try {
        config = JSON.parse($("config-text").value);
      } catch (e) {
        fail({ message: `config.json is not valid JSON: ${e.message}`, field: "config" });
        return;
      }
      if (config === null || typeof config !== "object" || Array.isArray(config)) {
        fail({ message: "config.json must be a JSON object", field: "config" });
        return;
      }
      setSource({ kind: "config", config });
    });
    $("count-printout").addEventListener("click", () => {
      const tied = $("printout-tied").value;
      setSource({ kind: "printout", text: $("printout-text").value, tied: tied === "" ? null : tied === "true" });
    });
  }

  function base64(bytes) {
    let s = "";
    for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    return btoa(s);
  }

  async function slice(file, end) {
    return new Uint8Array(await file.slice(0, Math.min(end, file.size)).arrayBuffer());
  }

  // safetensors: an 8-byte length N, then N bytes of JSON. Only those are read.
  async function safetensorsHeader(file) {
    const head = await slice(file, 8);
    if (head.length < 8) return head; // the server says what is wrong
    const n = new DataView(head.buffer).getBigUint64(0, true);
    const end = n > BigInt(MAX_HEADER) ? 8 : 8 + Number(n);
    return slice(file, end);
  }

  // GGUF: walk the metadata and tensor infos to where the tensor data starts, reading more of
  // the file only while the header goes on (the tokenizer can make it several MB).
  async function ggufHeader(file) {
    let size = Math.min(file.size, 1 << 20);
    for (;;) {
      const bytes = await slice(file, size);
      const end = ggufEnd(bytes);
      if (end >= 0) return bytes.subarray(0, end);
      if (size >= file.size || size >= MAX_HEADER) return bytes;
      size = Math.min(file.size, size * 4, MAX_HEADER);
    }
  }

  const SCALAR = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };

  // The offset where GGUF tensor infos end; -1 when more bytes are needed; the whole buffer
  // when the header is malformed (the server's reader then names the fault).
  function ggufEnd(bytes) {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    let pos = 4;
    let little = true;
    const need = (n) => {
      if (pos + n > bytes.length) throw "more";
    };
    const u32 = () => { need(4); const v = view.getUint32(pos, little); pos += 4; return v; };
    const u64 = () => {
      need(8);
      const v = view.getBigUint64(pos, little);
      pos += 8;
      if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw "bad";
      return Number(v);
    };
    const str = () => { const n = u64(); need(n); pos += n; };
    const value = (type, depth) => {
      if (type in SCALAR) { need(SCALAR[type]); pos += SCALAR[type]; return; }
      if (type === 8) return str();
      if (type !== 9 || depth > 4) throw "bad";
      const item = u32();
      const count = u64();
      if (item in SCALAR) { need(count * SCALAR[item]); pos += count * SCALAR[item]; return; }
      for (let i = 0; i < count; i++) value(item, depth + 1);
    };
    try {
      if (bytes.length < 8) throw "more";
      if ((view.getUint32(4, true) & 0xffff) === 0) little = false;
      u32();
      const tensors = u64();
      const kvs = u64();
      for (let i = 0; i < kvs; i++) { str(); value(u32(), 0); }
      for (let i = 0; i < tensors; i++) {
        str();
        const dims = u32();
        if (dims > 8) throw "bad";
        need(8 * dims + 12);
        pos += 8 * dims + 12;
      }
      return pos;
    } catch (e) {
      if (e === "more") return -1;
      return bytes.length;
    }
  }

  async function readFile(file) {
    const status = $("file-status");
    const magic = await slice(file, 4);
    const isGguf = /\.gguf$/i.test(file.name) || String.fromCharCode(...magic) === "GGUF";
    const format = isGguf ? "gguf" : "safetensors";
    status.textContent = `reading the header of ${file.name} …`;
    status.dataset.progress = "true"; // a line that says work goes on: an error takes it away
    const header = isGguf ? await ggufHeader(file) : await safetensorsHeader(file);
    let config = null;
    const configText = $("file-config").value.trim();
    if (configText && !isGguf) {
      try {
        config = JSON.parse(configText);
      } catch (e) {
        throw Object.assign(new Error(`the config.json beside the file is not valid JSON: ${e.message}`), { field: "config" });
      }
    }
    const up = await api("/api/upload", { format, name: file.name, size: file.size, header: base64(header), config });
    status.textContent = `${file.name}: read ${fmt(header.length)} header bytes of ${fmt(file.size)}; the weights were not read.`;
    status.dataset.progress = "false";
    state.gguf = isGguf;
    setSource({ kind: "upload", id: up.id });
  }

  function bindFile() {
    const drop = $("drop");
    const take = (file) => file && readFile(file).catch(fail);
    $("file").addEventListener("change", () => take($("file").files[0]));
    drop.addEventListener("dragover", (ev) => { ev.preventDefault(); drop.classList.add("over"); });
    drop.addEventListener("dragleave", () => drop.classList.remove("over"));
    drop.addEventListener("drop", (ev) => {
      ev.preventDefault();
      drop.classList.remove("over");
      take(ev.dataTransfer.files[0]);
    });
    drop.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" || ev.key === " ") $("file").click();
    });
  }

  function bindOptions() {
    $("class").addEventListener("change", () => {
      state.modelClass = $("class").value;
      loadModel();
    });
    $("apply-options").addEventListener("click", () => {
      const labels = $("num-labels").value.trim();
      state.numLabels = labels === "" ? null : Number(labels);
      state.overrides = $("overrides").value.split(/\s+/).filter(Boolean);
      loadModel();
    });
    segmented($("derive-target"), (v) => { state.derive = v; loadModel(); });
    segmented($("lang"), (v) => { state.lang = v; loadModel(); });
    $("expand-all").addEventListener("click", () => setOpen(true, 4));
    $("collapse-all").addEventListener("click", () => setOpen(false, 0));
  }

  function segmented(group, onChange) {
    for (const b of group.querySelectorAll("button")) {
      b.addEventListener("click", () => {
        for (const o of group.querySelectorAll("button")) o.setAttribute("aria-checked", String(o === b));
        onChange(b.dataset.value);
      });
    }
  }

  /* ---- the memory planner ------------------------------------------------------------------ */

  function fillSelect(select, items, value) {
    select.innerHTML = "";
    for (const it of items) {
      if (it.group) {
        let og = [...select.children].find((o) => o.label === it.group);
        if (!og) {
          og = document.createElement("optgroup");
          og.label = it.group;
          select.appendChild(og);
        }
        og.appendChild(new Option(it.label, it.value));
      } else {
        select.add(new Option(it.label, it.value));
      }
    }
    select.value = value;
  }

  async function loadOptions() {
    const o = await api("/api/memory/options");
    state.options = o;
    state.mem.gpu = o.default_gpu;
    state.mem.lora_rank = o.default_lora_rank;
    state.mem.utilization = o.default_utilization;
    fillSchemes();
    fillKvDtypes();
    fillSelect($("runtime"), o.runtimes, state.mem.shown);
    fillSelect($("tp"), o.tp_sizes.map((n) => ({ value: String(n), label: String(n) })), String(state.mem.tp));
    fillSelect($("flash-attn"), o.flash_attn.map((f) => ({ value: f, label: f })), state.mem.flash_attn);
    $("utilization").value = String(state.mem.utilization);
    fillSelect($("vllm-version"), o.vllm_versions.map((v) => ({ value: v, label: v })), state.mem.vllm_version);
    fillSelect($("group-size"), o.mlx_group_sizes.map((g) => ({ value: String(g), label: String(g) })), String(state.mem.group_size));
    fillSelect($("cpu"), [{ value: "", label: "none" }, ...o.cpus], state.mem.cpu);
    fillSelect($("kv-bits"), [{ value: "", label: "none" }, ...o.mlx_kv_bits.map((b) => ({ value: String(b), label: String(b) }))], "");
    [$("context-num").min, $("context-num").max] = o.context_bounds.map(String);
    fillSelect($("optimizer"), o.optimizers.map((d) => ({ value: d, label: d })), state.mem.optimizer);
    const recompute = [{ value: "", label: "default" }, ...o.recompute.map((d) => ({ value: d, label: d }))];
    fillSelect($("recompute"), recompute, state.mem.recompute);
    fillSelect($("gpu"), o.gpus.map((g) => ({ value: g.key, label: `${g.name} · ${g.stated}`, group: g.group })), state.mem.gpu);
  }

  // A file's weights are planned as it stores them; a config's at bf16 unless the user chose.
  function pickStored(isFile) {
    const m = state.mem;
    state.stored = isFile;
    if (isFile) m.schemes.inference = "stored";
    else if (m.schemes.inference === "stored") m.schemes.inference = "bf16";
    if (m.mode === "inference" && state.options) fillSchemes();
  }

  // Each runtime takes its own KV cache types; a choice the next runtime lacks goes back to the default.
  function fillKvDtypes() {
    const m = state.mem;
    const kinds = state.options.runtime_kv_dtypes[m.shown] || state.options.kv_dtypes;
    if (!kinds.includes(m.kv_dtype)) m.kv_dtype = "";
    fillSelect($("kv-dtype"), [{ value: "", label: "default" }, ...kinds.map((d) => ({ value: d, label: d }))], m.kv_dtype);
  }

  // The runtime the controls show: the one chosen, or the one the last plan says was the default.
  // True when the KV cache choice went back to the default (the plan shown is then not of it).
  function showRuntime(runtime) {
    const m = state.mem;
    if (runtime === m.shown) return false;
    const kv = m.kv_dtype;
    m.shown = runtime;
    $("runtime").value = runtime;
    fillKvDtypes();
    const scheme = m.mode === "inference" && fillSchemes();
    showModeControls();
    return m.kv_dtype !== kv || scheme;
  }

  // At inference, the schemes the runtime shown loads (stored: a file's own, or its
  // quantization_config's); a choice it does not load goes to its default, and the page says so.
  // True when the scheme changed that way.
  function fillSchemes() {
    const o = state.options;
    const m = state.mem;
    let items = o.schemes;
    let replaced = false;
    if (m.mode !== "inference") {
      items = o.training_precisions.filter((p) => m.mode === "lora" || p.value !== "qlora");
    } else {
      const stored = state.stored || m.shown === "ollama"; // a file's own types (Ollama runs nothing else)
      const loads = (o.runtime_schemes[m.shown] || []).filter((v) => v !== "stored" || stored);
      items = o.schemes.filter((c) => loads.includes(c.value));
      const was = m.schemes.inference;
      if (state.model && loads.length && !loads.includes(was)) { // the model, once read, says whether "stored" applies
        const fallback = state.stored && loads.includes("stored") ? "stored" : o.runtime_default_scheme[m.shown];
        m.schemes.inference = loads.includes(fallback) ? fallback : loads[0];
        replaced = true;
        schemeNote(`${was} is not a scheme ${runtimeLabel(m.shown)} loads: planned at ${m.schemes.inference}, its default`);
      }
    }
    m.scheme = m.schemes[m.mode];
    fillSelect($("scheme"), items, m.scheme);
    return replaced;
  }

  function schemeNote(said) {
    $("scheme-note").hidden = !said;
    $("scheme-note").textContent = said;
  }

  function runtimeLabel(r) {
    const found = state.options && state.options.runtimes.find((c) => c.value === r);
    return found ? found.label : r;
  }

  function bindMemory() {
    let timer = null;
    const later = () => {
      clearTimeout(timer);
      timer = setTimeout(planMemory, 80);
    };
    segmented($("mode"), (v) => {
      state.mem.mode = v;
      schemeNote("");
      fillSchemes();
      showModeControls();
      planMemory();
    });
    $("scheme").addEventListener("change", () => {
      schemeNote("");
      state.mem.scheme = state.mem.schemes[state.mem.mode] = $("scheme").value;
      showModeControls(); // MLX's group size is the mlx-Nbit schemes'
      planMemory();
    });
    $("recompute").addEventListener("change", () => { state.mem.recompute = $("recompute").value; planMemory(); });
    $("lora-rank").addEventListener("input", () => {
      const r = Number($("lora-rank").value);
      if (Number.isInteger(r) && r >= 1) { state.mem.lora_rank = r; later(); }
    });
    $("lora-targets").addEventListener("change", () => { state.mem.lora_targets = $("lora-targets").value.trim(); planMemory(); });
    $("kv-dtype").addEventListener("change", () => { state.mem.kv_dtype = $("kv-dtype").value; planMemory(); });
    $("optimizer").addEventListener("change", () => { state.mem.optimizer = $("optimizer").value; planMemory(); });
    $("gpu").addEventListener("change", () => { state.mem.gpu = $("gpu").value; headings(); planMemory(); });
    bindRuntime(later);
    $("batch").addEventListener("input", () => {
      const b = Number($("batch").value);
      if (Number.isInteger(b) && b >= 1) { state.mem.batch = b; later(); }
    });
    bindContext(later);
    showModeControls();
  }

  // The slider steps over powers of two; the number beside it takes any context the API takes.
  function bindContext(later) {
    $("context").addEventListener("input", () => {
      state.mem.context = 2 ** Number($("context").value);
      showContext(state.mem.context);
      later();
    });
    $("context-num").addEventListener("input", () => {
      const n = contextValue($("context-num").value);
      $("context-num").setAttribute("aria-invalid", String(n === null));
      if (n === null) return;
      state.mem.context = n;
      $("context-value").textContent = fmt(n) + " tokens";
      later();
    });
  }

  // A whole number of tokens inside the API's bounds (options.context_bounds), else null.
  function contextValue(raw) {
    const n = Number(raw);
    const [low, high] = state.options ? state.options.context_bounds : [1, 2 ** 30];
    return raw.trim() !== "" && Number.isInteger(n) && n >= low && n <= high ? n : null;
  }

  function showContext(ctx) {
    const slider = $("context");
    $("context-value").textContent = ctx ? fmt(ctx) + " tokens" : "not planned";
    if (!ctx) return;
    slider.value = String(Math.min(Number(slider.max), Math.max(7, Math.round(Math.log2(ctx)))));
    if (document.activeElement === $("context-num")) return; // what is being typed stays as typed
    $("context-num").value = String(ctx);
    $("context-num").setAttribute("aria-invalid", "false");
  }

  // A runtime option set pins the runtime it belongs to: the request then names both.
  function bindRuntime(later) {
    const m = state.mem;
    const pin = () => { m.runtime = m.shown; };
    $("runtime").addEventListener("change", () => {
      m.runtime = $("runtime").value;
      showRuntime(m.runtime);
      planMemory();
    });
    $("tp").addEventListener("change", () => { m.tp = Number($("tp").value); pin(); planMemory(); });
    $("flash-attn").addEventListener("change", () => { m.flash_attn = $("flash-attn").value; pin(); planMemory(); });
    $("num-gpu").addEventListener("change", () => {
      const v = $("num-gpu").value.trim();
      m.num_gpu = v === "" ? null : Number(v);
      pin(); planMemory();
    });
    $("free-vram").addEventListener("change", () => { m.free_vram = $("free-vram").value.trim(); pin(); planMemory(); });
    for (const id of ["ngl", "ts", "ot"]) {
      $(id).addEventListener("change", () => { m[id] = $(id).value.trim(); pin(); planMemory(); });
    }
    $("ncmoe").addEventListener("change", () => {
      const v = $("ncmoe").value.trim();
      m.ncmoe = v === "" ? null : Number(v);
      pin(); planMemory();
    });
    $("utilization").addEventListener("input", () => {
      const u = Number($("utilization").value);
      if (u > 0 && u < 1) { m.utilization = u; pin(); later(); }
    });
    $("vllm-version").addEventListener("change", () => { m.vllm_version = $("vllm-version").value; pin(); planMemory(); });
    $("device").addEventListener("change", () => { m.device = $("device").value; pin(); showModeControls(); planMemory(); });
    $("kv-space").addEventListener("change", () => {
      const v = $("kv-space").value.trim();
      m.kv_space = v === "" ? null : Number(v);
      pin(); planMemory();
    });
    $("group-size").addEventListener("change", () => { m.group_size = Number($("group-size").value); pin(); planMemory(); });
    $("kv-bits").addEventListener("change", () => {
      m.kv_bits = $("kv-bits").value === "" ? null : Number($("kv-bits").value);
      pin(); planMemory();
    });
    // RAM is the machine's, whatever the runtime: the plan's host part and the recommendations are held to it
    $("ram").addEventListener("change", () => { m.ram = $("ram").value.trim(); planMemory(); });
    $("cpu").addEventListener("change", () => { // the speed's alone: no new memory plan
      m.cpu = $("cpu").value;
      respeed();
    });
    // As typed, whatever it is: the API checks it as the CLI's --prompt and says a bad one in a line
    $("prompt").addEventListener("change", () => {
      const raw = $("prompt").value.trim();
      m.prompt = raw === "" ? NaN : Number(raw);
      respeed();
    });
  }

  // A setting of the speed's alone (the host CPU, the prompt): no new memory plan.
  function respeed() {
    writeAddress();
    if (state.plan && state.mem.mode === "inference") planSpeed(state.plan);
  }

  // Controls of one mode (data-for) and, at inference, of one runtime (data-for-runtime).
  function showModeControls() {
    const m = state.mem;
    for (const c of document.querySelectorAll("[data-for], [data-for-runtime]")) {
      const mode = !c.dataset.for || c.dataset.for.split(" ").includes(m.mode);
      const runtime = !c.dataset.forRuntime || (m.mode === "inference" && c.dataset.forRuntime.split(" ").includes(m.shown));
      const device = !c.dataset.forDevice || c.dataset.forDevice === m.device; // --kv-cache-space: vLLM on CPUs
      const scheme = !c.dataset.forScheme || m.scheme.startsWith(c.dataset.forScheme); // --group-size: mlx-Nbit
      c.hidden = !(mode && runtime && device && scheme);
    }
  }

  // The runtime and its options, only at inference and only those of the runtime chosen.
  function runtimeQuery() {
    const m = state.mem;
    const inference = m.mode === "inference";
    const ollama = inference && m.runtime === "ollama";
    const llama = inference && m.runtime === "llama.cpp";
    const vllm = inference && m.runtime === "vllm";
    const mlx = inference && m.runtime === "mlx";
    return {
      n_gpu_layers: llama && m.ngl ? m.ngl : null,
      n_cpu_moe: llama ? m.ncmoe : null,
      tensor_split: llama && m.ts ? m.ts : null,
      override_tensor: llama && m.ot ? [m.ot] : [],
      runtime: inference ? m.runtime : null,
      tp: inference && m.runtime === "vllm" ? m.tp : null,
      gpu_memory_utilization: inference && m.runtime === "vllm" ? m.utilization : null,
      flash_attn: inference && ["llama.cpp", "ollama"].includes(m.runtime) ? m.flash_attn : null,
      num_gpu: ollama ? m.num_gpu : null,
      free_vram: ollama && m.free_vram ? m.free_vram : null,
      vllm_version: vllm && m.vllm_version !== "latest" ? m.vllm_version : null,
      device: vllm && m.device === "cpu" ? "cpu" : null,
      kv_cache_space: vllm && m.device === "cpu" ? m.kv_space : null,
      group_size: mlx && m.scheme.startsWith("mlx-") ? m.group_size : null,
      kv_bits: mlx ? m.kv_bits : null,
    };
  }

  // Ollama runs GGUF files: its runtime is offered for a GGUF model alone.
  function offerOllama() {
    const m = state.mem;
    const option = $("runtime").querySelector('option[value="ollama"]');
    if (option) option.disabled = !state.gguf;
    if (!state.gguf && m.runtime === "ollama") m.runtime = null;
  }

  /* ---- the recommendation: one line per runtime, its command to copy ------------------------- */

  let adviceSeq = 0;
  let adviceKey = "";

  // /api/recommend for the model, the GPU and the context asked: the call `paramcount fit --gpu` makes.
  async function recommend() {
    const m = state.mem;
    const body = { ...modelQuery(), gpu: m.gpu, context: m.context, ram: m.ram || null };
    const key = JSON.stringify(body);
    if (key === adviceKey) return;
    adviceKey = key;
    const seq = ++adviceSeq;
    const list = $("advice-list");
    // the last model's or card's lines must not stand beside this one's heading while it is worked out
    list.innerHTML = "";
    list.appendChild(text("li", "muted", "working out the recommendations…"));
    delete $("advice").dataset.model;
    delete $("advice").dataset.gpu;
    try {
      const a = await api("/api/recommend", body);
      if (seq !== adviceSeq) return;
      list.innerHTML = "";
      for (const r of a.recommendations) list.appendChild(adviceLine(r, a.gpu.unit));
      Object.assign($("advice").dataset, { model: state.model.name, gpu: a.gpu.key });
    } catch (err) {
      if (seq !== adviceSeq) return;
      adviceKey = "";
      list.innerHTML = "";
      list.appendChild(text("li", "muted", `no recommendation: ${err.message}`));
      Object.assign($("advice").dataset, { model: state.model.name, gpu: m.gpu });
    }
  }

  const RUNTIME_NAMES = { "llama.cpp": "llama.cpp", vllm: "vLLM", transformers: "transformers", ollama: "Ollama" };

  function adviceLine(r, u) {
    const li = text("li", r.fits ? "" : "no");
    li.dataset.runtime = r.runtime;
    const said = text("div", "said");
    said.appendChild(text("b", "", RUNTIME_NAMES[r.runtime] || r.runtime));
    if (!r.fits) {
      said.append(` no: ${r.why}`);
      li.appendChild(said);
      return li;
    }
    const host = r.host_bytes ? ` + ${sized(r.host_bytes, u)} host` : "";
    const scheme = r.scheme ? `${r.scheme} at ` : "";
    said.append(` ${scheme}${fmt(r.context)} tokens: ${sized(r.gpu_bytes, u)} GPU${host}; ${r.why}`);
    const row = text("div", "cmd-row");
    const cmd = text("code", "cmd", r.command);
    const button = text("button", "small copy", "copy");
    button.type = "button";
    button.title = "copy this command";
    button.addEventListener("click", async () => {
      const ok = await copyText(r.command);
      button.textContent = ok ? "copied" : "select and copy";
      setTimeout(() => (button.textContent = "copy"), 1500);
    });
    row.append(cmd, button);
    li.append(said, row);
    return li;
  }

  // The clipboard where the page may write it (a secure context: localhost, 127.0.0.1); else the
  // hidden textarea, selected and copied as browsers did before the Clipboard API (a page served
  // on another address over http). The textarea keeps what was copied last.
  async function copyText(value) {
    const clip = $("clip");
    clip.value = value;
    if (navigator.clipboard && window.isSecureContext) {
      try {
        await navigator.clipboard.writeText(value);
        return true;
      } catch (e) {
        // refused (no permission, no focus): the textarea below
      }
    }
    clip.select();
    try {
      return document.execCommand("copy");
    } catch (e) {
      return false;
    } finally {
      clip.blur();
    }
  }

  async function planMemory() {
    if (!state.model || !state.options) return;
    recommend();
    offerOllama();
    const seq = ++memorySeq;
    const m = state.mem;
    const model = state.model;
    const body = {
      ...modelQuery(), mode: m.mode, scheme: m.scheme, kv_dtype: m.kv_dtype || null,
      optimizer: m.optimizer, recompute: m.recompute || null, lora_rank: m.lora_rank, lora_targets: m.lora_targets || null,
      context: m.context, batch: m.batch, gpu: m.gpu, ram: m.ram || null, ...runtimeQuery(),
    };
    try {
      const plan = await api("/api/memory", body);
      if (seq !== memorySeq) return;
      $("memory-error").hidden = true;
      state.request = body;
      renderMemory(plan);
      writeAddress();
      if (m.mode === "inference") planSpeed(plan);
      else clearSpeed();
      // what the drawing is of, for whoever waits on it (the browser tests)
      Object.assign($("memory").dataset, {
        model: model.name, total: String(model.total), scheme: m.scheme, mode: m.mode, runtime: plan.runtime || "",
      });
    } catch (err) {
      if (seq === memorySeq) {
        showError($("memory-error"), err);
        state.plan = null;
        clearMemory();
        clearSpeed();
      }
    }
  }

  /* ---- speed: decode, prefill and TTFT, and decode against the KV depth ---------------------- */

  // /api/speed at the plan's runtime, scheme, card and context: the call `paramcount speed` makes.
  function speedBody(plan) {
    const m = state.mem;
    const r = runtimeQuery();
    return {
      ...modelQuery(), runtime: plan.runtime, scheme: m.scheme, gpu: m.gpu, context: plan.settings.context,
      prompt: Number.isFinite(m.prompt) ? m.prompt : null, // null: the API's "not a whole number"
      concurrency: m.batch, tp: r.tp, vllm_version: r.vllm_version, group_size: r.group_size, device: r.device,
      cpu: ["llama.cpp", "ollama"].includes(plan.runtime) && m.cpu ? m.cpu : null,
      // auto is each runtime's own default (Ollama's: off), as a command without -fa
      flash_attn: r.flash_attn && r.flash_attn !== "auto" ? r.flash_attn : null,
      n_gpu_layers: r.n_gpu_layers, n_cpu_moe: r.n_cpu_moe, tensor_split: r.tensor_split, override_tensor: r.override_tensor,
    };
  }

  async function planSpeed(plan) {
    const seq = ++speedSeq;
    const part = $("speed-part");
    part.dataset.state = "asking";
    try {
      const d = await api("/api/speed", speedBody(plan));
      if (seq !== speedSeq) return;
      $("speed-error").hidden = true;
      $("prompt").setAttribute("aria-invalid", "false");
      state.speed = d;
      renderSpeed(d);
      Object.assign(part.dataset, {
        state: "drawn", model: state.model.name, runtime: d.speed.runtime, scheme: state.mem.scheme, gpu: state.mem.gpu,
        context: String(d.speed.settings.context),
      });
    } catch (err) {
      if (seq !== speedSeq) return;
      clearSpeed();
      showError($("speed-error"), err);
      $("prompt").setAttribute("aria-invalid", String(err.field === "prompt"));
      part.dataset.state = "error";
    }
  }

  function clearSpeed() {
    speedSeq++;
    state.speed = null;
    for (const id of ["speed-figures", "speedplot", "speed-legend", "speed-notes"]) $(id).innerHTML = "";
    $("speed-error").hidden = true;
    $("speedplot").toggleAttribute("hidden", true); // an SVG has no hidden property
    $("speed-part").dataset.state = "none";
  }

  // A rate as the CLI prints it (131.3 tok/s), a TTFT in ms.
  function speedValue(phase, v) {
    if (phase === "ttft") {
      const ms = v.seconds * 1e3;
      return v.seconds >= 0.01 ? `${Math.round(ms).toLocaleString("en-US")} ms` : `${ms.toFixed(2)} ms`;
    }
    return `${v.tokens_per_s.toLocaleString("en-US", { minimumFractionDigits: 1, maximumFractionDigits: 1 })} tok/s`;
  }

  // An estimate says its expected error (the calibration's residuals), as `paramcount speed` does.
  function expectedError(e) {
    if (!e) return "estimate without an expected error: not all its factors were fitted on measurements (the notes say which)";
    const pct = (x) => `${Math.round(x * 100)}%`;
    return `estimate ±${pct(e.median)} (p90 ${pct(e.p90)}, ${e.rows} runs)`;
  }

  function renderSpeed(d) {
    const s = d.speed;
    const box = $("speed-figures");
    box.innerHTML = "";
    const phases = [["decode", `decode at ${fmt(s.settings.context)} tokens, per stream`],
      ["prefill", `prefill of ${fmt(s.settings.prompt)} tokens`], ["ttft", "time to first token"]];
    for (const [phase, label] of phases) {
      const f = s[phase];
      const fig = text("div", "speed-figure");
      fig.dataset.phase = phase;
      fig.appendChild(text("div", "stat-label", label));
      fig.appendChild(text("div", "speed-value", f.estimate ? speedValue(phase, f.estimate) : "no estimate"));
      fig.appendChild(text("div", "speed-sub", f.estimate ? expectedError(f.estimate.expected_error) : (f.note || "")));
      if (f.upper_bound && (f.upper_bound.tokens_per_s || f.upper_bound.seconds)) {
        // a bound on speed: the most tokens a second, or for a time the least it can take
        const side = phase === "ttft" ? "no less than" : "upper bound";
        fig.appendChild(text("div", "speed-bound", `${side} ${speedValue(phase, f.upper_bound)} (${f.bound_by})`));
      }
      box.appendChild(fig);
    }
    $("speedplot").toggleAttribute("hidden", false);
    C.speedPlot($("speedplot"), d.curve, s.settings.context);
    const legend = $("speed-legend");
    legend.innerHTML = "";
    for (const [key, label] of [["estimate", "estimate"], ["bound", "upper bound (dashed)"]]) {
      if (!d.curve[key].some((v) => v !== null)) continue;
      const span = document.createElement("span");
      const sw = text("i");
      sw.style.background = C.SPEED_COLORS[key];
      span.append(sw, label);
      legend.appendChild(span);
    }
    const notes = $("speed-notes");
    notes.innerHTML = "";
    const said = new Set([s.decode.note, s.prefill.note, ...s.notes].filter(Boolean));
    for (const n of said) notes.appendChild(text("li", "", n));
  }

  function clearMemory() {
    headings();
    $("verdict").innerHTML = "";
    $("serving").hidden = true;
    $("ollama").hidden = true;
    for (const id of ["membar", "memplot"]) $(id).innerHTML = "";
    $("terms").tBodies[0].innerHTML = "";
    $("precisions").tBodies[0].innerHTML = "";
    $("memory-notes").innerHTML = "";
  }

  function renderMemory(p) {
    state.plan = p;
    // the default recomputation, named as the plan resolved it (full for LoRA: peft's and TRL's recipes)
    if (p.settings.recompute) $("recompute").options[0].textContent = `default: ${p.settings.recompute}`;
    if (p.runtime && showRuntime(p.runtime)) planMemory();
    const g = p.gpu;
    const ctx = p.settings.context;
    $("context").max = String(p.context_limit ? Math.max(8, Math.min(20, Math.ceil(Math.log2(p.context_limit)))) : 20);
    showContext(ctx);
    const v = $("verdict");
    v.innerHTML = "";
    // Ollama's verdict is against the memory free on the card (its --free-vram), not the card's size
    const free = p.ollama ? p.ollama.free : null;
    const usable = free !== null
      ? `${sized(free)} free on ${g.name}: every layer on the GPU or not`
      : `${sized(g.usable)} usable on ${g.name}`;
    const cpus = onCpus(p);
    if (p.partial) {
      v.append(text("span", "tag part", "weights only"), text("span", "big", sized(p.total)),
        text("span", "muted", `of weights at ${p.settings.scheme}, against ${usable}`));
    } else if (cpus) { // vLLM's CPU platform: everything in RAM, held to the RAM given (no verdict without one)
      const tag = p.fits === null ? text("span", "tag part", "RAM not given")
        : text("span", "tag " + (p.fits ? "yes" : "no"), p.fits ? "fits in RAM" : "does not fit in RAM");
      const of = p.ram ? `needed of ${sized(p.ram.bytes)} of RAM: vLLM on CPUs, no GPU` : "needed in RAM (vLLM on CPUs): give RAM for a verdict";
      v.append(tag, text("span", "big", sized(p.total)), text("span", "muted", of));
    } else {
      const tag = text("span", "tag " + (p.fits ? "yes" : "no"), p.fits ? "fits" : "does not fit");
      v.append(tag, text("span", "big", sized(p.total)), text("span", "muted", `needed of ${usable}`));
    }
    // what the runtime holds in host memory beside the GPU (llama.cpp's input layer): not in the total
    if (p.host) v.append(text("span", "muted", `+ ${sized(p.host)} in host memory, not on the GPU`));
    // --ram: the host part held to the RAM given, as `paramcount memory --ram` says it
    if (p.ram && !cpus) {
      const fits = p.ram.fits ? "fits in" : "does not fit in";
      v.append(Object.assign(text("span", p.ram.fits ? "fit-yes" : "fit-no", `host part ${sized(p.ram.host)} ${fits} ${sized(p.ram.bytes)} of RAM (${state.mem.ram})`), { id: "ram-check" }));
    }
    // llama.cpp's buffers on each device (-ngl, -ot, -ts), as `paramcount memory` lists them
    const devices = p.settings.devices;
    if (devices && Object.keys(devices).length > 1) {
      const each = Object.entries(devices).map(([d, b]) => `${d} ${sized(b)}`).join(" · ");
      v.append(Object.assign(text("span", "muted", `${each} (${p.settings.arguments})`), { id: "devices" }));
    }
    renderServing(p);
    renderOllama(p);
    // drawn against the GPU, or for vLLM on CPUs against the RAM given (none: no line)
    const capacity = cpus ? (p.ram ? p.ram.bytes : 0) : g.usable;
    const label = cpus ? `RAM: ${sized(capacity)}` : `${g.name}: ${sized(g.usable)}`;
    C.setUnit(unit());
    C.memoryBar($("membar"), p.terms.filter((t) => !t.host), capacity, label);
    C.memoryPlot($("memplot"), p.curve, capacity, label, ctx);
    // an SVG element has no hidden property: the attribute (Ollama estimates at its num_ctx alone)
    $("memplot").toggleAttribute("hidden", p.partial || !p.curve.contexts.length);
    $("plot-empty").hidden = !p.partial;
    $("plot-part").hidden = !p.partial && !p.curve.contexts.length; // Ollama estimates at its num_ctx alone
    renderPlotLegend(p.curve);
    renderPrecisions(p);
    $("memory-grid").hidden = $("plot-part").hidden && $("precisions-part").hidden;
    renderTerms(p.terms);
    const notes = $("memory-notes");
    notes.innerHTML = "";
    for (const n of p.notes) notes.appendChild(text("li", "", n));
  }

  function onCpus(p) {
    return p.runtime === "vllm" && p.settings.device === "cpu";
  }

  // What vLLM would log on this GPU, as `paramcount memory --runtime vllm --gpu` says it.
  function renderServing(p) {
    const box = $("serving");
    const s = p.serving;
    box.hidden = !s;
    box.innerHTML = "";
    if (!s) return;
    const ctx = fmt(p.settings.context);
    const on = `vLLM on ${onCpus(p) ? "CPUs" : p.gpu.name} (TP ${p.settings.tp})`;
    box.classList.toggle("no", !s.starts);
    if (!s.starts) {
      box.textContent = s.kv_blocks <= s.blocks_per_sequence
        ? `${on} would not start: ${gib(s.kv_cache_bytes)} GiB of KV cache is less than one sequence of ${ctx} tokens`
        : `${on} would not start: the ${gib(s.outside_claim_bytes)} GiB outside its claim cannot hold the CUDA context, cuBLAS and NCCL`;
      return;
    }
    const num = (id, n) => Object.assign(text("b", "", fmt(n)), { id });
    box.append(`${on}: KV cache ${gib(s.kv_cache_bytes)} GiB = `, num("kv-tokens", s.kv_tokens), onCpus(p) ? " tokens (" : " tokens per GPU (",
      num("kv-blocks", s.kv_blocks), " blocks); at ", ctx, " tokens, ", num("max-seqs", s.max_sequences), s.max_sequences === 1 ? " sequence at once" : " sequences at once");
  }

  // Ollama's num_gpu on this GPU and its estimate beside llama.cpp's plan, as `paramcount memory --runtime ollama` says it.
  function renderOllama(p) {
    const box = $("ollama");
    const o = p.ollama;
    box.hidden = !o;
    box.innerHTML = "";
    if (!o) return;
    const said = o.all_layers ? "all" : `${fmt(o.num_gpu)} of ${fmt(o.layers_model)}`;
    const line = text("p", o.num_gpu === 0 ? "no" : "");
    line.append(`Ollama ${o.version}: num_gpu `, Object.assign(text("b", "", fmt(o.num_gpu)), { id: "num-gpu-said" }),
      ` (${said} layers on the GPU) on ${p.gpu.name}, ${gib(o.free)} GiB free`);
    const t = text("table", "nums");
    t.id = "ollama-compared";
    const head = t.createTHead().insertRow();
    for (const h of ["every layer on the GPU", "Ollama", "llama.cpp", "difference"]) head.appendChild(text("th", "", h));
    const body = t.createTBody();
    for (const r of o.compared_with_llama_cpp) {
      const tr = body.insertRow();
      tr.dataset.term = r.term;
      tr.title = r.why;
      const d = r.difference;
      tr.append(text("td", "", r.term), text("td", "r", `${gib(r.ollama)} GiB`), text("td", "r", `${gib(r.llama_cpp)} GiB`),
        text("td", "r", `${d > 0 ? "+" : ""}${gib(d)} GiB`));
    }
    box.append(line, t);
  }

  // The headings name the GPU chosen now (before its plan answers, and when it fails), never the last one.
  function headings() {
    const m = state.mem;
    const g = gpuOption(m.gpu);
    const name = g ? g.name : m.gpu;
    const tp = m.mode === "inference" && m.runtime === "vllm" && m.tp > 1 ? `${m.tp} × ` : "";
    const p = state.plan && state.plan.gpu.key === m.gpu ? state.plan : null;
    const at = p && p.settings.context ? `, ${fmt(p.settings.context)} tokens × ${p.settings.batch}` : "";
    $("precisions-title").textContent = p && p.partial ? "Weights at each precision" : `At each precision on ${tp}${name}${at}`;
    $("advice-title").textContent = `Recommended on ${name}`;
  }

  function renderPrecisions(p) {
    headings();
    $("precisions-part").hidden = !p.precisions.length; // Ollama runs the file as stored: no table
    const body = $("precisions").tBodies[0];
    body.innerHTML = "";
    for (const r of p.precisions) {
      const tr = text("tr", r.scheme === state.mem.scheme ? "current" : "");
      tr.dataset.scheme = r.scheme;
      if (!r.available) {
        const cell = text("td", "why");
        cell.colSpan = columns() - 1;
        const msg = text("div", "", `not available: ${r.why}`);
        cell.title = r.why;
        cell.appendChild(msg);
        tr.append(text("td", "", r.label), cell);
        body.appendChild(tr);
        continue;
      }
      if (p.partial) {
        tr.append(text("td", "", r.label), text("td", "", sized(r.weights)), text("td", "muted", "–"), text("td", "muted", "–"), text("td", "muted", "–"));
        tr.addEventListener("click", () => {
          state.mem.scheme = state.mem.schemes[state.mem.mode] = r.scheme;
          $("scheme").value = r.scheme;
          planMemory();
        });
        body.appendChild(tr);
        continue;
      }
      const fits = text("td", r.fits ? "fit-yes" : "fit-no", r.fits ? "✓ fits" : "✗ no");
      let longest = r.max_context === null ? "none" : fmt(r.max_context);
      if (r.max_context !== null && r.max_context === r.context_limit) longest += " (limit)";
      tr.append(text("td", "", r.label), text("td", "", sized(r.weights)), text("td", "", sized(r.total)), fits, text("td", "", longest));
      // no count of GPUs fits (the search stops at 65,536): "none", as `paramcount fit` says it
      if (state.mem.mode !== "inference") tr.appendChild(text("td", "", r.gpus === null ? "none" : fmt(r.gpus)));
      if (p.serving) tr.appendChild(text("td", "", r.max_sequences ? fmt(r.max_sequences) : "none"));
      tr.addEventListener("click", () => {
        state.mem.scheme = state.mem.schemes[state.mem.mode] = r.scheme;
        $("scheme").value = r.scheme;
        planMemory();
      });
      body.appendChild(tr);
    }
  }

  function columns() {
    return [...$("precisions").tHead.rows[0].cells].filter((c) => !c.hidden).length;
  }

  function renderPlotLegend(curve) {
    const box = $("plot-legend");
    box.innerHTML = "";
    curve.series.forEach((s, i) => {
      const span = document.createElement("span");
      const sw = text("i");
      sw.style.background = C.termColor(s.key, i);
      span.append(sw, s.label);
      box.appendChild(span);
    });
  }

  function renderTerms(terms) {
    $("terms-unit").textContent = unit();
    const body = $("terms").tBodies[0];
    body.innerHTML = "";
    const add = (t, part, i) => {
      const tr = text("tr", part ? "part" : "");
      tr.dataset.key = t.key;
      const name = text("td");
      if (!part) {
        const sw = text("span", "swatch");
        sw.style.background = C.termColor(t.key, i);
        name.appendChild(sw);
      }
      name.append(t.label);
      if (t.estimate) name.appendChild(text("span", "est", "estimate"));
      if (t.host) name.appendChild(text("span", "host", "host memory, not in the total"));
      const how = text("td");
      how.append(text("div", "formula", t.formula), text("div", "assume", t.assumption + (t.source ? ` — ${t.source}` : "")));
      const bytes = Object.assign(text("td", "r", size(t.bytes)), { title: `${fmt(t.bytes)} bytes` });
      bytes.dataset.unit = unit(); // the header's unit, said beside each figure where the header is hidden (phones)
      tr.append(name, bytes, how);
      body.appendChild(tr);
      for (const sub of t.parts || []) add(sub, true, i);
    };
    terms.forEach((t, i) => add(t, false, i));
  }

  /* ---- the address: model, mode, runtime and settings in the query string ------------------- */

  const MAX_ADDRESS_CONFIG = 6000; // characters of a pasted config.json the address still carries
  const MODES = ["inference", "training", "lora"];

  function writeAddress() {
    const q = new URLSearchParams();
    const shared = sourceToQuery(q);
    modelToQuery(q);
    memoryToQuery(q);
    history.replaceState(null, "", "?" + q.toString() + location.hash);
    const what = { printout: "a pasted printout", upload: "an uploaded file", config: "a config.json this long" }[state.source.kind];
    $("url-note").textContent = shared ? ""
      : `The address holds the settings but not the model: ${what} cannot be put in a URL. Whoever opens it sees these settings on the default model.`;
  }

  // True when the address names the model: a catalog name, or a config short enough to carry.
  function sourceToQuery(q) {
    const src = state.source;
    if (src.kind === "catalog" || src.kind === "store") q.set("model", src.name);
    if (src.kind !== "config") return src.kind === "catalog" || src.kind === "store";
    const json = JSON.stringify(src.config);
    if (json.length <= MAX_ADDRESS_CONFIG) q.set("config", json);
    return json.length <= MAX_ADDRESS_CONFIG;
  }

  function modelToQuery(q) {
    if (state.modelClass !== "auto") q.set("class", state.modelClass);
    if (state.numLabels !== null) q.set("labels", String(state.numLabels));
    if (state.overrides.length) q.set("set", state.overrides.join(" "));
    if (state.lang !== "en") q.set("lang", state.lang);
    if (state.derive !== "backbone") q.set("derive", state.derive);
  }

  function memoryToQuery(q) {
    const m = state.mem;
    const r = runtimeQuery();
    const pairs = {
      mode: m.mode, scheme: m.scheme, gpu: m.gpu, context: m.context, batch: m.batch,
      kv: m.mode === "inference" ? m.kv_dtype : "", optimizer: m.mode !== "inference" ? m.optimizer : "",
      recompute: m.mode !== "inference" ? m.recompute : "", rank: m.mode === "lora" ? m.lora_rank : "",
      targets: m.mode === "lora" ? m.lora_targets : "", runtime: r.runtime, tp: r.tp,
      utilization: r.gpu_memory_utilization, flash_attn: r.flash_attn, num_gpu: r.num_gpu, free_vram: r.free_vram,
      ngl: r.n_gpu_layers, ncmoe: r.n_cpu_moe, ts: r.tensor_split, ot: r.override_tensor[0] ?? null,
      ram: m.ram, cpu: m.mode === "inference" ? m.cpu : "", prompt: m.mode === "inference" && m.prompt !== 512 ? m.prompt : "", vllm: r.vllm_version, device: r.device, kvspace: r.kv_cache_space, group: r.group_size, kvbits: r.kv_bits,
    };
    for (const [k, v] of Object.entries(pairs)) if (v !== null && v !== "") q.set(k, String(v));
  }

  // What the address names, before anything is drawn; a bad value reaches the API, which says so.
  function readSource(q) {
    if (q.has("config")) {
      try {
        state.source = { kind: "config", config: JSON.parse(q.get("config")) };
        $("config-text").value = JSON.stringify(state.source.config, null, 2);
      } catch (e) {
        fail({ message: `the address's config is not valid JSON: ${e.message}`, field: "config" });
      }
    } else if (q.get("model")) {
      state.source = named(q.get("model"));
      state.gguf = state.source.kind === "store";
    }
    $("search").value = ["catalog", "store"].includes(state.source.kind) ? state.source.name : "";
    if (q.has("class")) state.modelClass = q.get("class");
    if (q.has("labels")) state.numLabels = Number(q.get("labels"));
    if (q.has("set")) state.overrides = q.get("set").split(/\s+/).filter(Boolean);
    if (q.get("lang") === "zh") state.lang = "zh";
    if (q.get("derive") === "class") state.derive = "class";
  }

  // The planner's settings from the address, over the defaults the options gave.
  function readSettings(q) {
    const m = state.mem;
    const num = (k) => (q.has(k) ? Number(q.get(k)) : null);
    if (MODES.includes(q.get("mode"))) m.mode = q.get("mode");
    if (q.has("scheme")) m.schemes[m.mode] = q.get("scheme");
    if (q.has("context")) m.context = contextValue(q.get("context"));
    const pick = { gpu: "gpu", kv: "kv_dtype", optimizer: "optimizer", recompute: "recompute", targets: "lora_targets", runtime: "runtime", flash_attn: "flash_attn", free_vram: "free_vram", ngl: "ngl", ts: "ts", ot: "ot", ram: "ram", cpu: "cpu", vllm: "vllm_version", device: "device" };
    for (const [k, field] of Object.entries(pick)) if (q.has(k)) m[field] = q.get(k);
    for (const [k, field] of [["batch", "batch"], ["rank", "lora_rank"], ["tp", "tp"], ["utilization", "utilization"], ["num_gpu", "num_gpu"], ["ncmoe", "ncmoe"], ["kvspace", "kv_space"], ["group", "group_size"], ["kvbits", "kv_bits"], ["prompt", "prompt"]]) {
      if (num(k) !== null) m[field] = num(k);
    }
    if (m.runtime) m.shown = m.runtime;
  }

  // Every control shows the state (the defaults, or what the address set).
  function showSettings() {
    const m = state.mem;
    for (const [id, v] of [["mode", m.mode], ["lang", state.lang], ["derive-target", state.derive]]) {
      for (const b of $(id).querySelectorAll("button")) b.setAttribute("aria-checked", String(b.dataset.value === v));
    }
    if (state.options) {
      fillSchemes();
      fillKvDtypes();
    }
    const values = { runtime: m.shown, tp: String(m.tp), "flash-attn": m.flash_attn, utilization: String(m.utilization),
      "num-gpu": m.num_gpu === null ? "" : String(m.num_gpu), "free-vram": m.free_vram,
      ngl: m.ngl, ts: m.ts, ot: m.ot, ncmoe: m.ncmoe === null ? "" : String(m.ncmoe),
      ram: m.ram, cpu: m.cpu, prompt: Number.isFinite(m.prompt) ? String(m.prompt) : "", "vllm-version": m.vllm_version, device: m.device, "kv-space": m.kv_space === null ? "" : String(m.kv_space),
      "group-size": String(m.group_size), "kv-bits": m.kv_bits === null ? "" : String(m.kv_bits),
      optimizer: m.optimizer, recompute: m.recompute, gpu: m.gpu, batch: String(m.batch), "lora-rank": String(m.lora_rank),
      "lora-targets": m.lora_targets, "num-labels": state.numLabels === null ? "" : String(state.numLabels), overrides: state.overrides.join(" ") };
    for (const [id, v] of Object.entries(values)) $(id).value = v;
    showContext(m.context);
    showModeControls();
  }

  /* ---- export: the plan as JSON and CSV, the charts as SVG and PNG --------------------------- */

  function bindExport() {
    $("copy-link").addEventListener("click", () => copyText(location.href));
    $("dl-json").addEventListener("click", () => state.plan && download(fileName("json"), "application/json", planJson()));
    $("dl-csv").addEventListener("click", () => state.plan && download(fileName("csv"), "text/csv", planCsv(state.plan)));
    $("dl-svg").addEventListener("click", () => state.plan && download(fileName("svg"), "image/svg+xml", chartSvg()));
    $("dl-png").addEventListener("click", () => state.plan && chartPng(chartSvg()).then((png) => download(fileName("png"), "image/png", png)));
  }

  function download(name, type, data) {
    const a = document.createElement("a");
    a.href = URL.createObjectURL(new Blob([data], { type }));
    a.download = name;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 10000);
  }

  function fileName(ext) {
    const p = state.plan;
    const name = (state.model ? state.model.name : "model").replace(/[^A-Za-z0-9._-]+/g, "_");
    return `${name}.${state.request.mode}.${p.settings.scheme}.${p.gpu.key || "gpu"}.${ext}`;
  }

  // The plan as the API answered it, with the request that asked for it and the page's address.
  function planJson() {
    const m = state.model;
    const model = { name: m.name, class_name: m.class_name, total: m.total, backbone_total: m.backbone_total };
    return JSON.stringify({ address: location.href, model, request: state.request, plan: state.plan }, null, 2);
  }

  // One row per term and per part of a term (part_of names its term); bytes exact, GB and GiB rounded.
  function planCsv(p) {
    const rows = [["term", "key", "part_of", "bytes", "GB", "GiB", "estimate", "host", "formula", "source"]];
    const add = (t, parent) => {
      rows.push([t.label, t.key, parent, t.bytes, gb(t.bytes), gib(t.bytes), Boolean(t.estimate), Boolean(t.host), t.formula, t.source || ""]);
      for (const sub of t.parts || []) add(sub, t.key);
    };
    p.terms.forEach((t) => add(t, ""));
    rows.push(["total", "total", "", p.total, gb(p.total), gib(p.total), "", "", "", ""]);
    return rows.map((r) => r.map(csvCell).join(",")).join("\r\n") + "\r\n";
  }

  function csvCell(v) {
    const s = String(v);
    return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  }

  // The bar over the curve in one standalone SVG, with the page's CSS written into each element.
  function chartSvg() {
    const NS = "http://www.w3.org/2000/svg";
    const parts = [$("membar"), $("memplot")].filter((svg) => !svg.hidden && svg.viewBox.baseVal && svg.viewBox.baseVal.width);
    const width = Math.max(...parts.map((svg) => svg.viewBox.baseVal.width));
    const out = document.createElementNS(NS, "svg");
    let y = 0;
    for (const svg of parts) {
      const g = document.createElementNS(NS, "g");
      g.setAttribute("transform", `translate(0,${y})`);
      g.append(...[...svg.childNodes].map((n) => styledClone(n)));
      out.appendChild(g);
      y += svg.viewBox.baseVal.height + 12;
    }
    Object.entries({ xmlns: NS, width, height: y, viewBox: `0 0 ${width} ${y}`, style: "background:#fff" }).forEach(([k, v]) => out.setAttribute(k, v));
    return new XMLSerializer().serializeToString(out);
  }

  function styledClone(node) {
    const copy = node.cloneNode(true);
    if (node.nodeType !== 1) return copy;
    const from = [node, ...node.querySelectorAll("*")];
    const to = [copy, ...copy.querySelectorAll("*")];
    from.forEach((el, i) => {
      const cs = getComputedStyle(el);
      const style = ["fill", "stroke", "font-size", "font-family", "font-weight"].map((k) => `${k}:${cs.getPropertyValue(k)}`);
      to[i].setAttribute("style", style.join(";"));
    });
    return copy;
  }

  // Rasterised in the page (the policy lets images come from data: addresses), at twice the size.
  function chartPng(svgText) {
    return new Promise((resolve, reject) => {
      const img = new Image();
      img.onload = () => {
        const canvas = document.createElement("canvas");
        canvas.width = img.width * 2;
        canvas.height = img.height * 2;
        const ctx = canvas.getContext("2d");
        ctx.fillStyle = "#fff";
        ctx.fillRect(0, 0, canvas.width, canvas.height);
        ctx.drawImage(img, 0, 0, canvas.width, canvas.height);
        canvas.toBlob(resolve, "image/png");
      };
      img.onerror = () => reject(new Error("the chart could not be drawn as PNG"));
      img.src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(svgText);
    });
  }

  /* ---- start ---------------------------------------------------------------------------- */

  function showInfo(info) {
    $("version").textContent = info.version;
    if (!info.exposed) return;
    $("exposed").hidden = false; // served beyond loopback: "runs locally" would mislead
    const badge = document.querySelector(".top .local");
    if (badge) {
      badge.textContent = "reachable from other machines";
      badge.classList.add("open");
    }
  }

  async function start() {
    const asked = new URLSearchParams(location.search);
    readSource(asked);
    bindTabs();
    if (state.source.kind === "config") $("tab-config").click();
    bindSearch();
    bindPaste();
    bindFile();
    bindOptions();
    bindMemory();
    api("/api/info").then(showInfo, () => {});
    try {
      state.catalog = await api("/api/catalog");
      $("catalog-count").textContent = `${state.catalog.length} models in the bundled catalog`;
    } catch (err) {
      fail(err);
    }
    try {
      await loadOptions();
      readSettings(asked);
    } catch (err) {
      showError($("memory-error"), err);
    }
    showSettings();
    bindExport();
    await loadModel();
  }

  let resized = null;
  window.addEventListener("resize", () => {
    clearTimeout(resized);
    resized = setTimeout(() => { // redraw, no new request
      if (state.plan) renderMemory(state.plan);
      if (state.speed) renderSpeed(state.speed);
    }, 150);
  });
  document.addEventListener("DOMContentLoaded", start);
})();
