// The run page's charts (Chart.js, vendored) from the numbers the page embeds, and a poller
// that refreshes the funnel and the jobs every few seconds while a job is running.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("run-data").textContent);
  var script = document.getElementById("run-page-script");
  var charts = {};
  function draw(id, config) {
    var canvas = document.getElementById(id);
    if (canvas && window.Chart) charts[id] = new window.Chart(canvas, config);
  }
  var noAnimation = { animation: false, responsive: true };
  draw("funnel-chart", {
    type: "bar",
    data: { labels: data.funnel.labels, datasets: [{ label: "count", data: data.funnel.counts, backgroundColor: "#1f5f8b" }] },
    options: Object.assign({ plugins: { legend: { display: false } } }, noAnimation)
  });
  draw("progress-chart", {
    type: "line",
    data: { datasets: data.progress.map(function (b) { return { label: b.label, data: b.points, stepped: true }; }) },
    options: Object.assign({ scales: { x: { type: "linear", title: { display: true, text: "minutes since publishing" } },
                                      y: { title: { display: true, text: "submissions" } } } }, noAnimation)
  });
  // Stages with one answer per item have nothing to compare: the table says so, no bar.
  var compared = data.agreement.filter(function (a) { return a.pairs > 0; });
  draw("agreement-chart", {
    type: "bar",
    data: { labels: compared.map(function (a) { return a.stage; }),
            datasets: [{ label: "agreeing answer pairs", data: compared.map(function (a) { return a.agreement * 100; }), backgroundColor: "#2e7d32" }] },
    options: Object.assign({ scales: { y: { min: 0, max: 100 } } }, noAnimation)
  });
  function refresh() {
    fetch(script.dataset.statusUrl, { credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (status) {
        document.getElementById("run-status").textContent = status.status_label;
        if (charts["funnel-chart"]) {
          charts["funnel-chart"].data.labels = status.funnel.labels;
          charts["funnel-chart"].data.datasets[0].data = status.funnel.counts;
          charts["funnel-chart"].update();
        }
        var live = false;
        status.jobs.forEach(function (j) {
          live = live || j.live;
          var row = document.getElementById("job-" + j.id);
          if (!row) return;
          row.querySelector(".state").textContent = j.state;
          row.querySelector("progress").value = j.progress;
          row.querySelector(".message").textContent = j.message;
        });
        if (live) setTimeout(refresh, 3000);
      });
  }
  if (data.jobs.some(function (j) { return j.live; })) setTimeout(refresh, 3000);
})();
