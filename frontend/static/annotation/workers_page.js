// The workers page's accuracy histogram (Chart.js, vendored), from the numbers in its table.
(function () {
  "use strict";
  var node = document.getElementById("histogram-data");
  var canvas = document.getElementById("histogram-chart");
  if (!node || !canvas || !window.Chart) return;
  var data = JSON.parse(node.textContent);
  new window.Chart(canvas, {
    type: "bar",
    data: { labels: data.labels, datasets: [{ label: "workers", data: data.counts, backgroundColor: "#1f5f8b" }] },
    options: { animation: false, plugins: { legend: { display: false } },
               scales: { x: { title: { display: true, text: data.measure } }, y: { ticks: { precision: 0 } } } }
  });
})();
