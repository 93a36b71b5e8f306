"""The attention lab in a real headless Chromium: what a student sees and clicks.

Driven with Selenium and Debian's chromium-driver rather than Playwright: chromedriver comes
from the same Debian source package as chromium, so driver and browser versions always match,
and selenium is a pure-Python wheel. Playwright's Python package supports only the Chromium
build it downloads itself (which cannot be fetched here) and talks a private protocol that a
newer system Chromium may break.

The test starts the lab on a free port, loads the page, checks the weights shown against
minigrad's, moves the temperature slider, ticks the causal mask, trains, opens the graph and
the trained-model panels, and takes screenshots of panels 1 and 2: into the test's temporary
folder, or, with MINIGRAD_UPDATE_IMAGES=1, over docs/images/attention_lab.png (the README's
picture) and docs/images/attention_lab_train.png, so a test run leaves the work tree as it was.
A second test steps, steps back and plays the backward walk of panel 3 and reads the lit-up
ops back from the SVG: the replay's order (mg.viz.replay, run here on the same model), ending
at W_Q, W_K, W_V, W_O with the numbers of their .grad.

It skips only where no browser can be had (and says why); under CI (CI=true) it never skips.
"""

import math
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from examples import attention_by_hand as chapter
from examples.sentiment import preprocess
from examples.sentiment.model import SentimentModel

ROOT = Path(__file__).resolve().parents[2]
DOCS_IMAGES = ROOT / "docs" / "images"
WAIT_SECONDS = 60  # how long to wait for the page to show something before failing
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--window-size=1400,1000",
    "--hide-scrollbars",
    "--force-device-scale-factor=1",
]


def unavailable(reason):
    if os.environ.get("CI"):
        pytest.fail(
            f"CI must run the browser test: {reason} "
            "(.ci/run installs chromium and chromium-driver)"
        )
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        unavailable("selenium is not installed (pip install -e '.[test]')")
    chromium, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if chromium is None or driver_path is None:
        unavailable(
            "no chromium/chromedriver on PATH (Debian: apt-get install chromium chromium-driver)"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in CHROMIUM_ARGS:
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def lab_url(tmp_path_factory):
    """The lab started as a user starts it, on a free port, with a small dot-pooling checkpoint."""
    runs = tmp_path_factory.mktemp("runs")
    vocab = preprocess.build_vocab([["a", "great", "movie", "bad", "plot"]])
    mg.manual_seed(0)
    model = SentimentModel(len(vocab), pool="dot", embedding_dim=6, hidden_size=8)
    (runs / "dot").mkdir()
    mg.save(model.state_dict(), runs / "dot" / "best.npz")
    vocab.to_json(runs / "dot" / "vocab.json")
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    )
    process = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "examples" / "attention_lab.py"),
            "--port",
            "0",
            "--runs",
            str(runs),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    line = process.stdout.readline()
    url = re.search(r"http://127\.0\.0\.1:\d+/", line)
    if url is None:
        process.kill()
        pytest.fail(f"the lab did not start: {line!r}")
    yield url.group(0)
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=WAIT_SECONDS)


def expected_weights(temperature=1.0, causal=False):
    """The chapter's attention weights (3, 3) computed by nn.SelfAttention, checked against
    numpy."""
    attention = nn.SelfAttention(2, num_heads=1, causal=causal)
    attention.load_state_dict(
        {
            "query_weight": chapter.CHAPTER_QUERY_WEIGHT / np.float32(temperature),
            "key_weight": chapter.CHAPTER_KEY_WEIGHT,
            "value_weight": chapter.CHAPTER_VALUE_WEIGHT,
            "output_weight": np.eye(2, dtype=np.float32),
        }
    )
    with mg.no_grad():
        attention(mg.tensor(chapter.CHAPTER_EMBEDDINGS[None]))
    weights = attention.last_weights[0, 0]
    x = chapter.CHAPTER_EMBEDDINGS.astype(np.float64)
    scores = (x @ chapter.CHAPTER_QUERY_WEIGHT) @ x.T / (math.sqrt(2) * temperature)
    if causal:
        scores = np.where(np.tril(np.ones((3, 3), bool)), scores, -np.inf)
    reference = np.exp(scores - scores.max(axis=1, keepdims=True))
    np.testing.assert_allclose(
        weights, reference / reference.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6
    )
    return weights


def wait_for(driver, condition, what):
    """Wait until condition() is true; on time-out, fail with what the page shows."""
    from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:  # an element replaced by a redraw between two look-ups: look again
        return WebDriverWait(
            driver,
            WAIT_SECONDS,
            poll_frequency=0.05,
            ignored_exceptions=(StaleElementReferenceException,),
        ).until(lambda d: condition())
    except TimeoutException:
        shown = driver.execute_script(
            "return [...document.querySelectorAll('.message, .status')].filter((e) => "
            "e.textContent.trim())"
            ".map((e) => e.id + ': ' + e.textContent.trim()).join(' | ')"
        )
        pytest.fail(f"the page never showed {what}; it shows: {shown}")


def screenshot(driver, path):
    """Save the whole page: the window is first made as tall as the page."""
    height = driver.execute_script("return document.documentElement.scrollHeight")
    frame = driver.execute_script("return window.outerHeight - window.innerHeight")
    driver.set_window_size(1400, height + frame)
    driver.save_screenshot(str(path))
    driver.set_window_size(1400, 1000)


def shown_weights(driver):
    """The weight row of the asking word as shown (4 decimals), or None while it is not there.
    Read in one script call: the page may redraw between two element look-ups."""
    texts = driver.execute_script(
        "return [...document.querySelectorAll('#head-steps tr.weights td.value')].map((c) => "
        "c.textContent)"
    )
    return [float(text) for text in texts] if len(texts) == 3 else None


def heat_values(driver, selector):
    """The exact values behind the cells of a heat map (as the server sent them)."""
    return driver.execute_script(
        "return [...document.querySelectorAll(arguments[0] + ' .cell')].map((c) => "
        "c.dataset.value)",
        selector,
    )


def test_the_lab_in_a_browser(browser, lab_url, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    images = DOCS_IMAGES if os.environ.get("MINIGRAD_UPDATE_IMAGES") == "1" else tmp_path

    driver = browser
    find = lambda css: driver.find_element(By.CSS_SELECTOR, css)  # noqa: E731
    driver.get(lab_url)

    # Panel 1 opens on the chapter's example: "it" attends to cat, sleeps, it with 0.93, 0.01, 0.06.
    wait_for(driver, lambda: shown_weights(driver), "the weights of the query word")
    np.testing.assert_allclose(shown_weights(driver), expected_weights()[2], atol=5e-5)
    # the weighted sum: the weights as step 4 shows them, and the terms shown add up to the sum
    formula = find("#head-steps .formula:last-child").text
    weights = expected_weights()[2]
    terms = " + ".join(f"{w:.4f}·{v}" for w, v in zip(weights, ["[3, 0]", "[0, 3]", "[1, 1]"]))
    assert f"Σ weight·v = {terms} ≈ " in formula
    shown = [float(w) for w in re.findall(r"(\d\.\d{4})·", formula)]
    summed = np.array(shown) @ np.array([[3, 0], [0, 3], [1, 1]])
    assert formula.endswith("[" + ", ".join(f"{v:.2f}" for v in summed) + "]")
    assert find("#temperature-value").text == "T = 1"
    screenshot(driver, images / "attention_lab.png")

    # Colder: the slider two notches to the left is T = 0.5, and the weights sharpen.
    find("#temperature").send_keys(Keys.ARROW_LEFT, Keys.ARROW_LEFT)
    cold = expected_weights(temperature=0.5)
    wait_for(
        driver,
        lambda: shown_weights(driver) and abs(shown_weights(driver)[0] - cold[2, 0]) < 5e-5,
        "the weights at T = 0.5",
    )
    assert find("#temperature-value").text == "T = 0.5"
    np.testing.assert_allclose(shown_weights(driver), cold[2], atol=5e-5)

    # Causal: "sleeps" may look at cat and itself, never at "it"; the grid shows the lower triangle.
    find("#query-choice input[value='1']").click()
    find("#causal").click()
    causal = expected_weights(temperature=0.5, causal=True)
    lower_triangle = ["✓", "✕", "✕", "✓", "✓", "✕", "✓", "✓", "✓"]
    # noqa: E731  (one read: the page redraws as a whole)
    mask_grid = lambda: driver.execute_script(
        "return [...document.querySelectorAll('#mask-grid .cell')].map((c) => c.textContent)"
    )
    wait_for(
        driver, lambda: mask_grid() == lower_triangle, "the lower-triangle grid of the causal mask"
    )
    np.testing.assert_allclose(shown_weights(driver), causal[1], atol=5e-5)
    assert shown_weights(driver)[2] == 0.0
    all_weights = np.array([float(v) for v in heat_values(driver, "#weights-matrix")]).reshape(3, 3)
    np.testing.assert_allclose(all_weights, causal, rtol=1e-5, atol=1e-7)
    assert np.all(np.triu(all_weights, k=1) == 0.0)

    # Bad input: a clear message on the page, and the server goes on answering.
    cell = find("[data-matrix=query_weight] input")
    cell.clear()
    cell.send_keys("abc")
    wait_for(driver, lambda: "got 'abc'" in find("#by-hand-error").text, "the error message")
    assert (
        "W_Q[1][1]: expected a number between -100 and 100; got 'abc'"
        in find("#by-hand-error").text
    )
    cell.clear()
    cell.send_keys("0")
    wait_for(driver, lambda: not find("#by-hand-error").is_displayed(), "the error to clear")

    # Panel 2: one step changes the loss and the four matrices; a hundred steps lower the loss.
    find("#tabs button[data-panel=train]").click()
    wait_for(driver, lambda: find("#train-status").text.startswith("step 0"), "the untrained state")
    loss_before = find("#train-status").text
    query_before = heat_values(driver, "[data-matrix-name=query_weight][data-kind=value]")
    assert len(query_before) == 64
    find("#train-one").click()
    wait_for(driver, lambda: find("#train-status").text.startswith("step 1 "), "one training step")
    assert find("#train-status").text.split("·")[1] != loss_before.split("·")[1]
    for name in ("query_weight", "key_weight", "value_weight", "output_weight"):
        assert len(heat_values(driver, f"[data-matrix-name={name}][data-kind=gradient]")) == 64
    assert heat_values(driver, "[data-matrix-name=query_weight][data-kind=value]") != query_before
    find("#train-hundred").click()
    wait_for(driver, lambda: find("#train-status").text.startswith("step 101 "), "a hundred steps")
    loss_after = float(find("#train-status").text.split("loss ")[1].split(" ")[0])
    assert loss_after < 0.5 * float(loss_before.split("loss ")[1].split(" ")[0])
    screenshot(driver, images / "attention_lab_train.png")

    # Panel 3: the graph of the current model, with the four matrices in it.
    find("#tabs button[data-panel=graph]").click()
    wait_for(
        driver,
        lambda: (
            driver.find_elements(By.CSS_SELECTOR, "#graph-picture svg")
            or find("#graph-missing").is_displayed()
        ),
        "the graph",
    )
    if shutil.which("dot"):
        picture = find("#graph-picture svg").get_attribute("outerHTML")
        assert all(f"attention.{n}_weight" in picture for n in ("query", "key", "value", "output"))
        find("input[name=collapse][value=attention]").click()
        wait_for(
            driver,
            lambda: len(find("#graph-picture svg").get_attribute("outerHTML")) < len(picture) / 2,
            "the graph with attention collapsed",
        )
    else:
        assert "apt-get install graphviz" in find("#graph-missing").text

    # Panel 4: the checkpoint reads a review; every token is shown with its weight.
    find("#tabs button[data-panel=model]").click()
    wait_for(driver, lambda: find("#model-form").is_displayed(), "the review form")
    find("#model-classify").click()
    wait_for(driver, lambda: find("#model-result").is_displayed(), "the prediction")
    assert find("#model-label").text in ("positive", "negative")
    tokens = driver.find_elements(By.CSS_SELECTOR, "#model-tokens span")
    assert [t.text for t in tokens][:3] == ["this", "movie", "was"]
    np.testing.assert_allclose(
        sum(float(t.get_attribute("data-value")) for t in tokens), 1.0, rtol=1e-5
    )

    # Nothing went wrong in the page itself (a blocked request or a script error would show here).
    problems = [
        entry
        for entry in driver.get_log("browser")
        if entry["level"] == "SEVERE" and "400 (Bad Request)" not in entry["message"]
    ]  # the "abc" above, answered on purpose
    assert problems == []


def walk_reference():
    """The lab's graph, built here as the lab builds it for a fresh tab (seeded, untrained):
    the replay's order of node ids, and the four matrices' `.grad` after a plain backward()."""
    from examples import four_matrices as task
    from examples.lab import training

    def forward():
        session = training.TrainingSession()
        vectors, _, _ = training.task_data()
        words = mg.tensor(vectors[task.sentence_ids(task.FIXED_SENTENCE)])
        loss = mg.cross_entropy(session.model(words), mg.tensor(np.array([1])))
        return session, loss

    session, loss = forward()
    matrices = [session.matrix(name) for name in training.MATRICES]
    order = [step.id for step in mg.viz.replay(loss, params=session.model, highlight=matrices)]
    session, loss = forward()
    loss.backward()
    return order, {name: session.matrix(name).grad.numpy() for name in training.MATRICES}


# Every label of the walk panel measured in the browser: a box whose text is wider or taller
# than the box (scrollWidth > clientWidth), anything sticking out of the panel, and in the
# graph a node's text outside its shape or under 12 px tall.
OVERFLOWS = """
const bad = [], side = document.getElementById('walk-side').getBoundingClientRect();
const labels = ['th', 'td', '.heat .cell', 'h3', '.status'].map((s) => '#walk-side ' + s).join();
for (const e of document.querySelectorAll(labels)) {
  if (e.offsetParent === null || e.clientWidth === 0) continue;
  if (e.scrollWidth > e.clientWidth + 1 || e.scrollHeight > e.clientHeight + 1) {
    bad.push(`${e.tagName}.${e.className} ${e.scrollWidth}x${e.scrollHeight} in `
             + `${e.clientWidth}x${e.clientHeight}: ${e.textContent.slice(0, 40)}`);
  }
}
for (const e of document.querySelectorAll('#walk-side *')) {
  const box = e.getBoundingClientRect();
  if (e.offsetParent !== null && box.right > side.right + 1) {
    bad.push(`outside the panel by ${box.right - side.right}px: ${e.textContent.slice(0, 40)}`);
  }
}
if (arguments[0]) {
  for (const node of document.querySelectorAll('#graph-picture g.node')) {
    const shape = node.querySelector('ellipse, polygon');
    if (!shape) continue;
    const around = shape.getBoundingClientRect();
    for (const text of node.querySelectorAll('text')) {
      const box = text.getBoundingClientRect();
      if (box.left < around.left - 2 || box.right > around.right + 2
          || box.top < around.top - 2 || box.bottom > around.bottom + 2) {
        bad.push(`graph text outside its node: ${text.textContent}`);
      }
      if (box.height < 12) bad.push(`graph text ${box.height}px tall: ${text.textContent}`);
    }
  }
}
return bad;
"""


def walk_loss():
    """The loss of the lab's graph for a fresh tab (seeded, untrained)."""
    from examples import four_matrices as task
    from examples.lab import training

    session = training.TrainingSession()
    vectors, _, _ = training.task_data()
    words = mg.tensor(vectors[task.sentence_ids(task.FIXED_SENTENCE)])
    return mg.cross_entropy(session.model(words), mg.tensor(np.array([1])))


def test_the_backward_walk_step_by_step(browser, lab_url):
    from selenium.webdriver.common.by import By

    driver = browser
    find = lambda css: driver.find_element(By.CSS_SELECTOR, css)  # noqa: E731
    driver.get(lab_url)  # a new tab: a new, untrained session
    find("#tabs button[data-panel=graph]").click()
    if not shutil.which("dot"):
        wait_for(driver, lambda: find("#walk-note").is_displayed(), "the walk's note")
        assert "needs Graphviz" in find("#walk-note").text
        return
    order, grads = walk_reference()
    wait_for(
        driver,
        lambda: find("#walk-status").text == f"{len(order)} ops to visit",
        "the walk ready to start",
    )
    # the titles of the SVG nodes (or edges) with a class, in one read: the page redraws as a whole
    lit = lambda kind: driver.execute_script(  # noqa: E731
        "return [...document.querySelectorAll('#graph-picture g.' + arguments[0] + ' > title')]"
        ".map((t) => t.textContent)",
        kind,
    )
    assert lit("walk-current") == [] and find("#walk-back").get_attribute("disabled")

    # Step by step: the op lit up is the replay's next one; the ones before it are marked done.
    seen = []
    for position in range(len(order)):
        find("#walk-step").click()
        wait_for(
            driver,
            lambda: find("#walk-panel").get_attribute("data-position") == str(position),
            f"step {position + 1}",
        )
        current = [i for i in lit("walk-current") if not i.endswith("_scale")]
        seen.extend(current)
        # readable at every step: every number fits its cell, every name its column
        assert driver.execute_script(OVERFLOWS, position == 0) == [], f"step {position + 1}"
        done = [i for i in lit("walk-done") if not i.endswith("_scale")]
        assert sorted(done) == sorted(order[:position])
        assert find("#walk-details h3").text.startswith(f"Step {position + 1} of {len(order)}")
    assert seen == order
    assert find("#walk-status").text.endswith("done") and find("#walk-step").get_attribute(
        "disabled"
    )
    # The last op is x @ W_Q: W_Q is outlined, its edge into the op carries the gradient, and
    # the words, which need no gradient, are neither.
    (receiving,) = lit("walk-receives")
    label = driver.execute_script(
        "return [...document.querySelectorAll('#graph-picture g.walk-receives text')]"
        ".map((t) => t.textContent)"
    )
    assert label[0] == "attention.query_weight"
    assert lit("walk-flow") == [f"{receiving}->{order[-1]}"]
    rows = driver.execute_script(
        "return [...document.querySelectorAll('#walk-details tr[data-input-id]')]"
        ".map((r) => [r.dataset.inputId, r.textContent])"
    )
    assert [row[0] for row in rows][1] == receiving and "no gradient" in rows[0][1]

    # The walk ends at the four matrices with the numbers of .grad.
    for name, grad in grads.items():
        shown = heat_values(driver, f"[data-walk-matrix={name}]")
        np.testing.assert_allclose(np.array(shown, float).reshape(grad.shape), grad, rtol=1e-5)
        assert "largest difference 0" in find(f"[data-walk-matrix={name}] .walk-check").text

    # Step back: the previous op again, and the matrix it had not reached is not reached yet.
    find("#walk-back").click()
    wait_for(driver, lambda: lit("walk-current") == [order[-2]], "one step back")
    assert find("[data-walk-matrix=query_weight]").get_attribute("data-reached") is None
    assert find("[data-walk-matrix=output_weight]").get_attribute("data-reached") == "true"

    # Play from the start: every op lit up in turn, in the replay's order, then it stops.
    driver.execute_script(
        "window.walkSeen = [];"
        "new MutationObserver(() => {"
        "  const title = [...document.querySelectorAll('#graph-picture g.walk-current > title')]"
        "    .find((t) => !t.textContent.endsWith('_scale'));"
        "  const seen = window.walkSeen;"
        "  if (title && seen[seen.length - 1] !== title.textContent) seen.push(title.textContent);"
        "}).observe(document.getElementById('graph-picture'),"
        "           {subtree: true, attributes: true, attributeFilter: ['class']});"
    )
    find("#walk-step").click()  # to the end, so that play starts from the beginning again
    wait_for(driver, lambda: find("#walk-status").text.endswith("done"), "the end of the walk")
    driver.execute_script("window.walkSeen = [];")
    find("#walk-play").click()
    wait_for(
        driver,
        lambda: find("#walk-status").text.endswith("done") and find("#walk-play").text == "play",
        "play to reach the end",
    )
    assert driver.execute_script("return window.walkSeen") == order

    # With a module collapsed the walk goes on, on the graph as drawn: the attention layer's
    # ops light up its box, the same number of steps.
    find("input[name=collapse][value=attention]").click()
    wait_for(
        driver,
        lambda: (
            find("#walk-status").text == f"{len(order)} ops to visit"
            and driver.find_elements(By.CSS_SELECTOR, "#graph-picture g.node > title")
            and any(
                t.startswith("m")
                for t in driver.execute_script(
                    "return [...document.querySelectorAll('#graph-picture g.node > title')]"
                    ".map((t) => t.textContent)"
                )
            )
        ),
        "the walk on the collapsed graph",
    )
    boxes = []
    for position in range(len(order)):
        find("#walk-step").click()
        wait_for(
            driver,
            lambda: find("#walk-panel").get_attribute("data-position") == str(position),
            f"step {position + 1} with attention collapsed",
        )
        assert lit("walk-current"), f"step {position + 1} lights nothing"
        boxes += [i for i in lit("walk-current") if i.startswith("m")]
        assert driver.execute_script(OVERFLOWS, False) == [], f"collapsed step {position + 1}"
    assert boxes  # the attention's ops
    find("input[name=collapse][value=attention]").click()
    # Folded: the Reshape/Permute steps are gone, the walk still ends at .grad.
    find("#graph-fold").click()
    folded = sum(
        step.op not in ("Reshape", "Permute")
        for step in mg.viz.replay(walk_loss(), fold_views=True)
    )
    wait_for(
        driver, lambda: find("#walk-status").text == f"{folded} ops to visit", "the folded walk"
    )
    for position in range(folded):
        find("#walk-step").click()
        wait_for(
            driver,
            lambda: find("#walk-panel").get_attribute("data-position") == str(position),
            f"folded step {position + 1}",
        )
        assert driver.execute_script(OVERFLOWS, position == 0) == [], f"folded {position + 1}"
    for name, grad in grads.items():
        shown = heat_values(driver, f"[data-walk-matrix={name}]")
        np.testing.assert_allclose(np.array(shown, float).reshape(grad.shape), grad, rtol=1e-5)
    problems = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
    assert problems == []
