// Panel 1, "By hand": the inputs are sent as typed; the server (minigrad) sends back every step.
"use strict";

(function () {
  const MATRICES = [["query_weight", "Q"], ["key_weight", "K"], ["value_weight", "V"], ["output_weight", "O"]];
  // Slider positions -> temperatures (a lookup, so the slider needs no arithmetic).
  const TEMPERATURES = [0.1, 0.2, 0.3, 0.5, 0.7, 1, 1.5, 2, 3, 5, 10];
  let latest = 0;  // the number of the most recent request: older answers are ignored
  let timer = null;

  const $ = (id) => document.getElementById(id);
  const textInput = (value, label, extra = "") =>
    Lab.el("input", {type: "text", value: String(value), "aria-label": label, class: extra, inputmode: "decimal"});

  function buildControls(defaults) {
    const body = $("word-inputs").tBodies[0];
    body.replaceChildren(Lab.el("tr", {}, Lab.el("th", {text: "word"}), Lab.el("th", {text: "x₁"}),
                                Lab.el("th", {text: "x₂"})));
    defaults.words.forEach((word, i) => {
      const name = textInput(word, `word ${i + 1}`, "word");
      name.setAttribute("maxlength", "16");
      name.removeAttribute("inputmode");
      body.append(Lab.el("tr", {"data-word": i}, Lab.el("td", {}, name),
        ...defaults.embeddings[i].map((v, j) => Lab.el("td", {}, textInput(v, `x${j + 1} of word ${i + 1}`, "vector")))));
    });
    const matrices = $("matrix-inputs");
    matrices.replaceChildren();
    for (const [name, letter] of MATRICES) {
      const grid = Lab.el("div", {class: "bracket", "data-matrix": name});
      defaults[name].forEach((row, i) => row.forEach((v, j) =>
        grid.append(textInput(v, `W_${letter} row ${i + 1} column ${j + 1}`))));
      const label = Lab.el("span", {class: "name"}, "W");
      label.append(Lab.el("sub", {text: letter}));
      matrices.append(Lab.el("div", {class: "matrix-input"}, label, grid));
    }
    const choice = $("query-choice");
    choice.replaceChildren();
    defaults.words.forEach((word, i) => {
      const radio = Lab.el("input", {type: "radio", name: "query", value: String(i)});
      radio.checked = i === defaults.query;
      choice.append(Lab.el("label", {}, radio, " ", Lab.el("span", {text: word})));
    });
    $("temperature").value = String(TEMPERATURES.indexOf(defaults.temperature));
    $("causal").checked = defaults.causal;
    for (const radio of document.querySelectorAll("input[name=heads]")) radio.checked = radio.value === String(defaults.heads);
  }

  function gather() {
    const rows = [...$("word-inputs").querySelectorAll("tr[data-word]")];
    const request = {
      words: rows.map((row) => row.querySelector("input.word").value),
      embeddings: rows.map((row) => [...row.querySelectorAll("input.vector")].map((input) => input.value)),
      query: Number(document.querySelector("input[name=query]:checked").value),
      temperature: TEMPERATURES[Number($("temperature").value)],
      causal: $("causal").checked,
      heads: Number(document.querySelector("input[name=heads]:checked").value),
    };
    for (const [name] of MATRICES) {
      const cells = [...document.querySelectorAll(`[data-matrix=${name}] input`)].map((input) => input.value);
      request[name] = [cells.slice(0, 2), cells.slice(2, 4)];
    }
    return request;
  }

  async function update() {
    const number = ++latest;
    const request = gather();
    $("temperature-value").textContent = `T = ${request.temperature}`;
    try {
      const result = await Lab.api("/api/by_hand", request);
      if (number !== latest) return;
      Lab.showError("by-hand-error", null);
      document.querySelector("#panel-by-hand .results").classList.remove("stale");
      render(result);
    } catch (error) {
      if (number !== latest) return;
      Lab.showError("by-hand-error", new Error(error.message + "\n(showing the numbers of the last valid input)"));
      document.querySelector("#panel-by-hand .results").classList.add("stale");
    }
  }

  function schedule(delay) {
    clearTimeout(timer);
    timer = setTimeout(update, delay);
  }

  // -- drawing the answer ------------------------------------------------------------------

  function render(r) {
    const asking = r.words[r.query];
    for (const [i, span] of [...$("query-choice").querySelectorAll("span")].entries()) span.textContent = r.words[i];
    renderQKV(r);
    $("head-steps").replaceChildren(...r.head_results.map((head, h) => headBlock(r, head, h, asking)));
    renderOutput(r, asking);
    renderMatrices(r);
    $("module-check").textContent =
      `nn.SelfAttention(2, num_heads=${r.heads}, causal=${r.causal ? "True" : "False"}) with the same matrices ` +
      `(W_Q divided by T) gives the same weights and outputs: largest difference ${r.module.largest_difference.toExponential(1)}.`;
  }

  function renderQKV(r) {
    const header = Lab.el("tr", {}, Lab.el("th", {text: "word"}), Lab.el("th", {text: "x"}),
      Lab.el("th", {text: "q = x W_Q"}), Lab.el("th", {text: "k = x W_K"}), Lab.el("th", {text: "v = x W_V"}));
    const rows = r.words.map((word, i) => Lab.el("tr", {class: i === r.query ? "asking" : ""},
      Lab.el("th", {class: "row", text: word}),
      ...[r.embeddings, r.queries, r.keys, r.values].map((m) => Lab.el("td", {text: vec(m[i])}))));
    $("qkv-table").replaceChildren(header, ...rows);
  }

  const vec = (values) => "[" + values.map(Lab.compact).join(", ") + "]";
  const pick = (vector, features) => features.map((f) => vector[f]);

  function headBlock(r, head, h, asking) {
    const q = r.query;
    const features = head.features.map((f) => `x${["₁", "₂"][f]}`).join(", ");
    const title = r.heads === 1
      ? `Steps 2–4 · how much “${asking}” attends to each word`
      : `Head ${h + 1} · only feature ${head.features[0] + 1} of q, k, v (${features})`;
    const block = Lab.el("div", {class: "head-block", "data-head": String(h)}, Lab.el("h2", {text: title}));
    block.append(Lab.el("div", {class: "formula"}, `q_${asking} = ${vec(pick(r.queries[q], head.features))}`));
    const table = Lab.el("table", {class: "numbers"});
    table.append(Lab.el("tr", {}, Lab.el("th"), ...r.words.map((w) => Lab.el("th", {text: w}))));
    const row = (label, cells, cls = "") => Lab.el("tr", {class: cls},
      Lab.el("th", {class: "row step-label", text: label}), ...cells);
    const allowed = r.allowed[q];
    const plain = (values, decimals) => values.map((v, j) =>
      Lab.el("td", {class: allowed[j] ? "value" : "value masked", text: Lab.fmt(v, decimals), "data-value": String(v),
                    title: allowed[j] ? String(v) : "masked: a later word, weight 0"}));
    table.append(row("key k_j", r.keys.map((k) => Lab.el("td", {text: vec(pick(k, head.features))}))));
    table.append(row(`Step 2 · score q_${asking} · k_j`, plain(head.scores[q], 2), "scores"));
    table.append(row(`Step 3 · ÷ √${r.head_dim} = ÷ ${Lab.fmt(r.sqrt_head_dim, 3)}`, plain(head.scaled[q], 3), "scaled"));
    if (r.temperature !== 1) table.append(row(`÷ T = ÷ ${r.temperature}`, plain(head.tempered[q], 3), "tempered"));
    table.append(row("Step 4 · softmax: weight", plain(head.weights[q], 4), "weights"));
    table.append(row("", head.weights[q].map((w) => {
      const bar = Lab.el("div", {class: "bar"});
      bar.style.width = `calc(${w} * 100%)`;  // the bar's length is the weight itself
      return Lab.el("td", {class: "bar-cell"}, bar);
    }), "bars"));
    table.append(row("value v_j", r.values.map((v) => Lab.el("td", {text: vec(pick(v, head.features))}))));
    block.append(table);
    // The weights as step 4 shows them (4 decimals), the sum to 2: a student adding up the
    // terms shown gets the sum shown (rounded weights, 0.93·… + 0.01·…, would not).
    const terms = head.weights[q].map((w, j) => `${Lab.fmt(w, 4)}·${vec(pick(r.values[j], head.features))}`).join(" + ");
    const sum = Lab.el("div", {class: "formula"}, `Σ weight·v = ${terms} ≈ `);
    sum.append(Lab.el("b", {text: "[" + head.context[q].map((v) => Lab.fmt(v, 2)).join(", ") + "]"}));
    block.append(sum);
    return block;
  }

  function renderOutput(r, asking) {
    const q = r.query;
    $("output-formula").textContent = r.heads === 1
      ? "(the weighted sum times W_O)" : "(merge the heads, then times W_O)";
    const line = $("output-line");
    const merged = "[" + r.merged[q].map((v) => Lab.fmt(v, 2)).join(", ") + "]";
    line.textContent = r.heads === 1
      ? `out_${asking} = ${merged} W_O = `
      : `out_${asking} = [head 1 | head 2] W_O = ${merged} W_O = `;
    line.append(Lab.el("b", {text: "[" + r.outputs[q].map((v) => Lab.fmt(v, 2)).join(", ") + "]"}));
  }

  function renderMatrices(r) {
    const figures = r.head_results.map((head, h) => {
      const map = Lab.heat(head.weights, {rows: r.words, columns: r.words, decimals: 2, scale: 1, cell: 58,
        classOf: (i) => (i === r.query ? "asking" : "")});
      return r.heads === 1 ? map : Lab.el("div", {}, Lab.el("div", {class: "status", text: `head ${h + 1}`}), map);
    });
    $("weights-matrix").replaceChildren(...figures);
    const grid = Lab.el("div", {class: "heat"});
    grid.style.gridTemplateColumns = `auto repeat(${r.words.length}, 58px)`;
    grid.append(Lab.el("div", {class: "label"}), ...r.words.map((w) => Lab.el("div", {class: "label top", text: w})));
    r.allowed.forEach((row, i) => {
      grid.append(Lab.el("div", {class: "label", text: r.words[i]}));
      for (const yes of row) {
        const cell = Lab.el("div", {class: `cell ${yes ? "yes" : "no"}`, text: yes ? "✓" : "✕"});
        cell.style.height = "58px";
        grid.append(cell);
      }
    });
    $("mask-grid").replaceChildren(grid);
  }

  Lab.panels["by-hand"] = {
    async start() {
      const form = $("by-hand-controls");
      form.addEventListener("submit", (event) => event.preventDefault());
      form.addEventListener("input", (event) => schedule(event.target.type === "text" ? 250 : 0));
      form.addEventListener("change", () => schedule(0));
      $("chapter-example").addEventListener("click", async () => {
        buildControls(await Lab.api("/api/by_hand/defaults"));
        schedule(0);
      });
      try {
        buildControls(await Lab.api("/api/by_hand/defaults"));
        await update();
      } catch (error) {
        Lab.showError("by-hand-error", error);
      }
    },
  };
})();
