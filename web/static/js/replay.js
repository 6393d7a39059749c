// Replay viewer: keyboard stepping, instant move changes and autoplay, on top of plain links.
// Without this script every control is an ordinary link to ?move=N and the page still works.
(function () {
  "use strict";

  var root = document.getElementById("replay");
  if (!root) return;

  var total = parseInt(root.dataset.total, 10);
  var seat = root.dataset.seat || "";
  var fragmentUrl = root.dataset.fragment;
  var current = parseInt(root.dataset.move, 10);
  var cache = {};          // move number -> fragment HTML (a promise while loading)
  var wanted = current;    // the last move asked for, so slow answers never overwrite a newer one
  var timer = null;

  function query(move) {
    var params = new URLSearchParams(window.location.search);
    params.set("move", String(move));
    if (seat) params.set("seat", seat); else params.delete("seat");
    return params;
  }

  function fetchFragment(move) {
    if (!cache[move]) {
      var params = new URLSearchParams({ move: String(move) });
      if (seat) params.set("seat", seat);
      cache[move] = fetch(fragmentUrl + "?" + params.toString(), {
        headers: { "Accept": "text/html" },
        credentials: "same-origin",
      }).then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.text();
      }).catch(function (error) {
        delete cache[move];
        throw error;
      });
    }
    return cache[move];
  }

  function setStep(id, move, disabled) {
    var link = document.getElementById(id);
    if (!link) return;
    link.dataset.move = String(move);
    link.href = "?" + query(move).toString();
    if (disabled) link.setAttribute("aria-disabled", "true");
    else link.removeAttribute("aria-disabled");
  }

  function markCurrent(move) {
    var list = document.getElementById("moves");
    if (!list) return;
    var old = list.querySelector('[aria-current="step"]');
    if (old) old.removeAttribute("aria-current");
    var now = list.querySelector('a[data-move="' + move + '"]');
    if (now) {
      now.setAttribute("aria-current", "step");
      scrollToCurrent(now);
    }
  }

  // Keep the move shown in view inside the list's own scroll box (never the page's):
  // measured on screen, so the list's offset parent does not matter.
  function scrollToCurrent(link) {
    var box = link.closest(".move-list");
    if (!box) return;
    var top = link.getBoundingClientRect().top - box.getBoundingClientRect().top + box.scrollTop;
    if (top < box.scrollTop + 30 || top > box.scrollTop + box.clientHeight - 30) {
      box.scrollTop = Math.max(0, top - box.clientHeight / 2);
    }
  }

  function updateChrome(move) {
    current = move;
    root.dataset.move = String(move);
    setStep("first", 0, move === 0);
    setStep("prev", Math.max(move - 1, 0), move === 0);
    setStep("next", Math.min(move + 1, total), move === total);
    setStep("last", total, move === total);
    markCurrent(move);
    document.querySelectorAll(".views a[data-seat]").forEach(function (link) {
      var params = new URLSearchParams({ move: String(move) });
      if (link.dataset.seat) params.set("seat", link.dataset.seat);
      link.href = root.dataset.page + "?" + params.toString();
    });
    history.replaceState({ move: move }, "", "?" + query(move).toString());
    document.title = document.title.replace(/move \d+/, "move " + move);
  }

  function go(move) {
    move = Math.max(0, Math.min(total, move));
    if (move === current && move === wanted) return Promise.resolve();
    wanted = move;
    return fetchFragment(move).then(function (html) {
      if (wanted !== move) return;
      var frame = document.getElementById("table-frame");
      frame.outerHTML = html;
      updateChrome(move);
      // Fetch the neighbours now so the next keypress swaps in without waiting.
      if (move < total) fetchFragment(move + 1).catch(function () {});
      if (move > 0) fetchFragment(move - 1).catch(function () {});
    }).catch(function () {
      // The server could not build the fragment: fall back to loading the page itself.
      window.location.href = "?" + query(move).toString();
    });
  }

  // Links: the step controls, the move list, the moments.
  root.addEventListener("click", function (event) {
    var link = event.target.closest("a[data-move]");
    if (!link || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;
    if (link.closest(".views")) return;
    event.preventDefault();
    stop();
    go(parseInt(link.dataset.move, 10));
  });

  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    var tag = (event.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "select" || tag === "textarea" || event.target.isContentEditable) return;
    var target = null;
    switch (event.key) {
      case "ArrowRight": case "j": target = wanted + 1; break;
      case "ArrowLeft": case "k": target = wanted - 1; break;
      case "Home": target = 0; break;
      case "End": target = total; break;
      case " ":
        if (tag === "button" || tag === "a") return;
        toggle(); event.preventDefault(); return;
      default: return;
    }
    event.preventDefault();
    stop();
    go(target);
  });

  // Autoplay: a fixed pace, or the gaps between the moves' recorded times.
  var controls = root.querySelector(".autoplay");
  var playButton = document.getElementById("play");
  var speed = document.getElementById("speed");
  if (controls) controls.hidden = false;

  function recordedDelay(move, factor) {
    var list = document.getElementById("moves");
    var here = list && list.querySelector('a[data-move="' + move + '"]');
    var next = list && list.querySelector('a[data-move="' + (move + 1) + '"]');
    if (!here || !next || !here.dataset.at || !next.dataset.at) return 1000;
    var gap = Date.parse(next.dataset.at) - Date.parse(here.dataset.at);
    if (!(gap > 0)) return 300;
    return Math.min(gap / factor, 15000);  // a long pause in the record plays as 15 s at most
  }

  function delay() {
    var value = speed ? speed.value : "1000";
    if (value === "recorded") return recordedDelay(current, 1);
    if (value === "recorded4") return recordedDelay(current, 4);
    return parseInt(value, 10);
  }

  function tick() {
    if (current >= total) { stop(); return; }
    go(current + 1).then(function () {
      if (timer !== null) timer = window.setTimeout(tick, delay());
    });
  }

  function start() {
    if (current >= total) go(0);
    playButton.setAttribute("aria-pressed", "true");
    playButton.textContent = "Pause";
    timer = window.setTimeout(tick, delay());
  }

  function stop() {
    if (timer !== null) window.clearTimeout(timer);
    // Pausing also drops a step still on its way from the server: the table stays put.
    if (timer !== null) wanted = current;
    timer = null;
    if (playButton) {
      playButton.setAttribute("aria-pressed", "false");
      playButton.textContent = "Play";
    }
  }

  function toggle() {
    if (timer === null) start(); else stop();
  }

  if (playButton) playButton.addEventListener("click", toggle);

  // A permalink to move 201 opens with move 201 in view in the list, not moves 0 to 15.
  var shown = document.querySelector('#moves a[aria-current="step"]');
  if (shown) scrollToCurrent(shown);

  // Warm the cache for the first keypress.
  if (current < total) fetchFragment(current + 1).catch(function () {});
})();
