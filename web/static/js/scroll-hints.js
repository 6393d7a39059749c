// Hands and groups wider than their seat scroll inside it (cards keep a legible size): mark
// each one that does, so the page can say so (site.css shows "scroll for more cards →").
// The replay swaps its table in place, so the marks are renewed whenever the page changes.
(function () {
  "use strict";
  function mark() {
    document.querySelectorAll(".hand-wrap").forEach(function (wrap) {
      var scrolls = wrap.scrollWidth > wrap.clientWidth + 1;
      if (scrolls !== wrap.hasAttribute("data-scrolls")) {
        wrap.toggleAttribute("data-scrolls", scrolls);
      }
    });
  }
  var pending = false;
  function soon() {
    if (pending) return;
    pending = true;
    window.requestAnimationFrame(function () { pending = false; mark(); });
  }
  document.addEventListener("DOMContentLoaded", function () {
    mark();
    window.addEventListener("resize", soon);
    new MutationObserver(soon).observe(document.body, { childList: true, subtree: true });
  });
})();
