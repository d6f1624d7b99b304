// The batch page's live status: polls the batch's status (GET /api/batches/<id>/status/)
// every few seconds and rewrites the counts and the rows; no reload, no library.
(function () {
  "use strict";
  var script = document.getElementById("batch-live-script");
  if (!script) return;
  var interval = parseInt(script.dataset.interval, 10) || 5000;
  function cell(text, cls) {
    var td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    return td;
  }
  function render(status) {
    Object.keys(status.counts).forEach(function (state) {
      var td = document.getElementById("live-count-" + state);
      if (td) td.textContent = String(status.counts[state]);
    });
    var body = document.querySelector("#live-rows tbody");
    body.textContent = "";
    status.rows.forEach(function (row) {
      var tr = document.createElement("tr");
      tr.dataset.assignment = String(row.assignment);
      var code = document.createElement("code");
      code.textContent = row.worker;
      var who = document.createElement("td");
      who.appendChild(code);
      tr.append(cell(String(row.assignment)), cell(String(row.hit)), who,
        cell(row.state + (row.confirmed ? "" : " (unconfirmed)"), "state"),
        cell(row.accepted_at.replace("T", " ").slice(0, 19)),
        cell(row.elapsed_seconds + " s", "elapsed"));
      body.appendChild(tr);
    });
    if (!status.rows.length) {
      var none = document.createElement("tr");
      none.className = "none";
      var td = cell("No claim yet.");
      td.colSpan = 6;
      none.appendChild(td);
      body.appendChild(none);
    }
    document.getElementById("live-updated").textContent = status.now.slice(11, 19) + " UTC";
  }
  function refresh() {
    fetch(script.dataset.statusUrl, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (status) { if (status) render(status); })
      .catch(function () { /* try again at the next tick */ })
      .finally(function () { setTimeout(refresh, interval); });
  }
  setTimeout(refresh, interval);
})();
