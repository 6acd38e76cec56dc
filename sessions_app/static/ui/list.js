// The session list, live: sessions.changed events name a key; the rows of those keys are
// fetched as server-rendered HTML (with the page's filters), then replaced, inserted in
// (updatedAt, id) order, or removed when they no longer match.
(function () {
  "use strict";
  var list = document.getElementById("session-rows");
  if (!list || !window.OCSLive) return;
  var firstPage = list.dataset.firstPage === "1";
  var hasMore = list.dataset.hasMore === "1";
  var pageSize = 50;
  var rowsUrl = list.dataset.rowsUrl;
  var filterQuery = list.dataset.filterQuery || "";
  var pending = new Set();
  var timer = null;
  var busy = false;

  function rowOf(key) {
    var rows = list.querySelectorAll("li.srow");
    for (var i = 0; i < rows.length; i++) { if (rows[i].dataset.key === key) return rows[i]; }
    return null;
  }
  function newer(a, b) {  // is row a before row b (newest first)?
    var ua = Number(a.dataset.updated), ub = Number(b.dataset.updated);
    return ua !== ub ? ua > ub : Number(a.dataset.id) > Number(b.dataset.id);
  }
  function insert(row) {
    var rows = list.querySelectorAll("li.srow");
    for (var i = 0; i < rows.length; i++) {
      if (newer(row, rows[i])) { list.insertBefore(row, rows[i]); return true; }
    }
    if (rows.length < pageSize || !hasMore) { list.appendChild(row); return true; }
    return false;  // it belongs on a later page
  }
  function flash(row) {
    row.classList.add("flash-in");
    setTimeout(function () { row.classList.remove("flash-in"); }, 1700);
  }
  function trim() {
    var rows = list.querySelectorAll("li.srow");
    for (var i = rows.length - 1; i >= pageSize; i--) { rows[i].remove(); hasMore = true; }
    var empty = document.getElementById("no-rows");
    if (empty) empty.hidden = rows.length > 0;
  }

  function schedule(key) {
    if (!rowOf(key) && !firstPage) return;  // later pages only update the rows they show
    pending.add(key);
    if (!timer) timer = setTimeout(flush, 300);
  }
  function flush() {
    timer = null;
    if (busy) { timer = setTimeout(flush, 300); return; }
    var keys = Array.from(pending).slice(0, 50);
    keys.forEach(function (key) { pending.delete(key); });
    if (!keys.length) return;
    busy = true;
    var params = new URLSearchParams(filterQuery);
    keys.forEach(function (key) { params.append("key", key); });
    OCS.fetchHTML(rowsUrl + "?" + params.toString())
      .then(function (fragment) {
        var found = new Map();
        fragment.querySelectorAll("li.srow").forEach(function (row) { found.set(row.dataset.key, row); });
        keys.forEach(function (key) {
          var old = rowOf(key);
          var row = found.get(key);
          if (!row) { if (old) old.remove(); return; }
          if (!firstPage) { if (old) { old.replaceWith(row); flash(row); } return; }
          if (old) old.remove();
          if (insert(row)) flash(row);
        });
        trim();
        OCS.refreshTimes(list);
      })
      .catch(function (error) { console.warn("row update failed", error); })
      .then(function () {
        busy = false;
        if (pending.size && !timer) timer = setTimeout(flush, 300);
      });
  }
  function reload() {  // after a reconnect: what changed meanwhile is unknown; fetch the page
    OCS.fetchHTML(rowsUrl + location.search).then(function (fragment) {
      list.replaceChildren(fragment);
      trim();
      OCS.refreshTimes(list);
    }).catch(function () { /* the next event or reconnect tries again */ });
  }

  var live = new OCSLive();
  live.on("sessions.changed", function (payload) {
    if (payload && payload.key) schedule(payload.key);
  });
  live.onOpen(function (again) {
    live.request("sessions.subscribe", {}).catch(function () { /* closed: reconnect resubscribes */ });
    if (again) reload();
  });
  live.start();
})();
