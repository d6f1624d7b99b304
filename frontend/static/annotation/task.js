// Worker task pages: enable Submit once every question is answered, keyboard shortcuts,
// answers in progress saved as they are given and restored, and an "Unavailable"
// placeholder for images that fail to load.
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
  // Setting .checked fires no change event: a key's answer sends one, as a click does, so
  // whatever listens to the form's changes (the start time, drafts) hears every answer.
  function changed(input) {
    input.dispatchEvent(new Event("change", { bubbles: true }));
  }

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
        changed(box);
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
      const radio = keyed || radios[Number(ev.key) - 1];
      radio.checked = true;
      changed(radio);
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

  // Restored answers show their follow-ups; the first unanswered question is current.
  const drafts = crowdvlDrafts(form, () => {
    questions.forEach(showFollowUps);
    const open = questions.findIndex((q) => !answered(q));
    focus(open < 0 ? 0 : open, false);
  });

  form.addEventListener("submit", (ev) => {
    if (!questions.every(answered)) { ev.preventDefault(); refresh(); return; }
    drafts.beforeSubmit();
    submit.disabled = true;
    submit.textContent = "Submitting…";
  });

  focus(0, false);
  drafts.restore();
});

// Answers in progress (issue 46), where the page is a worker's own open task (the form's
// data-draft: where to post them). Each change of the form, whichever task type and whether
// by click or key, is saved on the server shortly after (debounced); the page restores what
// was saved when the worker comes back (a reload, a closed browser, another device). A save
// the server refused (an ended session, no connection) is kept in this browser instead,
// restored and sent once the worker is back in. Nothing saved here counts: only Submit does.
const DRAFT_DELAY_MS = 700;
const DRAFT_RETRY_MS = 15000;
const DRAFT_KEPT_DAYS = 7;
const DRAFT_PREFIX = "crowdvl-draft:";

function crowdvlDrafts(form, restored) {
  const none = { restore() {}, beforeSubmit() {} };
  if (!form.dataset.draft) return none;
  const url = new URL(form.dataset.draft, window.location.href).href;
  const localKey = DRAFT_PREFIX + window.location.pathname;
  const tokenInput = form.querySelector("input[name=csrfmiddlewaretoken]");
  const statusLine = document.getElementById("draft-status");
  const startedAt = document.getElementById("started-at");
  let timer = null;
  let failed = false;
  let sending = false;  // one save at a time, so an older one never lands after a newer one
  let again = false;

  function say(text) { if (statusLine) statusLine.textContent = text; }

  // The form's values as a submit would send them (disabled follow-ups are not sent).
  function values() {
    const state = {};
    for (const [name, value] of new FormData(form)) {
      if (typeof value !== "string" || !value) continue;
      if (name !== "started_at" && !/^q[0-9]+(_reason|_error)?$/.test(name)) continue;
      (state[name] = state[name] || []).push(value);
    }
    return state;
  }

  function apply(state) {
    form.querySelectorAll("input[type=radio], input[type=checkbox]").forEach((box) => {
      const given = state[box.name];
      box.checked = Array.isArray(given) && given.includes(box.value);
    });
    if (startedAt && Array.isArray(state.started_at)) startedAt.value = state.started_at[0];
    restored();
  }

  function keepHere(state) {
    try {
      window.localStorage.setItem(localKey, JSON.stringify({ at: Date.now(), answers: state }));
    } catch (e) { /* storage full or off: the server's copy is all there is */ }
  }
  function forgetHere() {
    try { window.localStorage.removeItem(localKey); } catch (e) { /* nothing kept */ }
  }
  function keptHere() {
    try {
      const cutoff = Date.now() - DRAFT_KEPT_DAYS * 86400000;
      for (let i = window.localStorage.length - 1; i >= 0; i--) {  // old copies go
        const key = window.localStorage.key(i);
        if (!key || !key.startsWith(DRAFT_PREFIX)) continue;
        const kept = JSON.parse(window.localStorage.getItem(key) || "null");
        if (!kept || !(kept.at > cutoff)) window.localStorage.removeItem(key);
      }
      return JSON.parse(window.localStorage.getItem(localKey) || "null");
    } catch (e) { return null; }
  }

  function save() {
    clearTimeout(timer);
    timer = null;
    if (sending) { again = true; return; }
    sending = true;
    const state = values();
    fetch(url, {
      method: "POST",
      credentials: "same-origin",
      keepalive: true,  // a save made as the page closes still goes
      headers: {
        "Content-Type": "application/json",
        "X-CSRFToken": tokenInput ? tokenInput.value : "",
      },
      body: JSON.stringify({ answers: state }),
    }).then((response) => {
      if (response.ok) {
        failed = false;
        forgetHere();
        say("Answers saved");
      } else if (response.status === 409) {  // submitted or closed: nothing left to keep
        failed = false;
        forgetHere();
        say("");
      } else if (response.status === 429) {  // too many at once: the next one goes later
        timer = setTimeout(save, DRAFT_RETRY_MS);
      } else {
        failed = true;
        keepHere(state);
        say(response.status === 403
          ? "Not saved: your session has ended. Your answers are kept in this browser: open "
            + "your link again to go on."
          : "Not saved on the server: your answers are kept in this browser.");
      }
    }).catch(() => {
      failed = true;
      keepHere(state);
      say("Not saved (no connection): your answers are kept in this browser.");
      timer = setTimeout(save, DRAFT_RETRY_MS);
    }).finally(() => {
      sending = false;
      if (again) { again = false; save(); }
    });
  }

  function later() {
    clearTimeout(timer);
    timer = setTimeout(save, DRAFT_DELAY_MS);
  }
  form.addEventListener("change", later);
  form.addEventListener("input", later);
  // Closing the tab or the browser: the change not yet sent goes now.
  window.addEventListener("pagehide", () => { if (timer !== null || again) save(); });

  return {
    restore() {
      const script = document.getElementById("task-draft");
      const server = script ? JSON.parse(script.textContent) : null;
      const here = keptHere();
      if (here && here.answers && (!server || here.at > server.at)) {
        apply(here.answers);  // newer than the server's: unsent changes of this browser
        save();
      } else if (server && server.answers) {
        apply(server.answers);
        if (here) forgetHere();
        say("Your answers so far are back");
      }
    },
    // A submit is the answers' own way in; a change not yet saved, or a save refused, is
    // kept in this browser first, in case the submit is refused too (an ended session).
    beforeSubmit() {
      if (timer !== null || again || failed) keepHere(values());
      clearTimeout(timer);
      timer = null;
      again = false;
    },
  };
}
