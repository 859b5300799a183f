// The dashboard follows the knowledge base without a reload: every 15 seconds a
// page asks the server for itself again (304 and no body while nothing changed,
// by its ETag) and swaps in its new <main>. No other request, no other origin.
(function () {
  "use strict";
  var every = 15000, tag = null;
  var live = document.getElementById("live");
  function say(text) { if (live) { live.textContent = text; } }
  function now() { return new Date().toLocaleTimeString(); }
  function swap(html) {
    var fresh = new DOMParser().parseFromString(html, "text/html").querySelector("main");
    var main = document.querySelector("main");
    if (fresh && main && fresh.innerHTML !== main.innerHTML) {
      main.innerHTML = fresh.innerHTML;
      say("live · updated " + now());
    } else {
      say("live · checked " + now());
    }
  }
  function poll() {
    var headers = { "Accept": "text/html" };
    if (tag) { headers["If-None-Match"] = tag; }
    fetch(location.href, { headers: headers, cache: "no-store", credentials: "same-origin" })
      .then(function (r) {
        if (r.status === 304) { say("live · checked " + now()); return null; }
        if (!r.ok) { say("live · the server answered " + r.status + "; trying again"); return null; }
        tag = r.headers.get("ETag");
        return r.text();
      })
      .then(function (html) { if (html !== null) { swap(html); } })
      .catch(function () { say("live · cannot reach the server; trying again"); })
      .then(function () { setTimeout(poll, every); });
  }
  document.body.setAttribute("data-live", String(every / 1000));
  say("live · every " + every / 1000 + " s");
  setTimeout(poll, every);
})();
