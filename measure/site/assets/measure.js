/* measure's charts: draws every .measure-chart[data-figure] with the plotly.js the site serves itself.
   Material's instant navigation swaps pages without a reload, so this runs on each document$ emission,
   and again with the other template when the palette toggles. */
(function () {
  function dark() {
    return document.body.getAttribute("data-md-color-scheme") === "slate";
  }
  function draw() {
    document.querySelectorAll(".measure-chart[data-figure]").forEach(function (target) {
      var figure = JSON.parse(target.getAttribute("data-figure"));
      var layout = Object.assign({}, figure.layout || {}, {
        template: dark() ? "plotly_dark" : "plotly_white",
        paper_bgcolor: "rgba(0,0,0,0)",
        plot_bgcolor: "rgba(0,0,0,0)",
        font: { color: dark() ? "#e2e4e9" : "#1f2328" }
      });
      Plotly.react(target, figure.data, layout, { responsive: true, displaylogo: false });
    });
  }
  if (typeof document$ !== "undefined") {
    document$.subscribe(draw);
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", draw);
  } else {
    draw();
  }
  new MutationObserver(draw).observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });
})();
