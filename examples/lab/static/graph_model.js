// Panel 3, "The graph" (an SVG drawn by mg.viz and Graphviz on the server; walk.js steps
// through its backward walk), and panel 4, "A trained model" (the IMDB classifier reads a review).
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);

  // -- panel 3 --------------------------------------------------------------------------------

  async function drawGraph() {
    const collapse = [...document.querySelectorAll("input[name=collapse]:checked")].map((box) => box.value);
    $("graph-redraw").disabled = true;
    try {
      const fold = $("graph-fold").checked;
      const answer = await Lab.api("/api/graph", {session: Lab.session, collapse, fold});
      Lab.showError("graph-error", null);
      $("graph-missing").hidden = answer.available;
      $("graph-missing").textContent = answer.available ? "" :
        "The picture needs Graphviz's `dot` program on the computer running the lab.\n" + answer.message +
        "\nThe DOT text below is the same graph; the other panels work without Graphviz.";
      $("graph-dot").textContent = answer.dot;
      if (answer.available) {
        // The SVG comes from Graphviz on our own server; parse it as XML rather than as HTML.
        const svg = new DOMParser().parseFromString(answer.svg, "image/svg+xml").documentElement;
        const picture = document.importNode(svg, true);
        $("graph-picture").replaceChildren(picture);
        Lab.walk.load(answer.walk, picture);
      } else {
        $("graph-picture").replaceChildren();
        Lab.walk.load(answer.walk, null);
      }
    } catch (error) {
      Lab.showError("graph-error", error);
    } finally {
      $("graph-redraw").disabled = false;
    }
  }

  Lab.panels.graph = {
    start() {
      Lab.walk.start();
      $("graph-redraw").addEventListener("click", drawGraph);
      for (const box of document.querySelectorAll("input[name=collapse], #graph-fold")) box.addEventListener("change", drawGraph);
    },
    show() {
      Lab.panels.train.show();  // the graph is of the model trained in panel 2
      drawGraph();  // always the current matrices: redrawn each time the panel opens
    },
  };

  // -- panel 4 --------------------------------------------------------------------------------

  async function classify() {
    $("model-classify").disabled = true;
    try {
      const answer = await Lab.api("/api/model/predict", {model: $("model-choice").value, text: $("review").value});
      Lab.showError("model-error", null);
      $("model-result").hidden = false;
      $("model-label").textContent = answer.label;
      $("model-label").className = answer.label;
      $("model-probability").textContent = `probability ${Lab.fmt(answer.probability, 3)}`;
      let kind = `Shading: ${answer.weights_kind}, relative to the largest.`;
      if (answer.tokens_read < answer.tokens_total) {
        kind += ` Only the first ${answer.tokens_read} of ${answer.tokens_total} tokens are read, as in training.`;
      }
      if (answer.known.includes(false)) kind += " Dotted: a word the model never saw ([unk]).";
      $("model-weights-kind").textContent = kind;
      const largest = Math.max(...answer.weights.map((w) => w || 0), 1e-12);
      $("model-tokens").replaceChildren(...answer.tokens.map((token, i) => {
        const span = Lab.el("span", {text: token, title: `weight ${answer.weights[i]}`,
                                     class: answer.known[i] ? "" : "unknown", "data-value": String(answer.weights[i])});
        span.style.background = `rgba(217, 72, 15, ${(answer.weights[i] || 0) / largest})`;
        return span;
      }));
    } catch (error) {
      Lab.showError("model-error", error);
    } finally {
      $("model-classify").disabled = false;
    }
  }

  Lab.panels.model = {
    start() {
      $("model-classify").addEventListener("click", classify);
    },
    async show() {
      try {
        const status = await Lab.api("/api/model/status");
        $("model-missing").hidden = !status.message;
        $("model-missing").textContent = status.message || "";
        $("model-form").hidden = status.checkpoints.length === 0;
        const choice = $("model-choice");
        const previous = choice.value;
        choice.replaceChildren(...status.checkpoints.map((pool) => Lab.el("option", {value: pool, text: `${pool} pooling`})));
        if (status.checkpoints.includes(previous)) choice.value = previous;
        $("review").setAttribute("maxlength", String(status.max_characters));
        $("model-limit").textContent = `at most ${status.max_characters} characters; the first ${status.max_tokens} tokens are read`;
      } catch (error) {
        $("model-missing").hidden = false;
        $("model-missing").textContent = error.message;
      }
    },
  };
})();
