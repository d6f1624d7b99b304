// The new-batch form: choosing a stage puts that stage's default sizes in the size fields
// the researcher has not changed (the sizes come from #stage-sizes, the server's).
(function () {
  "use strict";
  var data = document.getElementById("stage-sizes");
  var stage = document.querySelector("#batch-form select[name=stage]");
  if (!data || !stage) return;
  var sizes = JSON.parse(data.textContent);
  var shown = stage.value;
  stage.addEventListener("change", function () {
    var before = sizes[shown] || {}, after = sizes[stage.value] || {};
    Object.keys(after).forEach(function (name) {
      var input = document.querySelector("#batch-form input[name=" + name + "]");
      if (input && (input.value === "" || input.value === String(before[name]))) {
        input.value = after[name];
      }
    });
    shown = stage.value;
  });
})();
