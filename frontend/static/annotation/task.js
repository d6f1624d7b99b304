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
  if (!form || form.dataset.preview) return;  // previews show the task but take no answers
  const questions = Array.from(form.querySelectorAll("fieldset.question"));
  const submit = document.getElementById("submit");
  const hint = document.getElementById("submit-hint");
  const progress = document.getElementById("progress");
  let current = 0;

  const answered = (q) => q.querySelector("input[type=radio]:checked") !== null;

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

  questions.forEach((q, i) => {
    q.addEventListener("click", () => { current = i; refresh(); });
    q.addEventListener("change", () => { current = i; refresh(); });
  });

  document.addEventListener("keydown", (ev) => {
    if (ev.target instanceof HTMLInputElement && ev.target.type === "text") return;
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const radios = questions[current].querySelectorAll("input[type=radio]");
    if (/^[1-9]$/.test(ev.key) && Number(ev.key) <= radios.length) {
      radios[Number(ev.key) - 1].checked = true;
      ev.preventDefault();
      refresh();
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
