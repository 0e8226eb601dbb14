/* measure's charts. plotly.js (4.8 MB) is fetched only by pages that draw a chart, after the page has painted,
   from the site itself. Material's instant navigation swaps pages without a reload, so drawing runs on each
   document$ emission, and again with the other axis colours when the palette toggles. */
(function () {
  var here = document.currentScript && document.currentScript.src;
  var plotlySrc = here ? here.replace(/measure\.js(\?.*)?$/, "plotly.min.js") : "assets/javascripts/plotly.min.js";
  var loading = null;

  function plotly() {
    if (window.Plotly) return Promise.resolve(window.Plotly);
    if (!loading) {
      loading = new Promise(function (resolve, reject) {
        var s = document.createElement("script");
        s.src = plotlySrc;
        s.async = true;
        s.onload = function () { resolve(window.Plotly); };
        s.onerror = reject;
        document.head.appendChild(s);
      });
    }
    return loading;
  }

  function dark() {
    return document.body.getAttribute("data-md-color-scheme") === "slate";
  }

  function themed(layout, width, traces) {
    var isDark = dark();
    var text = isDark ? "#e2e4e9" : "#1f2328";
    var grid = isDark ? "rgba(226,228,233,0.16)" : "rgba(31,35,40,0.12)";
    var line = isDark ? "rgba(226,228,233,0.45)" : "rgba(31,35,40,0.45)";
    var out = Object.assign({}, layout, {
      paper_bgcolor: "rgba(0,0,0,0)",
      plot_bgcolor: "rgba(0,0,0,0)",
      font: { color: text },
      legend: Object.assign({}, layout.legend || {}, { font: { color: text }, bgcolor: "rgba(0,0,0,0)" })
    });
    ["xaxis", "yaxis"].concat(Object.keys(layout).filter(function (k) { return /^[xy]axis\d+$/.test(k); }))
      .forEach(function (k) {
        out[k] = Object.assign({}, layout[k] || {}, {
          gridcolor: grid, zerolinecolor: line, linecolor: line, tickcolor: line, color: text
        });
      });
    (out.shapes || []).forEach(function (s) { s.line = Object.assign({}, s.line || {}, { color: line }); });
    if (width < 600) {  /* a phone: the legend goes well below the axis title, the plot grows to hold it */
      out.legend = Object.assign({}, out.legend, { orientation: "h", x: 0, xanchor: "left", y: -0.32, yanchor: "top" });
      out.margin = Object.assign({}, layout.margin || {}, { l: 48, r: 8, b: 60 + 22 * traces });
      out.height = (layout.height || 440) + 22 * traces;
    }
    return out;
  }

  function draw() {
    var targets = document.querySelectorAll(".measure-chart[data-figure]");
    if (!targets.length) return;
    plotly().then(function (Plotly) {
      targets.forEach(function (target) {
        var figure = JSON.parse(target.getAttribute("data-figure"));
        var layout = figure.layout || {};
        Plotly.react(target, figure.data, themed(layout, target.clientWidth, figure.data.length), { responsive: true, displaylogo: false });
        if (!target.dataset.linked) {
          target.dataset.linked = "1";
          target.on("plotly_click", function (ev) {
            var link = ev.points && ev.points[0] && ev.points[0].customdata;
            if (link) window.location.href = link;
          });
        }
      });
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
