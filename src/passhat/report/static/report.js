/* passhat report: loads a case's trials on demand by adding a script element for report/trials/cNNNNN.js
   (script elements load from file://, fetch() does not) and renders trajectories with textContent only:
   tool results and messages come from the agent and the sandbox and are never parsed as HTML. */
(function () {
  "use strict";
  var meta = JSON.parse(document.getElementById("passhat-meta").textContent);
  var P = window.passhat = { data: {}, loaded: {}, waiting: {} };
  P.add = function (idx, trial) { (P.data[idx] = P.data[idx] || []).push(trial); };

  function el(tag, attrs) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") node.textContent = attrs[k]; else node.setAttribute(k, attrs[k]);
    });
    for (var i = 2; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === null || child === undefined) continue;
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }
  function show(value) {
    if (value === null || value === undefined) return "—";
    if (typeof value === "string") return value;
    var flat = JSON.stringify(value);
    return flat.length <= 72 ? flat : JSON.stringify(value, null, 1);
  }
  function pre(value) { return el("pre", { "class": "val", text: show(value) }); }

  function load(row, done) {
    var idx = row.dataset.idx;
    if (P.loaded[idx]) return done(true);
    if (P.waiting[idx]) return P.waiting[idx].push(done);
    P.waiting[idx] = [done];
    var s = document.createElement("script");
    s.src = row.dataset.chunk + "?v=" + meta.version;
    s.charset = "utf-8";
    s.onload = function () { P.loaded[idx] = true; finish(true); };
    s.onerror = function () { finish(false); };
    function finish(ok) { var cbs = P.waiting[idx]; delete P.waiting[idx]; cbs.forEach(function (cb) { cb(ok); }); }
    document.head.appendChild(s);
  }

  // Planned faults of the case (the row's data-faults, from the manifest) that no call of this trial reached:
  // the trial did not test them. An infrastructure error is no trial of the agent's: nothing is said of it.
  function unreached(t, planned) {
    if (t.outcome === "error") return [];
    var acted = {};
    t.calls.forEach(function (c) { if (c.fault) acted[c.fault] = true; });
    return planned.filter(function (f) { return !acted[f]; });
  }

  function trialSummary(t, missed) {
    var f = t.failure;
    return el("summary", {},
      "trial " + t.trial + " · ", el("span", { "class": "outcome", text: t.outcome }),
      f ? el("span", {}, " · ", el("span", { "class": "cat", text: f.category }),
        f.step ? " at step " + f.step : "") : null,
      " · " + t.calls.length + " call(s) · " + t.end_reason + " · " + t.timing.agent_s.toFixed(3) + " s" +
      (t.usage.cost ? " · $" + t.usage.cost.toFixed(4) : "") + (t.attempt > 1 ? " · retried" : ""),
      missed.length ? el("span", { "class": "bad", text: " · ⚠ " + missed.length + " planned fault(s) never reached" }) : null);
  }

  function stepsTable(t) {
    var culprit = t.failure ? t.failure.step : null;
    var body = el("tbody");
    t.calls.forEach(function (c) {
      var cls = (c.step === culprit ? "culprit " : "") + (c.status !== "ok" ? "err" : "");
      var status = el("td", {}, el("span", { "class": c.status === "ok" ? "ok" : "bad", text: c.status }),
        c.step === culprit ? el("div", { "class": "bad", text: "⚑ earliest failing step" }) : null,
        c.abandoned ? el("div", { "class": "bad abandoned", text: "⚠ abandoned: the client went away " +
          ({ before: "before the tool ran", during: "while the tool ran", after: "after the tool ran" }[c.abandoned_when] || "") +
          "; the agent never saw this answer" }) : null,
        c.error ? pre(c.error) : null);
      var result = el("td", {}, pre(c.result));
      if (c.hidden_result !== null && c.hidden_result !== undefined) {
        result.appendChild(el("div", { "class": "note", text: "actually (hidden by the fault):" }));
        result.appendChild(pre(c.hidden_result));
      }
      body.appendChild(el("tr", { "class": cls, "data-step": c.step },
        el("td", { "class": "num", text: c.step }), el("td", { "class": "mono tool", text: c.tool }),
        el("td", {}, pre(c.arguments)), result,
        el("td", {}, c.fault ? el("span", { "class": "fault", text: c.fault }) : "—",
          c.fault_not_applied ? el("div", { "class": "bad not-applied", text: "⚠ not applied: " + c.fault_not_applied }) : null),
        status));
    });
    var head = el("tr", {}, el("th", { text: "#" }), el("th", { text: "tool" }), el("th", { text: "arguments" }),
      el("th", { text: "result (as the agent saw it)" }), el("th", { text: "fault injected" }), el("th", { text: "status / error" }));
    return el("table", { "class": "steps" }, el("thead", {}, head), body);
  }

  function diffView(diff) {
    var box = el("div", { "class": "diff" });
    var tables = Object.keys(diff || {});
    if (!tables.length) box.appendChild(el("p", { "class": "note", text: "no change to the world" }));
    tables.forEach(function (table) {
      diff[table].forEach(function (ch) {
        var kind = ch.kind === "inserted" ? "ins" : ch.kind === "deleted" ? "del" : "upd";
        var shown = ch.after || ch.before;
        if (ch.kind === "updated" && ch.before && ch.after) {
          shown = {};
          Object.keys(ch.after).forEach(function (k) {
            if (JSON.stringify(ch.before[k]) !== JSON.stringify(ch.after[k])) shown[k] = [ch.before[k], "→", ch.after[k]];
          });
        }
        box.appendChild(el("div", {}, el("b", { "class": kind, text: ch.kind }), " " + table + " " + show(ch.key)));
        box.appendChild(pre(shown));
      });
    });
    return box;
  }

  function filesView(files) {
    var box = el("div", { "class": "diff files" });
    var changes = (files && files.changes) || [];
    if (!changes.length) box.appendChild(el("p", { "class": "note", text: "no file changed" }));
    changes.forEach(function (ch) {
      var kind = ch.kind === "added" ? "ins" : ch.kind === "removed" ? "del" : "upd";
      box.appendChild(el("div", {}, el("b", { "class": kind, text: ch.kind }), " ", el("span", { "class": "mono", text: ch.path })));
      if (ch.text_diff) {
        var lines = el("pre", { "class": "udiff" });
        ch.text_diff.split("\n").forEach(function (line) {
          var c = line.charAt(0) === "+" && line.indexOf("+++") !== 0 ? "ins" : line.charAt(0) === "-" && line.indexOf("---") !== 0 ? "del" : "";
          lines.appendChild(el("span", { "class": c, text: line }));
        });
        box.appendChild(lines);
      } else if (ch.binary) {
        box.appendChild(el("p", { "class": "note", text: "binary file" }));
      }
    });
    return box;
  }

  function gradesTable(grades) {
    var sorted = grades.slice().sort(function (a, b) { return (a.passed - b.passed) || (b.required - a.required); });
    var body = el("tbody");
    sorted.forEach(function (g) {
      body.appendChild(el("tr", {}, el("td", { "class": g.passed ? "ok" : "bad", text: g.passed ? "✓" : "✗" }),
        el("td", { text: g.grader + (g.required ? "" : " (info)") }), el("td", { text: g.name }), el("td", { text: g.reason })));
    });
    return el("table", { "class": "grades" }, body);
  }

  function trajectory(t, missed) {
    var left = el("div", {}, el("h3", { text: "Trajectory" }), stepsTable(t));
    missed.forEach(function (f) {
      left.appendChild(el("div", { "class": "bad not-reached",
        text: "⚠ never reached: " + f + " — no call of this trial got to it, so the trial did not test it" }));
    });
    left.appendChild(el("h3", { text: "Conversation" }));
    var msgs = el("div", { "class": "msgs" });
    t.messages.forEach(function (m) { msgs.appendChild(el("p", {}, el("span", { "class": "role", text: m.role }), m.text)); });
    left.appendChild(msgs);
    if (t.error) left.appendChild(el("div", {}, el("h3", { text: "Error" }), pre(t.error)));
    var right = el("div", {});
    if (t.failure) right.appendChild(el("div", { "class": "failure" }, el("b", { text: t.failure.category }),
      t.failure.step ? " at step " + t.failure.step : " (final state / reply)", el("div", { text: t.failure.evidence })));
    right.appendChild(el("h3", { text: "World diff" }));
    right.appendChild(diffView(t.diff));
    if (t.files) {
      right.appendChild(el("h3", { text: "File changes" }));
      right.appendChild(filesView(t.files));
    }
    right.appendChild(el("h3", { text: "Grades" }));
    right.appendChild(gradesTable(t.grades));
    right.appendChild(el("p", { "class": "note", text: "seed " + t.seed + (t.trace_id ? " · trace " + t.trace_id : "") }));
    return el("div", { "class": "traj" }, left, right);
  }

  function renderTrials(row, cell) {
    var trials = (P.data[row.dataset.idx] || []).slice().sort(function (a, b) { return a.trial - b.trial; });
    var planned = JSON.parse(row.dataset.faults || "[]");
    cell.textContent = "";
    trials.forEach(function (t) {
      var missed = unreached(t, planned);
      var d = el("details", { "class": "trial " + t.outcome, "data-trial": t.trial }, trialSummary(t, missed));
      d.addEventListener("toggle", function () { if (d.open && d.children.length === 1) d.appendChild(trajectory(t, missed)); });
      cell.appendChild(d);
    });
  }

  function toggle(row, button) {
    var next = row.nextElementSibling;
    if (next && next.classList.contains("detail")) {
      next.classList.toggle("hidden");
      button.setAttribute("aria-expanded", String(!next.classList.contains("hidden")));
      button.textContent = next.classList.contains("hidden") ? "▸" : "▾";
      return;
    }
    var cell = el("td", { colspan: meta.columns, text: "loading " + row.dataset.trials + " trial(s)…" });
    row.parentNode.insertBefore(el("tr", { "class": "detail" }, cell), row.nextSibling);
    button.setAttribute("aria-expanded", "true");
    button.textContent = "▾";
    load(row, function (ok) {
      if (ok) renderTrials(row, cell);
      else cell.textContent = "could not load " + row.dataset.chunk + " — regenerate it with: passhat report RUN";
    });
  }

  document.getElementById("case-table").addEventListener("click", function (e) {
    var button = e.target.closest("button.expand");
    if (button) toggle(button.closest("tr"), button);
  });

  function applyFilter() {
    var q = document.getElementById("filter").value.toLowerCase();
    var failing = document.getElementById("failing-only").checked;
    document.querySelectorAll("#case-table tr.case").forEach(function (row) {
      var hide = (q && row.dataset.search.toLowerCase().indexOf(q) < 0) || (failing && row.classList.contains("pass"));
      row.classList.toggle("hidden", !!hide);
      var next = row.nextElementSibling, button = row.querySelector("button.expand");
      if (hide && next && next.classList.contains("detail")) {
        next.classList.add("hidden");
        button.setAttribute("aria-expanded", "false");
        button.textContent = "▸";
      }
    });
  }
  document.getElementById("filter").addEventListener("input", applyFilter);
  document.getElementById("failing-only").addEventListener("change", applyFilter);
})();
