// One transcript: older pages on scroll, deep links (#seq-N), follow, and live messages.
// Every message is rendered by the server (the messages/ fragment); this script only asks for
// the right page and puts it in place, keyed by seq so nothing shows twice.
(function () {
  "use strict";
  var box = document.getElementById("transcript");
  if (!box) return;
  var pages = document.getElementById("pages");
  var olderBox = document.getElementById("older");
  var newerBox = document.getElementById("newer");
  var follow = document.getElementById("follow");
  var thinking = document.getElementById("show-thinking");
  var pill = document.getElementById("new-messages");
  var panel = document.getElementById("panel");
  var messagesUrl = box.dataset.messagesUrl;
  var panelUrl = box.dataset.panelUrl;
  var keys = [box.dataset.key, box.dataset.canonicalKey];
  var state = { first: null, last: null, hasOlder: false, hasNewer: false };
  var sessionLast = Number(box.dataset.sessionLastSeq) || 0;
  var loadingOlder = false;
  var appending = false;
  var appendAgain = false;
  var unseen = 0;

  function readState() {
    var all = pages.querySelectorAll(".page");
    var first = null, last = null;
    all.forEach(function (page) {
      if (page.dataset.firstSeq && first === null) first = page;
      if (page.dataset.lastSeq) last = page;
    });
    state.first = first ? Number(first.dataset.firstSeq) : null;
    state.last = last ? Number(last.dataset.lastSeq) : null;
    state.hasOlder = first ? first.dataset.hasOlder === "1" : (all[0] && all[0].dataset.hasOlder === "1");
    state.hasNewer = last ? last.dataset.hasNewer === "1" : false;
    if (!first && all.length) state.hasNewer = all[all.length - 1].dataset.hasNewer === "1";
    var older = document.getElementById("load-older");
    if (older) {
      older.hidden = !state.hasOlder;
      if (state.first) older.href = "?at=" + (state.first - 1) + "#seq-" + (state.first - 1);
    }
    document.getElementById("transcript-start").hidden = state.hasOlder;
    newerBox.hidden = !state.hasNewer;
  }
  function decorate(scope) {
    OCS.refreshTimes(scope);
    if (thinking.checked) scope.querySelectorAll("details.thinking").forEach(function (d) { d.open = true; });
  }
  function atBottom() {
    return window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 80;
  }
  function toBottom() { window.scrollTo(0, document.documentElement.scrollHeight); }
  function setUnseen(count) {
    unseen = count;
    pill.hidden = unseen === 0;
    pill.textContent = unseen ? unseen + " new message" + (unseen === 1 ? "" : "s") + " ↓" : "";
  }
  function pageFrom(fragment) { return fragment.querySelector(".page"); }
  // Drop messages already shown (a live page and a replay may overlap).
  function dedupe(page) {
    page.querySelectorAll("article.msg").forEach(function (article) {
      if (document.getElementById(article.id)) article.remove();
    });
  }

  // --- older pages ------------------------------------------------------------------------
  function loadOlder() {
    if (loadingOlder || !state.hasOlder || !state.first) return Promise.resolve();
    loadingOlder = true;
    var anchor = pages.querySelector("article.msg");
    var before = anchor ? anchor.getBoundingClientRect().top : 0;
    return OCS.fetchHTML(messagesUrl + "?before=" + state.first)
      .then(function (fragment) {
        var page = pageFrom(fragment);
        if (!page) return;
        dedupe(page);
        pages.insertBefore(page, pages.firstChild);
        decorate(page);
        if (anchor) window.scrollBy(0, anchor.getBoundingClientRect().top - before);
        readState();
      })
      .catch(function (error) { console.warn("older page failed", error); })
      .then(function () {
        loadingOlder = false;
        // Still at the top (short pages, tall screen): keep going.
        if (nearTop()) setTimeout(loadOlder, 50);
      });
  }
  function nearTop() {
    return watching && state.hasOlder && olderBox.getBoundingClientRect().bottom > -200;
  }
  var watching = false;
  var observer = "IntersectionObserver" in window ? new IntersectionObserver(function (entries) {
    if (watching && entries.some(function (e) { return e.isIntersecting; })) loadOlder();
  }, { rootMargin: "400px 0px 0px 0px" }) : null;
  if (observer) observer.observe(olderBox);
  olderBox.addEventListener("click", function (event) {
    if (event.target.id === "load-older") { event.preventDefault(); loadOlder(); }
  });

  // --- newer messages (live appends, or the rest after a deep link) -------------------------
  function appendNewer() {
    if (appending) { appendAgain = true; return; }
    if (state.hasNewer) return;  // a gap below (deep link): "Load newer" or Latest closes it
    appending = true;
    appendAgain = false;
    var after = state.last || 0;
    var wasAtBottom = atBottom();
    OCS.fetchHTML(messagesUrl + "?after=" + after + "&limit=200")
      .then(function (fragment) {
        var page = pageFrom(fragment);
        if (!page) return;
        if (Number(page.dataset.sessionLastSeq) > sessionLast) sessionLast = Number(page.dataset.sessionLastSeq);
        dedupe(page);
        var added = page.querySelectorAll("article.msg");
        if (!added.length) return;
        var empty = pages.querySelector(".page .empty");
        if (empty) empty.remove();
        added.forEach(function (a) { a.classList.add("fresh"); });
        pages.appendChild(page);
        decorate(page);
        readState();
        clearDrafts(state.last || 0);  // the stored message replaces its draft, no gap between
        if (page.dataset.hasNewer === "1") appendAgain = true;
        if (follow.checked || wasAtBottom) toBottom(); else setUnseen(unseen + added.length);
      })
      .catch(function (error) { console.warn("live append failed", error); })
      .then(function () {
        appending = false;
        if (appendAgain) appendNewer();
      });
  }
  function showLatest() {
    setUnseen(0);
    if (!state.hasNewer) { toBottom(); return Promise.resolve(); }
    return OCS.fetchHTML(messagesUrl).then(function (fragment) {
      var page = pageFrom(fragment);
      if (!page) return;
      pages.replaceChildren(page);
      decorate(page);
      readState();
      toBottom();
    });
  }
  newerBox.addEventListener("click", function (event) {
    if (event.target.id !== "load-newer") return;
    event.preventDefault();
    var after = state.last || 0;
    OCS.fetchHTML(messagesUrl + "?after=" + after + "&limit=200").then(function (fragment) {
      var page = pageFrom(fragment);
      if (!page) return;
      dedupe(page);
      pages.appendChild(page);
      decorate(page);
      readState();
    });
  });
  document.getElementById("jump-latest").addEventListener("click", function () {
    follow.checked = true;
    showLatest();
  });
  pill.addEventListener("click", function () { showLatest(); });
  follow.addEventListener("change", function () { if (follow.checked) showLatest(); });
  window.addEventListener("scroll", function () {
    if (unseen && atBottom()) setUnseen(0);
    // The observer reports only changes of intersection: a scroll back to the top within the
    // frame in which a page was inserted (box out of view and back) would go unnoticed.
    if (nearTop()) loadOlder();
  }, { passive: true });
  thinking.addEventListener("change", function () {
    box.querySelectorAll("details.thinking").forEach(function (d) { d.open = thinking.checked; });
  });

  // --- deep links ---------------------------------------------------------------------------
  function targetSeq() {
    var match = /^#seq-(\d+)$/.exec(location.hash);
    return match ? Number(match[1]) : null;
  }
  function goTo(seq) {
    var element = document.getElementById("seq-" + seq);
    var ready = element ? Promise.resolve(element) : OCS.fetchHTML(messagesUrl + "?around=" + seq)
      .then(function (fragment) {
        var page = pageFrom(fragment);
        if (!page) return null;
        pages.replaceChildren(page);
        decorate(page);
        readState();
        return document.getElementById("seq-" + seq);
      });
    return ready.then(function (found) {
      if (!found) return;
      follow.checked = false;
      box.querySelectorAll("article.msg.target").forEach(function (a) { a.classList.remove("target"); });
      found.classList.add("target");
      found.scrollIntoView({ block: "center" });
      found.focus({ preventScroll: true });
    }).catch(function (error) { console.warn("deep link failed", error); });
  }
  window.addEventListener("hashchange", function () {
    var seq = targetSeq();
    if (seq) goTo(seq);
  });

  // --- the side panel follows run and metadata changes ---------------------------------------
  var panelTimer = null;
  function refreshPanel() {
    if (panelTimer) return;
    panelTimer = setTimeout(function () {
      panelTimer = null;
      if (panel.contains(document.activeElement)) return;  // never under the user's hands
      var closed = Array.from(panel.querySelectorAll("details.panel-sec:not([open])")).map(function (d) { return d.id; });
      OCS.fetchHTML(panelUrl).then(function (fragment) {
        panel.replaceChildren(fragment);
        closed.forEach(function (id) { var d = document.getElementById(id); if (d) d.open = false; });
        OCS.refreshTimes(panel);
      }).catch(function () { /* the next change tries again */ });
    }, 1000);
  }
  if (window.matchMedia && window.matchMedia("(max-width: 860px)").matches) {
    panel.querySelectorAll("details.panel-sec").forEach(function (d) { d.open = false; });
  }

  // --- streaming text (session.delta: an ACP harness's reply before it is stored) -----------
  // One draft per streaming source (this session, or a child with streamTo), shown below the
  // stored messages and built with textContent only. It goes when a stored message comes; a
  // reconnect reads the stored messages, so a missed delta costs nothing but the preview.
  var drafts = new Map();
  function applyDelta(payload) {
    var source = payload.childSessionKey || "";
    var draft = drafts.get(source);
    if (draft && (draft.afterSeq !== payload.afterSeq || draft.type !== payload.type)) {
      draft.node.remove();
      draft = null;
    }
    if (!draft) {
      var node = document.createElement("article");
      node.className = "msg draft role-assistant";
      node.setAttribute("aria-live", "polite");
      var head = document.createElement("header");
      head.className = "msg-head";
      var role = document.createElement("span");
      role.className = "role";
      role.textContent = payload.type === "thinking" ? "Thinking" : "Assistant";
      head.appendChild(role);
      var badge = document.createElement("span");
      badge.className = "badge muted";
      badge.textContent = source ? "streaming from " + source : "streaming";
      head.appendChild(badge);
      var body = document.createElement("p");
      body.className = "text";
      node.appendChild(head);
      node.appendChild(body);
      newerBox.parentNode.insertBefore(node, newerBox.nextSibling);
      draft = { node: node, body: body, text: "", afterSeq: payload.afterSeq, type: payload.type };
      drafts.set(source, draft);
    }
    var chars = Array.from(draft.text);  // offsets count code points, not UTF-16 units
    // A delta past what we have (we joined mid-segment): show what came, marked as partial.
    var kept = payload.offset <= chars.length ? chars.slice(0, payload.offset).join("") : draft.text + "…";
    draft.text = kept + payload.delta;
    draft.body.textContent = draft.text;
    if (follow.checked || atBottom()) toBottom();
  }
  function clearDrafts(sessionSeq) {
    drafts.forEach(function (draft, source) {
      // This session's own segment is stored above its afterSeq; a child's shows up here as a
      // progress note, any new message of this session.
      if (source || sessionSeq > draft.afterSeq) {
        draft.node.remove();
        drafts.delete(source);
      }
    });
  }

  // --- live -------------------------------------------------------------------------------
  if (window.OCSLive) {
    var live = new OCSLive();
    live.on("session.delta", function (payload) {
      if (keys.indexOf(payload.sessionKey) === -1 || state.hasNewer) return;
      applyDelta(payload);
    });
    live.on("session.message", function (payload) {
      if (keys.indexOf(payload.sessionKey) === -1) return;
      if (state.hasNewer) clearDrafts(payload.messageSeq);  // else once it is on the page
      if (payload.messageSeq > sessionLast) sessionLast = payload.messageSeq;
      if (state.hasNewer) { setUnseen(unseen + 1); return; }
      if (!state.last || payload.messageSeq > state.last) appendNewer();
    });
    live.on("sessions.changed", function (payload) {
      if (payload && keys.indexOf(payload.key) !== -1) refreshPanel();
    });
    live.onOpen(function (again) {
      // `since` = the last seq on screen: the server replays what came after it, so a
      // reconnect loses nothing; seq-keyed appends mean nothing shows twice.
      live.request("sessions.messages.subscribe", { key: box.dataset.canonicalKey, since: state.last || 0 })
        .then(function (reply) {
          if (reply && reply.lastSeq > (state.last || 0) && !state.hasNewer) appendNewer();
        })
        .catch(function () { /* closed: the next open subscribes again */ });
      live.request("sessions.subscribe", {}).catch(function () {});
      if (again) refreshPanel();
    });
    live.start();
  }

  // --- start --------------------------------------------------------------------------------
  readState();
  decorate(pages);
  var initial = targetSeq() || Number(new URLSearchParams(location.search).get("at")) || null;
  (initial ? goTo(initial) : Promise.resolve(toBottom())).then(function () {
    requestAnimationFrame(function () { watching = true; });
  });
})();
