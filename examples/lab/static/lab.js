// Shared helpers of the attention lab page: talking to the server, showing numbers, heat maps, tabs.
// The page does no attention arithmetic: every number it shows comes from the server (minigrad).
"use strict";

const Lab = {
  // Each tab trains its own model on the server: it sends this id with every training request.
  session: Array.from(crypto.getRandomValues(new Uint8Array(12)), (b) => b.toString(16).padStart(2, "0")).join(""),
  panels: {},  // name -> {show()} registered by the panel scripts
};

// POST a JSON request; resolves to the answer, or rejects with an Error carrying the server's message.
Lab.api = async function (route, request = {}) {
  let response;
  try {
    response = await fetch(route, {
      method: "POST",
      headers: {"Content-Type": "application/json"},
      body: JSON.stringify(request),
    });
  } catch (failure) {
    Lab.offline(true);
    throw new Error("The lab server does not answer. Is `python examples/attention_lab.py` still running?");
  }
  Lab.offline(false);
  let answer;
  try {
    answer = await response.json();
  } catch (failure) {
    throw new Error(`The server sent something that is not JSON (HTTP ${response.status}).`);
  }
  if (!response.ok) throw new Error(answer.error || `HTTP ${response.status}`);
  return answer;
};

Lab.offline = function (down) {
  const banner = document.getElementById("offline");
  banner.hidden = !down;
  banner.textContent = down ? "The lab server does not answer. Start it again with: python examples/attention_lab.py" : "";
};

Lab.showError = function (id, error) {
  const box = document.getElementById(id);
  box.hidden = !error;
  box.textContent = error ? error.message || String(error) : "";
};

// Numbers as text: fixed decimals, and "−0.00" shown as "0.00". (Formatting only.)
Lab.fmt = function (value, decimals = 2) {
  if (value === null || value === undefined) return "—";
  const text = value.toFixed(decimals);
  return /^-0\.?0*$/.test(text) ? text.slice(1) : text.replace("-", "−");
};
Lab.vec = (values, decimals = 2) => "[" + values.map((v) => Lab.fmt(v, decimals)).join(", ") + "]";
Lab.compact = function (value) {  // integers without decimals, others with two: for the chapter's small numbers
  return Number.isInteger(value) ? Lab.fmt(value, 0) : Lab.fmt(value, 2);
};

Lab.el = function (tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name === "class") node.className = value;
    else if (name === "text") node.textContent = value;
    else if (name === "style") Object.assign(node.style, value);
    else node.setAttribute(name, value);
  }
  for (const child of children) node.append(child);
  return node;
};

// A colour for value / scale in [-1, 1]: white at 0, red for positive, blue for negative.
Lab.colour = function (value, scale) {
  if (value === null || !scale) return "#ffffff";
  const t = Math.max(-1, Math.min(1, value / scale));
  const [r, g, b] = t >= 0 ? [198, 40, 40] : [31, 95, 191];
  const a = Math.abs(t);
  const mix = (c) => Math.round(255 + (c - 255) * a);
  return `rgb(${mix(r)}, ${mix(g)}, ${mix(b)})`;
};

Lab.largest = (matrix) => Math.max(0, ...matrix.flat().map((v) => (v === null ? 0 : Math.abs(v))));

// A heat map of a matrix. options: rows, columns (labels), cell (px), decimals (show numbers),
// scale (default: the largest |value|), positive (a 0..1 scale for weights), classOf(i, j).
Lab.heat = function (matrix, options = {}) {
  const cell = options.cell || 44;
  const rows = options.rows, columns = options.columns;
  const scale = options.scale !== undefined ? options.scale : Lab.largest(matrix);
  const grid = Lab.el("div", {class: "heat"});
  // Cells that show numbers are at least `cell` wide and as wide as their text: "−0.813" fits.
  const column = options.decimals !== undefined ? `minmax(${cell}px, max-content)` : `${cell}px`;
  const template = `${rows ? "auto " : ""}repeat(${matrix[0].length}, ${column})`;
  grid.style.gridTemplateColumns = template;
  if (columns) {
    if (rows) grid.append(Lab.el("div", {class: "label"}));
    for (const name of columns) grid.append(Lab.el("div", {class: "label top", text: name}));
  }
  matrix.forEach((row, i) => {
    if (rows) grid.append(Lab.el("div", {class: "label", text: rows[i]}));
    row.forEach((value, j) => {
      const box = Lab.el("div", {class: "cell " + (options.classOf ? options.classOf(i, j) : ""),
                                 title: value === null ? "not a number" : String(value)});
      box.style.minHeight = `${cell}px`;
      box.style.background = Lab.colour(value, scale);
      if (options.decimals !== undefined) box.textContent = Lab.fmt(value, options.decimals);
      box.dataset.value = value === null ? "" : String(value);
      grid.append(box);
    });
  });
  return grid;
};

// Tabs: one panel at a time, so each fills a projected screen.
Lab.showPanel = function (name) {
  for (const tab of document.querySelectorAll("#tabs button")) {
    const selected = tab.dataset.panel === name;
    tab.setAttribute("aria-selected", String(selected));
    document.getElementById(`panel-${tab.dataset.panel}`).hidden = !selected;
  }
  if (Lab.panels[name] && Lab.panels[name].show) Lab.panels[name].show();
};

document.addEventListener("DOMContentLoaded", () => {
  for (const tab of document.querySelectorAll("#tabs button")) {
    tab.addEventListener("click", () => Lab.showPanel(tab.dataset.panel));
  }
  for (const panel of Object.values(Lab.panels)) if (panel.start) panel.start();
  Lab.showPanel("by-hand");
});
