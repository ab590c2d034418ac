/* paramcount's charts: plain SVG, no library. A sunburst of the module tree, a stacked bar of
   memory against a GPU, and memory and decode speed against context (on the same axes).
   Every number drawn comes from the API. */
"use strict";

(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const KIND_COLORS = {
    embeddings: "#4c78a8",
    attention: "#f58518",
    recurrent: "#ff9da6",
    feed_forward: "#54a24b",
    experts: "#2f9e8f",
    router: "#b279a2",
    norms: "#e0b12e",
    output_head: "#e45756",
    pooler: "#9d755d",
    other: "#9aa3ad",
    mixed: "#b9c1cc",
  };
  const TERM_COLORS = {
    weights: "#4c78a8",
    kv_cache: "#f58518",
    activations: "#54a24b",
    overhead: "#9aa3ad",
    gradients: "#e45756",
    optimizer: "#b279a2",
    master_weights: "#2f9e8f",
    adapters: "#e0b12e",
  };
  const EXTRA = ["#6f4e7c", "#ca472f", "#0b84a5", "#9dd866", "#ffa056", "#8dddd0"];
  const MAX_COPIES = 128; // a longer run of repeats is drawn as one arc, its copies multiplied

  function el(name, attrs, parent) {
    const node = document.createElementNS(SVG, name);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (parent) parent.appendChild(node);
    return node;
  }

  function clear(svg) {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
  }

  function termColor(key, i) {
    return TERM_COLORS[key] || EXTRA[i % EXTRA.length];
  }

  function fmtInt(n) {
    if (!Number.isSafeInteger(n)) return "≈" + n.toPrecision(6);
    return n.toLocaleString("en-US");
  }

  function short(n) {
    const units = [[1e12, "T"], [1e9, "B"], [1e6, "M"], [1e3, "K"]];
    for (const [v, u] of units) if (n >= v) return (n / v).toFixed(n / v >= 100 ? 0 : n / v >= 10 ? 1 : 2) + u;
    return String(n);
  }

  // The unit the charts state bytes in: the card's (setUnit), one per page as in its tables.
  let UNIT = "GB";
  const SCALE = { GB: 1e9, GiB: 2 ** 30 };
  function setUnit(u) {
    UNIT = u in SCALE ? u : "GB";
  }

  function gb(bytes, digits) {
    return (bytes / SCALE[UNIT]).toFixed(digits === undefined ? 2 : digits);
  }

  // Tick labels kept only where they clear every label kept before them by ``gap`` pixels, the
  // last (the model's limit) first and then from the left: "32K" and "40K" never run together.
  function thin(labels, gap) {
    const kept = [];
    const span = (t) => {
      const w = t.getComputedTextLength() || t.textContent.length * 7;
      const x = Number(t.getAttribute("x"));
      const anchor = t.getAttribute("text-anchor");
      const x0 = anchor === "end" ? x - w : anchor === "middle" ? x - w / 2 : x;
      return [x0, x0 + w];
    };
    for (const t of [...labels.slice(-1), ...labels.slice(0, -1)]) {
      const [a, b] = span(t);
      if (kept.some(([c, d]) => a < d + gap && b > c - gap)) {
        if (t.tick) t.tick.remove();
        t.remove();
      } else {
        kept.push([a, b]);
      }
    }
  }

  let tip = null;
  function tooltip(html, event) {
    if (!tip) {
      tip = document.createElement("div");
      tip.className = "tooltip";
      document.body.appendChild(tip);
    }
    if (html === null) {
      tip.hidden = true;
      return;
    }
    tip.hidden = false;
    tip.innerHTML = html;
    const x = Math.min(event.clientX + 14, window.innerWidth - tip.offsetWidth - 8);
    const y = Math.min(event.clientY + 14, window.innerHeight - tip.offsetHeight - 8);
    tip.style.left = x + "px";
    tip.style.top = y + "px";
  }

  function esc(s) {
    return String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
  }

  /* ---- the module tree as a hierarchy of arcs ----------------------------------------- */

  function addKinds(into, from, mult) {
    for (const [k, v] of Object.entries(from)) into[k] = (into[k] || 0) + v * mult;
  }

  // A node of the API's tree, repeats expanded into their numbered copies (up to MAX_COPIES).
  function build(node, name, path) {
    if (node.type !== "block") {
      return { name, path, value: node.count, kinds: { [node.kind]: node.count }, children: [] };
    }
    const children = [];
    for (const child of node.children) {
      const childPath = path ? path + "." + child.name : child.name;
      if (child.type === "block" && child.repeat !== null && child.repeat !== undefined && child.repeat > 0) {
        children.push(...copies(child, childPath));
      } else {
        const built = build(child, child.name, childPath);
        if (built.value > 0) children.push(built);
      }
    }
    return merge({ name, path, value: sum(children), kinds: kindsOf(children), children });
  }

  function copies(block, path) {
    const n = block.repeat;
    const plain = { ...block, repeat: null };
    if (n > MAX_COPIES) {
      const inner = build(plain, block.name, path);
      const last = block.start + n - 1;
      return inner.value > 0 ? [scaled(inner, n, `${block.name}.${block.start}–${last} (×${n})`)] : [];
    }
    const out = [];
    for (let i = 0; i < n; i++) {
      const idx = block.start + i;
      const copy = build(plain, `${block.name}.${idx}`, `${path}.${idx}`);
      copy.copy = true; // one of a run: named in the tooltip, not on the arc
      if (copy.value > 0) out.push(copy);
    }
    return out;
  }

  function scaled(node, mult, name) {
    const kinds = {};
    addKinds(kinds, node.kinds, mult);
    return {
      ...node,
      name: name || node.name,
      value: node.value * mult,
      kinds,
      children: node.children.map((c) => scaled(c, mult)),
    };
  }

  function sum(children) {
    return children.reduce((a, c) => a + c.value, 0);
  }

  function kindsOf(children) {
    const kinds = {};
    for (const c of children) addKinds(kinds, c.kinds, 1);
    return kinds;
  }

  // A chain of single children ("model" → "layers") is one arc, named by its whole path.
  function merge(node) {
    if (node.children.length === 1 && node.children[0].children.length) {
      const only = node.children[0];
      return { ...only, name: node.name ? node.name + "." + only.name : only.name };
    }
    return node;
  }

  function dominant(kinds, value) {
    let best = "mixed";
    let top = 0;
    for (const [k, v] of Object.entries(kinds)) {
      if (v > top) {
        top = v;
        best = k;
      }
    }
    return value > 0 && top / value >= 0.6 ? best : "mixed";
  }

  function shade(hex, amount) {
    const n = parseInt(hex.slice(1), 16);
    const mix = (c) => Math.round(c + (255 - c) * amount);
    const r = mix(n >> 16), g = mix((n >> 8) & 255), b = mix(n & 255);
    return `rgb(${r},${g},${b})`;
  }

  function arcPath(a0, a1, r0, r1) {
    const large = a1 - a0 > Math.PI ? 1 : 0;
    const p = (a, r) => [r * Math.sin(a), -r * Math.cos(a)].map((v) => v.toFixed(2)).join(",");
    if (a1 - a0 >= 2 * Math.PI - 1e-6) {
      // a full ring: two half arcs
      const mid = a0 + Math.PI;
      return `M${p(a0, r1)}A${r1},${r1} 0 1 1 ${p(mid, r1)}A${r1},${r1} 0 1 1 ${p(a0, r1)}` +
        `M${p(a0, r0)}A${r0},${r0} 0 1 0 ${p(mid, r0)}A${r0},${r0} 0 1 0 ${p(a0, r0)}Z`;
    }
    return `M${p(a0, r1)}A${r1},${r1} 0 ${large} 1 ${p(a1, r1)}L${p(a1, r0)}A${r0},${r0} 0 ${large} 0 ${p(a0, r0)}Z`;
  }

  function kindLines(node, labels) {
    return Object.entries(node.kinds)
      .filter(([, v]) => v > 0)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${esc(labels[k] || k)}: ${fmtInt(v)} (${((100 * v) / node.value).toFixed(1)}%)`)
      .join("<br>");
  }

  function sunburst(svg, tree, labels, total) {
    const root = build(tree, tree.name, "");
    root.name = tree.name;
    const state = { focus: root, stack: [] };
    const draw = () => drawSunburst(svg, state, labels, total, draw);
    draw();
  }

  function drawSunburst(svg, state, labels, total, redraw) {
    clear(svg);
    const W = 460, H = 440, R = 214, depth = 4, r0 = 74;
    svg.setAttribute("viewBox", `${-W / 2} ${-H / 2} ${W} ${H}`);
    const ring = (R - r0) / depth;
    const focus = state.focus;
    const g = el("g", {}, svg);
    const names = el("g", {}, svg); // above every arc, so no later arc paints over a name
    const centre = el("g", { class: "centre" }, svg);
    el("circle", { r: r0 - 3, fill: "#f7f8fb", stroke: "#e3e6eb" }, centre);
    const t1 = el("text", { y: -10, "text-anchor": "middle", "font-size": 12, fill: "#5d6878" }, centre);
    const t2 = el("text", { y: 12, "text-anchor": "middle", "font-size": 17, "font-weight": 680, fill: "#1c2330" }, centre);
    const t3 = el("text", { y: 31, "text-anchor": "middle", "font-size": 11, fill: "#8a94a3" }, centre);
    const say = (node, sub) => {
      t1.textContent = node.name.length > 22 ? "…" + node.name.slice(-21) : node.name;
      t2.textContent = fmtInt(node.value);
      t3.textContent = sub;
    };
    const rest = () => say(focus, state.stack.length ? "click to go back" : `${short(total)} parameters`);
    rest();
    centre.addEventListener("click", () => {
      if (state.stack.length) {
        state.focus = state.stack.pop();
        redraw();
      }
    });
    const walk = (node, a0, a1, d) => {
      if (d > depth || node.value <= 0) return;
      let a = a0;
      for (const child of node.children) {
        const span = ((a1 - a0) * child.value) / node.value;
        if (span > 0.004) drawArc(child, a, a + span, d);
        walk(child, a, a + span, d + 1);
        a += span;
      }
    };
    const drawArc = (node, a0, a1, d) => {
      const kind = dominant(node.kinds, node.value);
      const fill = shade(KIND_COLORS[kind] || KIND_COLORS.other, Math.min(0.55, (d - 1) * 0.16));
      const path = el("path", { d: arcPath(a0, a1, r0 + (d - 1) * ring, r0 + d * ring - 0.5), fill }, g);
      path.dataset.path = node.path;
      const share = ((100 * node.value) / focus.value).toFixed(1) + "%";
      path.addEventListener("mousemove", (ev) => {
        say(node, share + " of " + (focus === state.stack[0] || !state.stack.length ? "the model" : focus.name));
        tooltip(`<b>${esc(node.path || node.name)}</b><br>${fmtInt(node.value)} parameters · ${share}<br>${kindLines(node, labels)}`, ev);
      });
      path.addEventListener("mouseleave", () => {
        rest();
        tooltip(null);
      });
      path.addEventListener("click", () => {
        if (!node.children.length) return;
        state.stack.push(state.focus);
        state.focus = node;
        tooltip(null);
        redraw();
      });
      if (d <= 2 && node.children.length && !node.copy) label(node, a0, a1, r0 + (d - 0.5) * ring);
    };
    const label = (node, a0, a1, r) => {
      const a = (a0 + a1) / 2;
      const name = node.name.split(".").pop();
      const room = Math.min((a1 - a0) * r, 2 * r * Math.sin(Math.min(a1 - a0, Math.PI) / 2)) - 10;
      if (name.length * 6.4 > room) return; // a name that does not fit its arc is left to the tooltip
      const text = el("text", {
        x: (r * Math.sin(a)).toFixed(1), y: (-r * Math.cos(a) + 4).toFixed(1),
        "text-anchor": "middle", "font-size": 11, fill: "#fff", "font-weight": 600,
      }, names);
      text.textContent = name;
    };
    walk(focus, 0, 2 * Math.PI, 1);
  }

  function legend(container, kinds, labels) {
    container.innerHTML = "";
    for (const k of kinds) {
      const span = document.createElement("span");
      span.innerHTML = `<i style="background:${KIND_COLORS[k] || KIND_COLORS.other}"></i>${esc(labels[k] || k)}`;
      container.appendChild(span);
    }
    const mixed = document.createElement("span");
    mixed.innerHTML = `<i style="background:${KIND_COLORS.mixed}"></i>mixed`;
    container.appendChild(mixed);
  }

  /* ---- memory: a stacked bar against the GPU ------------------------------------------- */

  function niceStep(max, count) {
    const raw = max / count;
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const f = raw / mag;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * mag;
  }

  function stripes(svg) {
    const defs = el("defs", {}, svg);
    const p = el("pattern", { id: "est", width: 6, height: 6, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" }, defs);
    el("rect", { width: 6, height: 6, fill: "rgba(255,255,255,0)" }, p);
    el("line", { x1: 0, y1: 0, x2: 0, y2: 6, stroke: "rgba(255,255,255,0.45)", "stroke-width": 2 }, p);
  }

  // A segment's label, drawn only where it fits whole (its measured width against the segment's):
  // the name and GB, else the GB alone, else nothing (the tooltip and the terms table still say it).
  function segmentLabel(svg, key, labels, [x0, width], y) {
    const text = el("text", { x: x0 + 6, y, "font-size": 11.5, fill: "#fff", "font-weight": 600, class: "seg" }, svg);
    text.dataset.key = key;
    for (const label of labels) {
      text.textContent = label;
      if (text.getComputedTextLength() <= width - 12) return;
    }
    svg.removeChild(text);
  }

  // A centred label near either edge slides inwards, so no end of it is cut off by the chart's box.
  function keepInside(text, cx, W) {
    const half = text.getComputedTextLength() / 2;
    const x = Math.min(Math.max(cx, half + 2), W - half - 2);
    text.setAttribute("x", x.toFixed(1));
  }

  function memoryBar(svg, terms, capacity, capacityLabel) {
    clear(svg);
    const W = svg.clientWidth || 1000, H = 74, left = 4, right = 16;
    svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
    stripes(svg);
    const total = terms.reduce((a, t) => a + t.bytes, 0);
    const max = Math.max(total, capacity || 0) * 1.04 || 1;
    const x = (b) => left + ((W - left - right) * b) / max;
    const y = 20, h = 26;
    el("rect", { x: left, y, width: W - left - right, height: h, fill: "#f1f3f6", rx: 4 }, svg);
    let at = 0;
    terms.forEach((t, i) => {
      const x0 = x(at), x1 = x(at + t.bytes);
      const color = termColor(t.key, i);
      const rect = el("rect", { x: x0, y, width: Math.max(0, x1 - x0 - 1), height: h, fill: color }, svg);
      rect.dataset.key = t.key;
      if (t.estimate) el("rect", { x: x0, y, width: Math.max(0, x1 - x0 - 1), height: h, fill: "url(#est)" }, svg);
      const hover = el("rect", { x: x0, y, width: Math.max(0, x1 - x0), height: h, fill: "transparent" }, svg);
      hover.addEventListener("mousemove", (ev) =>
        tooltip(`<b>${esc(t.label)}</b><br>${gb(t.bytes)} ${UNIT}${t.estimate ? "<br>estimate" : ""}`, ev));
      hover.addEventListener("mouseleave", () => tooltip(null));
      const size = gb(t.bytes, 1);
      segmentLabel(svg, t.key, [`${t.key.replace(/_/g, " ")} ${size}`, size], [x0, x1 - x0 - 1], y + 17);
      at += t.bytes;
    });
    if (capacity) {
      const cx = x(capacity);
      el("line", { x1: cx, x2: cx, y1: y - 8, y2: y + h + 6, stroke: "#b42318", "stroke-width": 2, "stroke-dasharray": "4 3" }, svg);
      const text = el("text", { x: cx, y: 10, "font-size": 11.5, fill: "#b42318", "text-anchor": "middle", "font-weight": 600, class: "capacity" }, svg);
      text.textContent = capacityLabel;
      keepInside(text, cx, W);
    }
    const one = SCALE[UNIT];
    const step = niceStep(max / one, 6);
    const labels = [];
    for (let v = 0; v * one <= max; v += step) {
      const tx = x(v * one);
      const tick = el("line", { x1: tx, x2: tx, y1: y + h, y2: y + h + 4, stroke: "#cfd4dc" }, svg);
      const text = el("text", { x: tx, y: y + h + 17, "font-size": 11, fill: "#8a94a3", "text-anchor": v === 0 ? "start" : "middle" }, svg);
      text.textContent = `${+v.toFixed(2)} ${UNIT}`;
      labels.push(Object.assign(text, { tick }));
    }
    thin([...labels.slice(1), labels[0]], 8); // the zero kept first
  }

  /* ---- memory against context ------------------------------------------------------------ */

  function tokens(n) {
    if (n >= 1048576 && n % 1048576 === 0) return n / 1048576 + "M";
    if (n >= 1024 && n % 1024 === 0) return n / 1024 + "K";
    return String(n);
  }

  // The axes both plots against context draw: context on a log2 x (ticks at each point, labels
  // thinned so "32K" and "40K" never run together, ``xTitle`` at its end) and a linear y from 0 to
  // ``ymax`` (grid lines every nice step of ``one``, each labelled by ``yText``). Returns the scales.
  function contextAxes(svg, box, xs, ymax, one, yText, xTitle) {
    const { W, H, m } = box;
    const lx = (c) => Math.log2(c);
    const x0 = lx(xs[0]), x1 = lx(xs[xs.length - 1]);
    const x = (c) => m.l + ((W - m.l - m.r) * (lx(c) - x0)) / (x1 - x0 || 1);
    const y = (v) => H - m.b - ((H - m.t - m.b) * v) / ymax;
    const grid = el("g", { class: "grid" }, svg);
    const axis = el("g", { class: "axis" }, svg);
    const step = niceStep(ymax / one, 5);
    for (let v = 0; v * one <= ymax; v += step) {
      el("line", { x1: m.l, x2: W - m.r, y1: y(v * one), y2: y(v * one) }, grid);
      const t = el("text", { x: m.l - 6, y: y(v * one) + 4, "text-anchor": "end", class: "ytick" }, axis);
      t.textContent = yText(+v.toFixed(2));
    }
    const labels = xs.map((c) => {
      const tick = el("line", { x1: x(c), x2: x(c), y1: H - m.b, y2: H - m.b + 4 }, axis);
      const t = el("text", { x: x(c), y: H - m.b + 17, "text-anchor": "middle", class: "xtick" }, axis);
      t.textContent = tokens(c);
      return Object.assign(t, { tick });
    });
    thin(labels, 6);
    el("line", { x1: m.l, x2: W - m.r, y1: H - m.b, y2: H - m.b }, axis);
    const title = el("text", { x: W - m.r, y: H - 4, "text-anchor": "end" }, axis);
    title.textContent = xTitle;
    return { x, y, axis };
  }

  // A transparent layer over the plot area calling ``say(i)`` with the point nearest the pointer.
  function hoverNearest(svg, box, xs, x, say) {
    const { W, H, m } = box;
    const hover = el("rect", { x: m.l, y: m.t, width: W - m.l - m.r, height: H - m.t - m.b, fill: "transparent" }, svg);
    hover.addEventListener("mousemove", (ev) => {
      const r = svg.getBoundingClientRect();
      const px = ((ev.clientX - r.left) * W) / r.width;
      let best = 0;
      xs.forEach((c, i) => {
        if (Math.abs(x(c) - px) < Math.abs(x(xs[best]) - px)) best = i;
      });
      tooltip(say(best), ev);
    });
    hover.addEventListener("mouseleave", () => tooltip(null));
  }

  function memoryPlot(svg, curve, capacity, capacityLabel, current) {
    clear(svg);
    const W = svg.clientWidth || 560, H = 280, m = { l: 52, r: 14, t: 14, b: 34 };
    svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
    const xs = curve.contexts;
    if (!xs.length) return;
    const totals = xs.map((_, i) => curve.series.reduce((a, s) => a + s.bytes[i], 0));
    const peak = Math.max(...totals);
    const showCap = capacity && capacity <= peak * 3; // a far-off capacity would flatten the curve
    const ymax = Math.max(peak, showCap ? capacity : 0) * 1.08 || 1;
    const box = { W, H, m };
    const { x, y } = contextAxes(svg, box, xs, ymax, SCALE[UNIT], (v) => `${v} ${UNIT}`, "context (tokens, log scale)");
    const below = xs.map(() => 0);
    curve.series.forEach((s, k) => {
      const top = below.map((b, i) => b + s.bytes[i]);
      const pts = xs.map((c, i) => `${x(c).toFixed(1)},${y(top[i]).toFixed(1)}`);
      const back = xs.map((c, i) => `${x(c).toFixed(1)},${y(below[i]).toFixed(1)}`).reverse();
      el("polygon", { points: [...pts, ...back].join(" "), fill: termColor(s.key, k), "fill-opacity": 0.85 }, svg);
      top.forEach((v, i) => (below[i] = v));
    });
    el("polyline", { points: xs.map((c, i) => `${x(c)},${y(totals[i])}`).join(" "), fill: "none", stroke: "#1c2330", "stroke-width": 1.5 }, svg);
    if (showCap) {
      el("line", { x1: m.l, x2: W - m.r, y1: y(capacity), y2: y(capacity), stroke: "#b42318", "stroke-width": 1.5, "stroke-dasharray": "5 4" }, svg);
      const t = el("text", { x: m.l + 6, y: y(capacity) - 5, "font-size": 11, fill: "#b42318", "font-weight": 600 }, svg);
      t.textContent = capacityLabel;
    } else if (capacity) {
      const t = el("text", { x: m.l + 6, y: m.t + 4, "font-size": 11, fill: "#b42318", "font-weight": 600 }, svg);
      t.textContent = `${capacityLabel}, far above`;
    }
    if (current && current >= xs[0] && current <= xs[xs.length - 1]) {
      el("line", { x1: x(current), x2: x(current), y1: m.t, y2: H - m.b, stroke: "#3451b2", "stroke-width": 1.5 }, svg);
    }
    hoverNearest(svg, box, xs, x, (best) => {
      const rows = curve.series.map((s) => `${esc(s.label)}: ${gb(s.bytes[best])} ${UNIT}`).join("<br>");
      return `<b>${fmtInt(xs[best])} tokens</b>: ${gb(totals[best])} ${UNIT}<br>${rows}`;
    });
  }

  /* ---- decode speed against context -------------------------------------------------------- */

  const SPEED_COLORS = { estimate: "#3451b2", bound: "#8a94a3" };

  function rate(v) {
    return v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2);
  }

  // Decode tokens/s per stream at each KV depth: the estimate as a solid line, the upper bound
  // dashed (a bound is never drawn as an estimate); the context planned marked. Axes as memoryPlot's.
  function speedPlot(svg, curve, current) {
    clear(svg);
    const W = svg.clientWidth || 560, H = 240, m = { l: 52, r: 14, t: 14, b: 34 };
    svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
    const xs = curve.contexts;
    const values = [...curve.estimate, ...curve.bound].filter((v) => v !== null);
    if (!xs.length || !values.length) return;
    const ymax = Math.max(...values) * 1.15 || 1; // headroom: the axis title clears the lines
    const box = { W, H, m };
    const { x, y, axis } = contextAxes(svg, box, xs, ymax, 1, String, "KV depth (tokens, log scale)");
    const yl = el("text", { x: m.l + 6, y: m.t + 4, "text-anchor": "start", class: "ylabel" }, axis);
    yl.textContent = "decode tok/s per stream";
    for (const key of ["bound", "estimate"]) {
      const pts = xs.map((c, i) => [c, curve[key][i]]).filter(([, v]) => v !== null);
      if (!pts.length) continue;
      const line = el("polyline", {
        points: pts.map(([c, v]) => `${x(c).toFixed(1)},${y(v).toFixed(1)}`).join(" "), fill: "none",
        stroke: SPEED_COLORS[key], "stroke-width": key === "estimate" ? 2 : 1.5,
        "stroke-dasharray": key === "bound" ? "5 4" : "none",
      }, svg);
      line.dataset.series = key;
    }
    if (current && current >= xs[0] && current <= xs[xs.length - 1]) {
      el("line", { x1: x(current), x2: x(current), y1: m.t, y2: H - m.b, stroke: "#3451b2", "stroke-width": 1, "stroke-opacity": 0.5 }, svg);
    }
    hoverNearest(svg, box, xs, x, (best) => {
      const est = curve.estimate[best], bound = curve.bound[best];
      const said = [est === null ? "no estimate" : `estimate ${rate(est)} tok/s`,
        bound === null ? "" : `upper bound ${rate(bound)} tok/s`].filter(Boolean).join("<br>");
      return `<b>${fmtInt(xs[best])} tokens deep</b><br>${said}`;
    });
  }

  window.Charts = {
    sunburst, legend, memoryBar, memoryPlot, speedPlot, SPEED_COLORS, rate, setUnit, termColor, KIND_COLORS, fmtInt, short, esc,
  };
})();
