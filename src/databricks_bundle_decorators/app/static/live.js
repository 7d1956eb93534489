// Live updates of a running backfill's page: the server renders the changing part
// (counts, actions, grid, failures, timeline); this asks for it every few seconds and
// swaps it in, without reloading the page. It stops once the backfill has ended and
// no operation (an undo) started from the page is running.
(function () {
  "use strict";
  function follow(box) {
    var url = box.getAttribute("data-live");
    var every = Math.max(0.2, parseFloat(box.getAttribute("data-every") || "2")) * 1000;
    function tick() {
      fetch(url, { headers: { Accept: "text/html" }, credentials: "same-origin" })
        .then(function (response) { return response.ok ? response.text() : null; })
        .then(function (html) {
          if (html !== null) {
            var next = document.createElement("template");
            next.innerHTML = html;
            var fresh = next.content.querySelector("#live");
            box.innerHTML = fresh ? fresh.innerHTML : html;
            box.setAttribute("data-updated", String(Date.now()));
            var busy = box.querySelector('#operation[data-state="running"]');
            if (box.querySelector("[data-ended]") && !busy) { return; }
          }
          window.setTimeout(tick, every);
        })
        .catch(function () { window.setTimeout(tick, every * 2); });
    }
    window.setTimeout(tick, every);
  }
  document.addEventListener("DOMContentLoaded", function () {
    var box = document.querySelector("[data-live]");
    if (box) { follow(box); }
  });
})();
