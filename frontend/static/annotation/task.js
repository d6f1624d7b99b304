// Worker task pages: enable Submit once every question is answered, keyboard shortcuts,
// and an "Unavailable" placeholder for images that fail to load.
"use strict";

function crowdvlImageFailed(img) {
  if (img.dataset.failed) return;
  img.dataset.failed = "1";
  const box = document.createElement("div");
  box.className = "unavailable";
  box.setAttribute("role", "img");
  box.textContent = "Unavailable";
  img.replaceWith(box);
}

document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("task-form");
  if (!form) return;
  const questions = Array.from(form.querySelectorAll("fieldset.question"));
  const submit = document.getElementById("submit");
  const hint = document.getElementById("submit-hint");
  const progress = document.getElementById("progress");
  let current = 0;

  // A question is answered when a choice is made and, where follow-ups are shown for an
  // uncertain answer, a shortcoming (and for "described wrongly", an error type) is given.
  function answered(q) {
    const choice = q.querySelector("input[type=radio]:checked");
    if (choice === null) return false;
    const follow = q.querySelector(".follow-ups");
    if (!follow || !choice.dataset.uncertain) return true;
    const reasons = follow.querySelectorAll("input[type=checkbox][name$=_reason]:checked");
    if (reasons.length === 0) return false;
    const wrong = follow.querySelector("input[data-wrong]:checked");
    return !wrong || follow.querySelectorAll("input[name$=_error]:checked").length > 0;
  }

  function showFollowUps(q) {
    const follow = q.querySelector(".follow-ups");
    if (!follow) return;
    const choice = q.querySelector("input[type=radio]:checked");
    const open = Boolean(choice && choice.dataset.uncertain);
    follow.hidden = !open;
    follow.querySelectorAll("input").forEach((box) => { box.disabled = !open; });
    const wrong = follow.querySelector("input[data-wrong]");
    const types = follow.querySelector(".error-types");
    if (types) {
      const show = open && wrong && wrong.checked;
      types.hidden = !show;
      types.querySelectorAll("input").forEach((box) => { box.disabled = !show; });
    }
  }

  function refresh() {
    const done = questions.filter(answered).length;
    submit.disabled = done !== questions.length;
    hint.hidden = !submit.disabled;
    progress.textContent = `${done} / ${questions.length} answered`;
    questions.forEach((q, i) => {
      q.classList.toggle("current", i === current);
      q.classList.toggle("answered", answered(q));
    });
  }

  function focus(i, scroll = true) {
    current = Math.max(0, Math.min(questions.length - 1, i));
    refresh();
    if (scroll) questions[current].scrollIntoView({ block: "center", behavior: "smooth" });
  }

  function nextUnanswered() {
    for (let k = 1; k <= questions.length; k++) {
      const i = (current + k) % questions.length;
      if (!answered(questions[i])) return i;
    }
    return current;
  }

  // When work began, for the effective hourly pay: the first answer given on the page.
  const startedAt = document.getElementById("started-at");
  function markStarted() {
    if (startedAt && !startedAt.value) startedAt.value = String(Date.now());
  }
  form.addEventListener("change", markStarted);

  questions.forEach((q, i) => {
    q.addEventListener("click", () => { current = i; refresh(); });
    q.addEventListener("change", () => { current = i; showFollowUps(q); refresh(); });
    showFollowUps(q);
  });

  document.addEventListener("keydown", (ev) => {
    if (ev.target instanceof HTMLInputElement && ev.target.type === "text") return;
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    // While an uncertain answer's follow-ups are open, digits tick its shortcomings by
    // position (the numbers shown beside them) instead of changing the answer; ArrowDown/j
    // moves on. Error types are too many for single keys: they are clicked.
    const follow = questions[current].querySelector(".follow-ups:not([hidden])");
    if (follow && /^[1-9]$/.test(ev.key)) {
      const boxes = Array.from(follow.querySelectorAll("input[type=checkbox][name$=_reason]"));
      const box = boxes[Number(ev.key) - 1];
      if (box) {
        ev.preventDefault();
        box.checked = !box.checked;
        showFollowUps(questions[current]);
        refresh();
      }
      return;
    }
    const radios = questions[current].querySelectorAll("input[type=radio]");
    // A rating scale names its keys (0-5); other questions take 1-9 by position.
    const keyed = questions[current].querySelector(`input[type=radio][data-key="${CSS.escape(ev.key)}"]`);
    const byPosition = /^[1-9]$/.test(ev.key) && Number(ev.key) <= radios.length
      && !radios[0].dataset.key;
    if (keyed || byPosition) {
      (keyed || radios[Number(ev.key) - 1]).checked = true;
      markStarted();  // setting .checked fires no change event
      ev.preventDefault();
      showFollowUps(questions[current]);
      refresh();
      // An uncertain answer keeps the question open for its follow-ups.
      if (!answered(questions[current])) return;
      if (questions.every(answered)) { submit.focus(); } else { focus(nextUnanswered()); }
    } else if (ev.key === "ArrowDown" || ev.key === "j") {
      ev.preventDefault(); focus(current + 1);
    } else if (ev.key === "ArrowUp" || ev.key === "k") {
      ev.preventDefault(); focus(current - 1);
    } else if (ev.key === "Enter" && !submit.disabled) {
      ev.preventDefault(); form.requestSubmit(submit);
    }
  });

  form.addEventListener("submit", (ev) => {
    if (!questions.every(answered)) { ev.preventDefault(); refresh(); return; }
    submit.disabled = true;
    submit.textContent = "Submitting…";
  });

  focus(0, false);
});
