// The family's page works without this script; it only improves it:
// Enter sends (Shift+Enter for a new line),
// a draft survives the page's reloads, and while a reply is awaited the
// page asks whether it is in instead of reloading every second.
(function () {
  "use strict";

  var thread = document.getElementById("thread");

  var box = document.getElementById("message");
  if (box && box.form) {
    var form = box.form;
    var key = "mombot-draft:" + location.pathname;
    var draft = sessionStorage.getItem(key);
    if (draft && !box.value) {
      box.value = draft;
    }
    box.focus();
    box.addEventListener("input", function () {
      sessionStorage.setItem(key, box.value);
    });
    box.addEventListener("keydown", function (e) {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        form.requestSubmit();
      }
    });
    form.addEventListener("submit", function () {
      sessionStorage.removeItem(key);
      var send = form.querySelector("button[type=submit]");
      if (send) {
        // One post per press, however impatient the finger.
        setTimeout(function () { send.disabled = true; }, 0);
      }
    });
  }

  if (thread && thread.hasAttribute("data-pending")) {
    var url = thread.getAttribute("data-pending-url");
    var poll = function () {
      fetch(url, { credentials: "same-origin", cache: "no-store" })
        .then(function (r) { return r.json(); })
        .then(function (s) {
          if (s.pending) {
            setTimeout(poll, 500);
          } else {
            location.reload();
          }
        })
        .catch(function () { setTimeout(poll, 2000); });
    };
    setTimeout(poll, 300);
  }
})();
