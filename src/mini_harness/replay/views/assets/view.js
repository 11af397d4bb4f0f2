// The mini-harness view page: reads the JSON block, draws one page of rows at a time.
// Every text goes on the page through textContent, never as HTML.
(function () {
  "use strict";
  var PAGE = 200;
  var PARTS = ["System prompt", "Project rules", "Tool definitions", "Conversation", "Tool results", "Tool result"];
  var data = JSON.parse(document.getElementById("timeline-data").textContent);
  var rows = data.rows;
  var runs = {};
  data.runs.forEach(function (run) { runs[run.index] = run; });
  var state = { run: "", step: "", tool: "", status: "", grep: "", page: 0 };
  var collapsed = {};  // "r1" or "r1s2": hidden children
  var open = {};       // row index: details shown
  var shown = [];      // indexes of rows that pass the filters
  // What every request of a run repeats (given when it started): left out of the step
  // bars unless asked for, and said once on the run, so the bars show what grows.
  var FIXED = { "System prompt": true, "Project rules": true, "Tool definitions": true, "Tool result": true };
  var withFixed = false;
  var maxContext = { all: 1, grows: 1 };
  var runFixed = {};  // run index: its first step's fixed parts

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }
  function $(id) { return document.getElementById(id); }
  // A row's line opens or collapses it, by mouse or by keyboard (Enter, Space).
  // After a redraw the keyboard focus goes back to the row that had it.
  var focused = null;
  function clickable(line, index, action, expanded) {
    line.tabIndex = 0;
    line.setAttribute("role", "button");
    line.setAttribute("aria-expanded", expanded ? "true" : "false");
    line.setAttribute("data-row", String(index));
    line.addEventListener("click", action);
    line.addEventListener("keydown", function (event) {
      if (event.key === "Enter" || event.key === " ") { event.preventDefault(); focused = index; action(); }
    });
  }
  function ms(value) {
    if (value === null || value === undefined) { return ""; }
    if (value < 1) { return value.toFixed(3) + " ms"; }
    return value < 1000 ? value.toFixed(1) + " ms" : (value / 1000).toFixed(2) + " s";
  }
  function num(value) { return Number(value).toLocaleString("en-US"); }
  function tokens(usage) {
    if (!usage) { return ""; }
    var parts = [];
    [["in", "inputTokens"], ["out", "outputTokens"], ["cached", "cachedTokens"]].forEach(function (pair) {
      if (typeof usage[pair[1]] === "number") { parts.push(pair[0] + " " + num(usage[pair[1]])); }
    });
    return parts.length ? "tokens " + parts.join(" · ") : "";
  }
  // A row's one-line preview keeps the text's spaces (the line is white-space: pre) and
  // shows each line break as ⏎, so indentation and line structure stay visible.
  function oneLine(text) { return text.replace(/\r\n|[\n\r\u2028\u2029]/g, "⏎"); }
  function cut(text, size) { return text.length > size ? text.slice(0, size - 1) + "…" : text; }
  function pretty(text) {
    try { return JSON.stringify(JSON.parse(text), null, 2); } catch (e) { return text; }
  }
  function bytes(row, key) {
    var full = row[key + "b"];
    var text = row[key];
    return full > text.length ? " (" + num(full) + " bytes, first " + num(text.length) + " shown)" : " (" + num(full) + " bytes)";
  }

  // --- filters -------------------------------------------------------------------------
  var runRow = {};   // run index: its header row
  var stepRow = {};  // "r1s2": the step's header row
  var callRow = {};  // "<run id> <call id>": the call's row
  rows.forEach(function (row, i) {
    if (row.k === "r") { runRow[row.r] = i; } else if (row.k === "s") { stepRow["r" + row.r + "s" + row.s] = i; }
    if (row.k === "c" && row.r !== null && row.r !== undefined) { callRow[runs[row.r].runId + " " + row.id] = i; }
  });
  // An undo run names the call it reverts: each finds the other.
  var undoneBy = {};  // a call's row: the run that undid it
  function undoneRow(run) { return run.undoes ? callRow[run.undoes[0] + " " + run.undoes[1]] : undefined; }
  data.runs.forEach(function (run) {
    var target = undoneRow(run);
    if (target !== undefined) { undoneBy[target] = run.index; }
  });
  function narrowsItems() { return Boolean(state.tool || state.status || state.grep); }
  function haystack(row) {
    if (row.q === undefined) {
      var parts = [row.i || "", row.o || "", row.e || "", row.text || "", row.rr && row.rr.diff || ""];
      (row.ap || []).forEach(function (a) { parts.push(a); });
      (row.fail || []).forEach(function (f) { parts.push(f); });
      row.q = parts.join("\n").toLowerCase();
    }
    return row.q;
  }
  function itemMatches(row) {
    if (state.tool && (row.k !== "c" || row.n !== state.tool)) { return false; }
    if (state.status && row.st !== state.status && !(row.rr && row.rr.o === state.status)) { return false; }
    if (state.grep && haystack(row).indexOf(state.grep) < 0) { return false; }
    return true;
  }
  function inStep(row) { return row.s !== null && row.s !== undefined; }
  // Whether a row passes by itself: calls and turns by the filters; other rows (run and
  // step headers, events) only when no item filter is set; all within the run and step.
  function passes(row) {
    var items = narrowsItems();
    if (row.r === null || row.r === undefined) { return !items && state.step === "" && state.run === ""; }
    if (state.run && String(row.r) !== state.run) { return false; }
    if (row.k === "r") { return !items && state.step === ""; }
    if (state.step !== "" && !(inStep(row) && String(row.s) === state.step)) { return false; }
    return (row.k === "c" || row.k === "t") ? itemMatches(row) : !items;
  }
  // The rows that pass, each with the headers of its run and step; a run's finish when
  // its header is shown.
  function filter() {
    var keep = {};
    rows.forEach(function (row, i) {
      if (row.k === "f" ? !keep[runRow[row.r]] : !passes(row)) { return; }
      keep[i] = true;
      if (row.k !== "r" && row.r !== null && row.r !== undefined) { keep[runRow[row.r]] = true; }
      if (row.k !== "s" && inStep(row)) { keep[stepRow["r" + row.r + "s" + row.s]] = true; }
    });
    shown = [];
    for (var i = 0; i < rows.length; i++) { if (keep[i]) { shown.push(i); } }
  }
  function hiddenByCollapse(row) {
    if (row.k === "r") { return false; }
    if (collapsed["r" + row.r]) { return true; }
    return row.k !== "s" && row.s !== null && row.s !== undefined && collapsed["r" + row.r + "s" + row.s];
  }

  // --- drawing -------------------------------------------------------------------------
  function drawHead() {
    var head = $("head");
    var parts = [data.path];
    if (data.format !== null && data.format !== undefined) { parts.push("format " + data.format); }
    if (data.transcriptId) { parts.push("id " + data.transcriptId); }
    parts.push(num(data.events) + " events");
    parts.push(data.runs.length + " run" + (data.runs.length === 1 ? "" : "s"));
    parts.push(num(data.calls.ok) + " succeeded, " + num(data.calls.failed) + " failed, " + num(data.calls["in-doubt"]) + " in doubt");
    head.textContent = parts.join(" · ");
    var verify = $("verify");
    var v = data.verify;
    verify.appendChild(el("span", v.chainIntact ? "ok" : "bad", v.chainIntact ? "Chain intact" : "Chain damaged"));
    verify.appendChild(el("span", "muted", " · head hash "));
    verify.appendChild(el("code", null, v.headHash || "(none)"));
    verify.appendChild(el("span", "muted", " · " + (v.problems.length ? v.problems.length + " problem(s)" : "no problems")));
    if (data.rerun) {
      var counts = data.rerun.counts;
      var said = Object.keys(counts).map(function (name) { return num(counts[name]) + " " + name; });
      verify.appendChild(el("div", "rerun-summary", "Re-run: " + said.join(", ") + (data.rerun.drift.length ? "; drift: " + data.rerun.drift.join("; ") : "")));
    }
    if (v.problems.length) {
      var list = el("ul", "problems");
      v.problems.forEach(function (p) { list.appendChild(el("li", null, "[" + p.kind + "] line " + p.line + ": " + p.message)); });
      verify.appendChild(list);
    }
  }
  function drawControls() {
    var runSelect = $("run");
    data.runs.forEach(function (run) {
      var option = el("option", null, "Run " + run.index + " " + run.runId.slice(0, 12));
      option.value = String(run.index);
      runSelect.appendChild(option);
    });
    var names = {};
    rows.forEach(function (row) { if (row.k === "c") { names[row.n] = true; } });
    Object.keys(names).sort().forEach(function (name) {
      var option = el("option", null, name);
      option.value = name;
      $("tool").appendChild(option);
    });
    if (data.rerun) {
      ["diverged", "now-fails", "now-succeeds"].forEach(function (outcome) {
        var option = el("option", null, "re-run " + outcome.replace("-", " "));
        option.value = outcome;
        $("status").appendChild(option);
      });
    }
    var hasContext = false;
    rows.forEach(function (row) {
      if (row.k !== "s" || !row.ctx) { return; }
      hasContext = true;
      maxContext.all = Math.max(maxContext.all, total(row.ctx, true));
      maxContext.grows = Math.max(maxContext.grows, total(row.ctx, false));
      if (!runFixed[row.r]) { runFixed[row.r] = row.ctx.filter(function (part) { return FIXED[part[0]]; }); }
    });
    if (hasContext) { drawLegend(); }
  }
  function drawLegend() {
    var legend = $("legend");
    legend.textContent = "";
    legend.appendChild(el("strong", null, "Context per step (estimated tokens):"));
    PARTS.forEach(function (label, index) {
      if (FIXED[label] && !withFixed) { return; }
      var item = el("span", "swatch", label);
      item.style.setProperty("--swatch", "var(--p" + index + ")");
      legend.appendChild(item);
    });
    var box = el("input");
    box.type = "checkbox";
    box.id = "context-fixed";
    box.checked = withFixed;
    box.addEventListener("change", function () { withFixed = box.checked; drawLegend(); draw(); });
    var label = el("label", "fixed-toggle");
    label.appendChild(box);
    label.appendChild(document.createTextNode(" with what every request repeats (system prompt, rules, tool definitions)"));
    legend.appendChild(label);
  }
  function total(ctx, all) {
    return ctx.reduce(function (sum, part) { return all || !FIXED[part[0]] ? sum + part[1] : sum; }, 0);
  }

  function drawRun(row, index) {
    var run = runs[row.r];
    var node = el("div", "row run");
    node.style.marginLeft = (run.depth * 24) + "px";
    var line = el("div", "line");
    line.appendChild(el("span", "toggle", collapsed["r" + row.r] ? "▸" : "▾"));
    line.appendChild(el("span", null, "Run " + run.index));
    line.appendChild(el("span", "mono", run.runId));
    var meta = [];
    if (run.task !== null && run.task !== undefined) { meta.push("agent run"); } else if (run.harness) { meta.push("harness " + run.harness); }
    if (run.model) { meta.push("model " + run.model); }
    if (run.started) { meta.push("started " + run.started); }
    if (run.durationMs) { meta.push(ms(run.durationMs)); }
    if (run.parent) { meta.push(run.parent[0] + " from run " + run.parent[1].slice(0, 12) + (run.parent[2] !== null ? " at step " + run.parent[2] : "")); }
    var usage = tokens(run.usage);
    if (usage) { meta.push(usage); }
    line.appendChild(el("span", "meta grow", meta.join(" · ")));
    node.appendChild(line);
    if (run.task !== null && run.task !== undefined) { node.appendChild(el("div", "meta", "task: " + run.task)); }
    if (run.undoes) { node.appendChild(drawUndoes(run)); }
    var fixed = runFixed[row.r];
    if (fixed && fixed.length) {
      var said = fixed.map(function (part) { return part[0] + " ~" + num(part[1]); }).join(", ");
      var note = withFixed ? "" : " (not in the step bars)";
      node.appendChild(el("div", "meta context-fixed", "every request repeats ~" + num(total(fixed, true)) + " tokens: " + said + note));
    }
    clickable(line, index, function () { toggle("r" + row.r); }, !collapsed["r" + row.r]);
    return node;
  }
  // "undo of call X in run Y": a link that shows and opens that call, when it is here.
  function drawUndoes(run) {
    var node = el("div", "meta undoes", "undo of ");
    var said = "call " + run.undoes[1] + " in run " + run.undoes[0];
    var target = undoneRow(run);
    if (target === undefined) {
      node.appendChild(el("span", "mono", said));
      node.appendChild(el("span", null, " (not in this transcript)"));
      return node;
    }
    var link = el("button", "mono link", said);  // a button: the page names no address
    link.type = "button";
    link.addEventListener("click", function () { goTo(target); });
    node.appendChild(link);
    return node;
  }
  // Show row `index` opened, whatever the filters, collapses and page hid, and focus it.
  function goTo(index) {
    var row = rows[index];
    if (shown.indexOf(index) < 0) {
      state.run = state.step = state.tool = state.status = state.grep = "";
      ["run", "step", "tool", "status", "search"].forEach(function (id) { $(id).value = ""; });
      filter();
    }
    collapsed["r" + row.r] = false;
    collapsed["r" + row.r + "s" + row.s] = false;
    visible = shown.filter(function (i) { return !hiddenByCollapse(rows[i]); });
    state.page = Math.floor(visible.indexOf(index) / PAGE);
    open[index] = true;
    focused = index;
    draw();
  }
  function drawStep(row, index) {
    var node = el("div", "row step");
    node.style.marginLeft = (runs[row.r].depth * 24) + "px";
    var line = el("div", "line");
    var key = "r" + row.r + "s" + row.s;
    line.appendChild(el("span", "toggle", collapsed[key] ? "▸" : "▾"));
    line.appendChild(el("span", null, "Step " + row.s));
    line.appendChild(el("span", "muted step-ms", row.ms ? ms(row.ms) : ""));  // bars in one column
    if (row.ctx) {
      var bar = el("span", "bar");
      var sum = total(row.ctx, true);
      var scale = withFixed ? maxContext.all : maxContext.grows;
      bar.title = row.ctx.map(function (part) { return part[0] + " ~" + num(part[1]); }).join(", ") + " (total ~" + num(sum) + ")";
      row.ctx.forEach(function (part) {
        if (FIXED[part[0]] && !withFixed) { return; }
        var segment = el("span", "part");
        segment.style.width = (100 * part[1] / scale) + "%";
        segment.style.background = "var(--p" + Math.max(PARTS.indexOf(part[0]), 0) + ")";
        segment.title = part[0] + " ~" + num(part[1]) + " tokens";
        segment.setAttribute("data-part", part[0]);
        bar.appendChild(segment);
      });
      line.appendChild(bar);
      line.appendChild(el("span", "muted context-total", "~" + num(sum) + " tokens"));
    }
    node.appendChild(line);
    clickable(line, index, function () { toggle(key); }, !collapsed[key]);
    return node;
  }
  function drawTurn(row, index) {
    var node = el("div", "row turn");
    var line = el("div", "line");
    line.appendChild(el("span", "badge " + (row.st === "ok" ? "model" : row.st), row.st === "ok" ? "model" : "model " + row.st));
    var meta = [];
    if (row.ms !== null && row.ms !== undefined) { meta.push(ms(row.ms)); }
    var usage = tokens(row.usage);
    if (usage) { meta.push(usage); }
    if (row.finish) { meta.push("finish " + row.finish); }
    if (meta.length) { line.appendChild(el("span", "muted", meta.join(" · "))); }
    var summary = row.text ? oneLine(row.text) : (row.asks.length ? "asks for: " + row.asks.join(", ") : row.fail.join("; "));
    line.appendChild(el("span", "grow", cut(summary, 400)));
    node.appendChild(line);
    if (open[index]) {
      var details = el("div", "details");
      row.fail.forEach(function (f) { details.appendChild(el("div", "error", "model failed: " + f)); });
      if (row.text) { details.appendChild(el("div", "label", "text")); details.appendChild(el("pre", null, row.text)); }
      if (row.asks.length) { details.appendChild(el("div", "label", "asks for: " + row.asks.join(", "))); }
      node.appendChild(details);
    }
    clickable(line, index, function () { open[index] = !open[index]; draw(); }, open[index]);
    return node;
  }
  function drawCall(row, index) {
    var node = el("div", "row call " + (row.s === null || row.s === undefined ? "nostep" : ""));
    node.setAttribute("data-call", row.id);
    var line = el("div", "line");
    line.appendChild(el("span", "badge " + row.st, row.st === "ok" ? "succeeded" : row.st));
    line.appendChild(el("span", "name", row.n));
    if (row.ms !== null && row.ms !== undefined) { line.appendChild(el("span", "muted", ms(row.ms))); }
    if (row.rr) { line.appendChild(el("span", "rerun " + row.rr.o, "re-run " + row.rr.o)); }
    if (undoneBy[index] !== undefined) { line.appendChild(el("span", "undone", "undone by run " + undoneBy[index])); }
    // A failed call shows its input too: what it was asked is half of why it failed.
    var preview = row.e !== undefined ? row.i + " → " + row.e : (row.o !== undefined ? row.i + " → " + row.o : row.i);
    line.appendChild(el("span", "grow mono", cut(oneLine(preview), 300)));
    node.appendChild(line);
    if (open[index]) {
      var details = el("div", "details");
      details.appendChild(el("div", "label", "call " + row.id + " · input" + bytes(row, "i")));
      details.appendChild(el("pre", "input", pretty(row.i)));
      // An approval may hold the diff a person approved: its lines kept as lines.
      (row.ap || []).forEach(function (a) { details.appendChild(el("pre", "approval", a)); });
      if (row.o !== undefined) {
        details.appendChild(el("div", "label", "output" + bytes(row, "o")));
        details.appendChild(el("pre", "output", pretty(row.o)));
        (row.fx || []).forEach(function (f) { details.appendChild(el("div", "effect", "effect " + f)); });
      } else if (row.e !== undefined) {
        details.appendChild(el("div", "label", "error"));
        details.appendChild(el("pre", "error", row.e));
      } else {
        details.appendChild(el("div", "label", "no terminal event: the call may or may not have run"));
      }
      if (row.rr) {
        details.appendChild(el("div", "label", "re-run: " + row.rr.o + (row.rr.why ? " (" + row.rr.why + ")" : "")));
        if (row.rr.diff) { details.appendChild(el("pre", "diff", row.rr.diff)); }
      }
      node.appendChild(details);
    }
    clickable(line, index, function () { open[index] = !open[index]; draw(); }, open[index]);
    return node;
  }
  function drawEvent(row) {
    var node = el("div", "row event");
    var line = el("div", "line");
    line.appendChild(el("span", "badge event", row.type));
    line.appendChild(el("span", "muted", "seq " + row.seq));
    line.appendChild(el("span", "grow mono", cut(oneLine(row.i), 300)));
    node.appendChild(line);
    return node;
  }
  function drawFinish(row) {
    var run = runs[row.r];
    var node = el("div", "row finish");
    node.style.marginLeft = (run.depth * 24) + "px";  // under its run, as nested runs are
    var finished = run.finished;
    if (!finished) {
      node.appendChild(el("div", "error", "unfinished: no RunFinished (the run did not end)"));
      return node;
    }
    var parts = ["finished: " + finished.stopReason];
    if (typeof finished.steps === "number") { parts.push(finished.steps + " step" + (finished.steps === 1 ? "" : "s")); }
    node.appendChild(el("div", "name", parts.join(" · ")));
    if (finished.finalText) { node.appendChild(el("pre", null, finished.finalText)); }
    return node;
  }
  var DRAW = { r: drawRun, s: drawStep, t: drawTurn, c: drawCall, e: drawEvent, f: drawFinish };

  function toggle(key) { collapsed[key] = !collapsed[key]; refresh(false); }
  var visible = [];
  function refresh(refilter) {
    if (refilter) { filter(); state.page = 0; }
    visible = shown.filter(function (i) { return !hiddenByCollapse(rows[i]); });
    var pages = Math.max(1, Math.ceil(visible.length / PAGE));
    state.page = Math.min(state.page, pages - 1);
    draw();
  }
  function draw() {
    var main = $("rows");
    main.textContent = "";
    var start = state.page * PAGE;
    var end = Math.min(start + PAGE, visible.length);
    var fragment = document.createDocumentFragment();
    for (var i = start; i < end; i++) {
      var row = rows[visible[i]];
      fragment.appendChild(DRAW[row.k](row, visible[i]));
    }
    main.appendChild(fragment);
    if (!visible.length) { main.appendChild(el("div", "empty", "Nothing matches the filters.")); }
    if (focused !== null) {
      var again = main.querySelector('[data-row="' + focused + '"]');
      if (again) { again.focus(); }
      focused = null;
    }
    $("pager-info").textContent = visible.length ? "rows " + num(start + 1) + "-" + num(end) + " of " + num(visible.length) : "no rows";
    $("prev").disabled = state.page === 0;
    $("next").disabled = end >= visible.length;
  }

  function bind() {
    [["run", "run"], ["tool", "tool"], ["status", "status"]].forEach(function (pair) {
      $(pair[0]).addEventListener("change", function (event) { state[pair[1]] = event.target.value; refresh(true); });
    });
    $("step").addEventListener("input", function (event) { state.step = event.target.value.trim(); refresh(true); });
    var timer = null;
    $("search").addEventListener("input", function (event) {
      clearTimeout(timer);
      var value = event.target.value.trim().toLowerCase();
      timer = setTimeout(function () { state.grep = value; refresh(true); }, 120);
    });
    $("prev").addEventListener("click", function () { state.page -= 1; draw(); window.scrollTo(0, 0); });
    $("next").addEventListener("click", function () { state.page += 1; draw(); window.scrollTo(0, 0); });
    $("collapse-all").addEventListener("click", function () {
      rows.forEach(function (row) { if (row.k === "s") { collapsed["r" + row.r + "s" + row.s] = true; } });
      refresh(false);
    });
    $("expand-all").addEventListener("click", function () { collapsed = {}; refresh(false); });
  }

  drawHead();
  drawControls();
  bind();
  refresh(true);
  document.body.setAttribute("data-ready", "1");
}());
