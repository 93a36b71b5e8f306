// Panel 3, "The backward walk, step by step": the steps mg.viz.replay noted while the server ran
// loss.backward() (their order, the gradient arriving at each op, the gradient each input
// receives and the running sums), replayed on the drawn graph. The page adds no number of its
// own: it lights up the SVG node whose <title> is the step's id and formats what was sent.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const PLAY_MILLISECONDS = 350;
  let walk = null;  // {steps, matrices, nodes: id -> <g>, edges: [{tail, head, element}], position}
  let timer = null;

  // Nested lists of any depth as rows for a heat map: a number is one cell, a vector one row,
  // anything deeper is its last axis across and the others stacked (a reshape, no arithmetic).
  function rows(values) {
    if (!Array.isArray(values)) return [[values]];
    if (!Array.isArray(values[0])) return [values];
    return values.flatMap((part) => rows(part));
  }

  const shapeText = (shape) => (shape.length === 0 ? "scalar" : `(${shape.join(", ")}${shape.length === 1 ? "," : ""})`);

  function gradientBox(gradient, cell) {
    const box = Lab.el("span", {class: "walk-gradient"});
    box.append(`${shapeText(gradient.shape)} · norm ${Lab.fmt(gradient.norm, 4)}`);
    if (gradient.values !== null) {
      const matrix = rows(gradient.values);
      // numbers in the cells up to 8 entries: three decimals up to 4 across, else two
      const decimals = matrix.length * matrix[0].length > 8 ? undefined : matrix[0].length <= 4 ? 3 : 2;
      box.append(Lab.heat(matrix, {cell, decimals}));
    }
    return box;
  }

  function describe(step) {
    const details = [Lab.el("h3", {text: `Step ${step.index + 1} of ${walk.steps.length} · ${step.op} (${step.id})` +
                                          (step.module ? ` in ${step.module}` : "")})];
    step.arriving.forEach((gradient, output) => {
      const which = step.arriving.length > 1 ? ` at output ${output}` : "";
      details.push(Lab.el("p", {class: "walk-line"}, Lab.el("b", {text: `gradient arriving${which}: `}), gradientBox(gradient, 14)));
    });
    // One block per input: its name across the panel (never cut), then what it receives and the
    // sum so far, one under the other, so that the heat maps have the panel's whole width.
    const table = Lab.el("table", {class: "numbers walk-inputs"});
    for (const input of step.inputs) {
      const name = Lab.el("th", {class: "row", colspan: "2"}, input.name,
        Lab.el("span", {class: "status", text: input.id ? ` (${input.id})` : ""}));
      const row = Lab.el("tr", {"data-input-id": input.id || ""}, name);
      table.append(row);
      if (input.grad === null) {
        row.append(Lab.el("td", {class: "status", text: "no gradient: it needs none"}));
        continue;
      }
      const uses = `${input.uses} use${input.uses > 1 ? "s" : ""}`;
      const total = Lab.el("div", {class: input.uses > 1 ? "walk-shared" : ""},
        Lab.el("div", {class: "status", text: `sum so far, ${input.uses > 1 ? `${uses}: the gradients add up` : uses}`}),
        gradientBox(input.total, 14));
      table.append(Lab.el("tr", {}, Lab.el("td", {colspan: "2"},
        Lab.el("div", {class: "status", text: "receives"}), gradientBox(input.grad, 14), total)));
    }
    details.push(table);
    return details;
  }

  // The four matrices: the sum the walk has brought each so far, and at the end its .grad.
  function drawMatrices() {
    const reached = {};  // by name: with a module collapsed, its weights share the box's id
    for (const step of walk.steps.slice(0, walk.position + 1)) {
      for (const input of step.inputs) if (input.grad !== null) reached[input.name] = input.total;
    }
    const cells = Object.entries(walk.matrices).map(([name, matrix]) => {
      const cell = Lab.el("div", {"data-walk-matrix": name});
      const label = Lab.el("div", {class: "name"}, "W");
      label.append(Lab.el("sub", {text: matrix.label.slice(2)}));
      cell.append(label);
      const total = reached[matrix.name];
      if (!total) {
        cell.append(Lab.el("div", {class: "status", text: "not reached yet"}));
        return cell;
      }
      cell.dataset.reached = "true";
      cell.append(Lab.heat(total.values, {cell: 20, scale: Lab.largest(total.values)}),
                  Lab.el("div", {class: "status", text: `sum of what arrived: norm ${Lab.fmt(total.norm, 4)}`}),
                  Lab.el("div", {class: "status walk-check",
                                 text: `its .grad: largest difference ${matrix.largest_difference}`}));
      return cell;
    });
    $("walk-matrices").replaceChildren(...cells);
  }

  // Scroll the graph's own box (not the page) so that the op being visited is in its middle.
  function centre(element) {
    const box = $("graph-picture").getBoundingClientRect(), node = element.getBoundingClientRect();
    $("graph-picture").scrollTop += node.top + node.height / 2 - (box.top + box.height / 2);
    $("graph-picture").scrollLeft += node.left + node.width / 2 - (box.left + box.width / 2);
  }

  function show() {
    for (const element of Object.values(walk.nodes)) element.classList.remove("walk-current", "walk-done", "walk-receives");
    for (const edge of walk.edges) edge.element.classList.remove("walk-flow");
    const step = walk.steps[walk.position];
    // a step is its op's node (or its collapsed module's box) and the scale step drawn before it
    const shown = (s) => [s.id, s.scale_id].filter(Boolean);
    for (const done of walk.steps.slice(0, Math.max(walk.position, 0))) {
      for (const id of shown(done)) walk.nodes[id]?.classList.add("walk-done");
    }
    if (step) {
      const current = walk.nodes[step.id];
      for (const id of shown(step)) walk.nodes[id]?.classList.add("walk-current");
      const receiving = new Set(step.inputs.filter((input) => input.grad !== null && input.id !== step.id).map((input) => input.id));
      for (const id of receiving) walk.nodes[id]?.classList.add("walk-receives");
      const heads = new Set(shown(step));
      for (const edge of walk.edges) {
        if ((heads.has(edge.head) && receiving.has(edge.tail)) || (edge.tail === step.scale_id && edge.head === step.id)) {
          edge.element.classList.add("walk-flow");
        }
      }
      if (current) centre(current);
      $("walk-details").replaceChildren(...describe(step));
    } else {
      $("walk-details").replaceChildren(Lab.el("p", {class: "status",
        text: "Press step or play: backward() starts at the op that made the loss."}));
    }
    const last = walk.position === walk.steps.length - 1;
    $("walk-status").textContent = step ? `step ${walk.position + 1} of ${walk.steps.length}${last ? " · done" : ""}` :
      `${walk.steps.length} ops to visit`;
    $("walk-panel").dataset.position = String(walk.position);
    $("walk-back").disabled = walk.position < 0;
    $("walk-step").disabled = last;
    drawMatrices();
  }

  function pause() {
    if (timer !== null) clearInterval(timer);
    timer = null;
    $("walk-play").textContent = "play";
  }

  function move(by) {
    if (!walk) return;
    walk.position = Math.max(-1, Math.min(walk.steps.length - 1, walk.position + by));
    if (walk.position === walk.steps.length - 1) pause();
    show();
  }

  function play() {
    if (!walk) return;
    if (timer !== null) return pause();
    if (walk.position === walk.steps.length - 1) walk.position = -1;  // from the start again
    $("walk-play").textContent = "pause";
    timer = setInterval(() => move(1), PLAY_MILLISECONDS);
    move(1);
  }

  Lab.walk = {
    start() {
      $("walk-back").addEventListener("click", () => { pause(); move(-1); });
      $("walk-step").addEventListener("click", () => { pause(); move(1); });
      $("walk-play").addEventListener("click", play);
    },
    // answer: the /api/graph answer's "walk" (its ids are those of the graph as drawn, collapsed
    // or folded); svg: the drawn graph, or null without Graphviz.
    load(answer, svg) {
      pause();
      walk = null;
      const note = svg === null ? "Stepping through the walk lights up the drawn graph, which needs Graphviz." : "";
      $("walk-note").hidden = !note;
      $("walk-note").textContent = note;
      $("walk-panel").hidden = Boolean(note);
      if (note) return;
      const nodes = {}, edges = [];
      for (const element of svg.querySelectorAll("g.node")) nodes[element.querySelector("title").textContent] = element;
      for (const element of svg.querySelectorAll("g.edge")) {
        const [tail, head] = element.querySelector("title").textContent.split("->");
        edges.push({tail, head, element});
      }
      walk = {steps: answer.steps, matrices: answer.matrices, nodes, edges, position: -1};
      show();
    },
  };
})();
