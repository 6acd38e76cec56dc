// Shared by every page: theme toggle, relative times (the absolute UTC time is their title:
// sessions_app/lib/when.py), keyboard moves, fragment fetches.
(function () {
  "use strict";
  var root = document.documentElement;
  var MODES = ["auto", "light", "dark"];
  var LABELS = { auto: "Theme: follows the system", light: "Theme: light", dark: "Theme: dark" };
  var ICONS = { auto: "◐", light: "☀", dark: "☾" };
  var toggle = document.getElementById("theme-toggle");

  function mode() { return root.dataset.theme || "auto"; }
  function showMode() {
    if (!toggle) return;
    toggle.textContent = ICONS[mode()];
    toggle.title = LABELS[mode()] + " (click to change)";
    toggle.setAttribute("aria-label", LABELS[mode()]);
  }
  function setMode(next) {
    if (next === "auto") delete root.dataset.theme; else root.dataset.theme = next;
    try {
      if (next === "auto") localStorage.removeItem("ocs-theme"); else localStorage.setItem("ocs-theme", next);
    } catch (e) { /* not persisted */ }
    showMode();
  }
  function cycleTheme() { setMode(MODES[(MODES.indexOf(mode()) + 1) % MODES.length]); }
  if (toggle) { toggle.addEventListener("click", cycleTheme); showMode(); }

  function relative(ms) {
    var seconds = Math.max(0, Math.floor((Date.now() - ms) / 1000));
    if (seconds < 45) return "just now";
    var units = [[31536000, "y"], [86400, "d"], [3600, "h"], [60, "min"]];
    for (var i = 0; i < units.length; i++) {
      if (seconds >= units[i][0]) return Math.floor(seconds / units[i][0]) + " " + units[i][1] + " ago";
    }
    return "just now";
  }
  function refreshTimes(scope) {
    (scope || document).querySelectorAll("time.rel[data-ms]").forEach(function (el) {
      var ms = Number(el.dataset.ms);
      if (ms) el.textContent = relative(ms);
    });
  }
  refreshTimes(document);
  setInterval(function () { refreshTimes(document); }, 30000);

  // A server-rendered fragment as a detached element. A redirect to the login page means the
  // session ended: reload, which shows the login form.
  function fetchHTML(url) {
    return fetch(url, { credentials: "same-origin", headers: { "X-Requested-With": "fetch" } })
      .then(function (response) {
        if (response.redirected && response.url.indexOf("/accounts/login/") !== -1) {
          location.reload();
          throw new Error("logged out");
        }
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.text();
      })
      .then(function (html) {
        var holder = document.createElement("template");
        holder.innerHTML = html;
        return holder.content;
      });
  }

  function typing(target) {
    var tag = (target && target.tagName) || "";
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || (target && target.isContentEditable);
  }
  // j / k move between rows (list) or messages (transcript); / focuses the search; t theme.
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    if (event.key === "/") {
      var search = document.getElementById("q");
      if (search) { event.preventDefault(); search.focus(); search.select(); }
    } else if (event.key === "t") {
      cycleTheme();
    } else if (event.key === "j" || event.key === "k") {
      var items = Array.prototype.slice.call(document.querySelectorAll(".srow-link, article.msg"));
      if (!items.length) return;
      var active = document.activeElement;
      var at = items.indexOf(active);
      if (at === -1 && active) {
        for (var i = 0; i < items.length; i++) { if (items[i].contains(active)) { at = i; break; } }
      }
      var next = event.key === "j" ? at + 1 : (at === -1 ? items.length - 1 : at - 1);
      if (next < 0 || next >= items.length) return;
      event.preventDefault();
      items[next].focus({ preventScroll: true });
      items[next].scrollIntoView({ block: "nearest" });
    }
  });

  window.OCS = { fetchHTML: fetchHTML, refreshTimes: refreshTimes, setMode: setMode };
})();
