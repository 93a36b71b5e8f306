// Panel 2, "Train the four matrices": buttons send steps to the server; it answers with the
// loss history, the four matrices, their gradients and updates, and the attention of a fixed sentence.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const SVG = "http://www.w3.org/2000/svg";
  let busy = false;

  async function send(route, extra = {}) {
    if (busy) return;
    busy = true;
    for (const id of ["train-one", "train-hundred", "train-reset"]) $(id).disabled = true;
    try {
      render(await Lab.api(route, {session: Lab.session, ...extra}));
      Lab.showError("train-error", null);
    } catch (error) {
      Lab.showError("train-error", error);
    } finally {
      busy = false;
      for (const id of ["train-one", "train-hundred", "train-reset"]) $(id).disabled = false;
    }
  }

  const step = (steps) => send("/api/train/step", {steps, learning_rate: $("learning-rate").value});

  function render(state) {
    $("train-status").textContent =
      `step ${state.step} · loss ${Lab.fmt(state.loss, 4)} · accuracy ${Lab.fmt(state.accuracy, 2)}`;
    if (state.message) Lab.showError("train-error", new Error(state.message));
    drawLoss(state.losses);
    $("sentence-caption").textContent = `Attention weights of “${state.sentence.join(" ")}” (row = the word asking)`;
    $("sentence-weights").replaceChildren(Lab.heat(state.sentence_weights,
      {rows: state.sentence, columns: state.sentence, decimals: 2, scale: 1, cell: 52}));
    const received = Lab.el("div", {class: "received"});
    received.append(Lab.el("div", {class: "status", text: "each word receives (column means)", style: {gridColumn: "1 / 4"}}));
    state.sentence.forEach((word, j) => {
      const bar = Lab.el("div", {class: "bar"});
      bar.style.width = `calc(${state.received[j]} * 100%)`;
      bar.style.margin = "0";
      received.append(Lab.el("div", {text: word}), Lab.el("div", {class: "track"}, bar),
                      Lab.el("div", {class: "status", text: Lab.fmt(state.received[j], 2)}));
    });
    $("sentence-received").replaceChildren(received);
    $("update-lr").textContent = state.learning_rate === null ? "(no step yet)" : `(last step: lr = ${state.learning_rate})`;
    drawMatrices(state.matrices);
  }

  // One column per matrix, one row per quantity: W now, its gradient, the update the step made.
  function drawMatrices(matrices) {
    const entries = Object.entries(matrices);
    const head = Lab.el("tr", {}, Lab.el("th"), ...entries.map(([, m]) => {
      const label = Lab.el("th", {class: "name"}, "W");
      label.append(Lab.el("sub", {text: m.label.slice(2)}));
      return label;
    }));
    const kinds = [["value", "W now"], ["gradient", "grad of the last step"], ["update", "update = W now − W before"]];
    const rows = kinds.map(([kind, title]) => Lab.el("tr", {}, Lab.el("th", {class: "kind", text: title}),
      ...entries.map(([name, m]) => {
        const cell = Lab.el("td", {"data-matrix-name": name, "data-kind": kind});
        if (m[kind] === null) {
          cell.append(Lab.el("div", {class: "status", text: "press “One step”"}));
        } else {
          const scale = Lab.largest(m[kind]);
          cell.append(Lab.heat(m[kind], {cell: 24, scale}),
                      Lab.el("div", {class: "range", text: `largest |entry| ${Lab.fmt(scale, 4)}`}));
        }
        return cell;
      })));
    $("matrices-table").replaceChildren(head, ...rows);
  }

  function drawLoss(losses) {
    const svg = $("loss-curve");
    const width = 460, height = 250, left = 48, bottom = 30, top = 14, right = 16;
    const finite = losses.filter((v) => v !== null);
    const highest = Math.max(...finite, 1e-9);
    const steps = Math.max(losses.length - 1, 1);
    // Screen coordinates of (step, loss): a drawing, not a computation of the lab's numbers.
    const x = (i) => left + (i / steps) * (width - left - right);
    const y = (v) => top + (1 - v / highest) * (height - top - bottom);
    const parts = [];
    const node = (tag, attributes, text) => {
      const element = document.createElementNS(SVG, tag);
      for (const [k, v] of Object.entries(attributes)) element.setAttribute(k, v);
      if (text !== undefined) element.textContent = text;
      parts.push(element);
    };
    node("line", {class: "axis", x1: left, y1: height - bottom, x2: width - right, y2: height - bottom});
    node("line", {class: "axis", x1: left, y1: top, x2: left, y2: height - bottom});
    node("text", {x: left - 6, y: top + 10, "text-anchor": "end"}, Lab.fmt(highest, 2));
    node("text", {x: left - 6, y: height - bottom, "text-anchor": "end"}, "0");
    node("text", {x: width - right, y: height - 8, "text-anchor": "end"}, `step ${losses.length - 1}`);
    node("text", {x: left, y: height - 8}, "step 0");
    const points = losses.map((v, i) => (v === null ? null : `${x(i).toFixed(1)},${y(v).toFixed(1)}`)).filter(Boolean);
    node("polyline", {class: "line", points: points.join(" ")});
    if (points.length === 1) {  // step 0: one point, drawn as a dot
      const [cx, cy] = points[0].split(",");
      node("circle", {cx, cy, r: 5, fill: "#c62828"});
    }
    const last = finite[finite.length - 1];
    node("text", {x: width - right, y: top + 10, "text-anchor": "end", id: "loss-now"}, `loss ${Lab.fmt(last, 4)}`);
    svg.replaceChildren(...parts);
  }

  Lab.panels.train = {
    async start() {
      $("train-one").addEventListener("click", () => step(1));
      $("train-hundred").addEventListener("click", () => step(100));
      $("train-reset").addEventListener("click", () => send("/api/train/reset"));
      try {
        const task = await Lab.api("/api/train/task");
        $("task-text").textContent =
          `The task: ${task.train_size} sentences of ${task.sentence_length} words, each with one sentiment word ` +
          `(${task.positive.join(", ")}: positive; ${task.negative.join(", ")}: negative) among filler words ` +
          `(${task.fillers.join(", ")}). Model: SelfAttention(${task.features}) → mean over the words → Linear(${task.features}, 2), ` +
          `trained by plain gradient descent on all ${task.train_size} sentences at once.`;
        $("graph-sentence").textContent = task.sentence.join(" ");
      } catch (error) {
        Lab.showError("train-error", error);
      }
    },
    shown: false,
    show() {
      if (!this.shown) {
        this.shown = true;
        send("/api/train/state");
      }
    },
  };
})();
