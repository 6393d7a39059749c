// Period report: fetch the period's integrity answer into its place once the figures are shown.
// Without this script the place keeps a link that renders the page with the answer in it.
(function () {
  "use strict";

  var place = document.getElementById("period-integrity");
  if (!place || !place.dataset.src || !place.querySelector("[data-status='pending']")) return;

  fetch(place.dataset.src, { headers: { "Accept": "text/html" }, credentials: "same-origin" })
    .then(function (response) {
      if (!response.ok) throw new Error("HTTP " + response.status);
      return response.text();
    })
    .then(function (html) {
      place.innerHTML = html;
    })
    .catch(function (error) {
      var verdict = place.querySelector("[data-status]");
      verdict.dataset.status = "unknown";
      verdict.firstChild.textContent = "The integrity answer could not be fetched (" + error.message + "). ";
    });
})();
