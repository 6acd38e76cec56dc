// The gateway WebSocket (/ws/): requests with ids, events by name, reconnect with backoff.
// The Django session cookie authenticates it (same origin). Subscriptions are made again by the
// page's onOpen handlers after every (re)connect, with `since` where the protocol has it.
(function () {
  "use strict";
  function Live() {
    this.ws = null;
    this.attempt = 0;
    this.counter = 0;
    this.pending = new Map();
    this.handlers = new Map();
    this.openHandlers = [];
    this.connectedBefore = false;
    this.status = document.getElementById("live-status");
  }
  Live.prototype.setStatus = function (state, text) {
    if (!this.status) return;
    this.status.hidden = false;
    this.status.dataset.state = state;
    this.status.textContent = text;
    this.status.title = state === "live" ? "Updates arrive live" : "Live updates paused; reconnecting";
  };
  Live.prototype.start = function () {
    window.OCSLiveInstance = this;  // for the browser tests (closing the socket on purpose)
    this.connect();
    return this;
  };
  Live.prototype.connect = function () {
    var self = this;
    var url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws/";
    var ws;
    try { ws = new WebSocket(url); } catch (e) { this.retry(); return; }
    this.ws = ws;
    ws.onopen = function () {
      self.attempt = 0;
      self.setStatus("live", "Live");
      var again = self.connectedBefore;
      self.connectedBefore = true;
      self.openHandlers.forEach(function (handler) {
        try { handler(again); } catch (e) { console.error(e); }
      });
    };
    ws.onmessage = function (message) {
      var frame;
      try { frame = JSON.parse(message.data); } catch (e) { return; }
      if (frame.type === "res") {
        var waiter = self.pending.get(frame.id);
        if (!waiter) return;
        self.pending.delete(frame.id);
        clearTimeout(waiter.timer);
        if (frame.ok) waiter.resolve(frame.payload); else waiter.reject(frame.error || {});
      } else if (frame.type === "event") {
        (self.handlers.get(frame.event) || []).forEach(function (handler) {
          try { handler(frame.payload || {}, frame); } catch (e) { console.error(e); }
        });
      }
    };
    ws.onclose = function () {
      if (self.ws !== ws) return;
      self.ws = null;
      self.pending.forEach(function (waiter) { clearTimeout(waiter.timer); waiter.reject({ code: "closed" }); });
      self.pending.clear();
      self.setStatus("reconnecting", "Reconnecting…");
      self.retry();
    };
  };
  Live.prototype.retry = function () {
    var self = this;
    var delay = Math.min(15000, 500 * Math.pow(2, this.attempt)) * (0.75 + Math.random() * 0.5);
    this.attempt += 1;
    setTimeout(function () { self.connect(); }, delay);
  };
  Live.prototype.request = function (method, params) {
    var self = this;
    return new Promise(function (resolve, reject) {
      if (!self.ws || self.ws.readyState !== WebSocket.OPEN) { reject({ code: "closed" }); return; }
      var id = "ui-" + (++self.counter);
      var timer = setTimeout(function () {
        if (self.pending.delete(id)) reject({ code: "timeout" });
      }, 15000);
      self.pending.set(id, { resolve: resolve, reject: reject, timer: timer });
      self.ws.send(JSON.stringify({ type: "req", id: id, method: method, params: params || {} }));
    });
  };
  Live.prototype.on = function (event, handler) {
    if (!this.handlers.has(event)) this.handlers.set(event, []);
    this.handlers.get(event).push(handler);
    return this;
  };
  Live.prototype.onOpen = function (handler) { this.openHandlers.push(handler); return this; };
  window.OCSLive = Live;
})();
