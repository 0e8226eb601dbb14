/* measure's charts. Each page loads this script itself (measure/site/asset_block.py: a hidden paragraph of links the
   site generator resolved, and a one-line loader), once per tab. plotly.js (4.8 MB) is fetched only by pages that
   draw a chart, after the page has painted, from the site itself, at the URL the page's own link gives it.
   Material's (and Zensical's) instant navigation swaps pages without a reload, so drawing runs on each document$
   emission, and again with the other axis colours when the palette toggles. */
(function () {
  if (window.measureCharts) return;  /* loaded twice (two loaders raced): the first one draws */
  var here = document.currentScript && document.currentScript.src;
  var fallback = here ? here.replace(/measure\.js(\?.*)?$/, "plotly.min.js") : "plotly.min.js";
  var loading = null;

  function plotlySrc() {
    var link = document.querySelector('p.measure-assets a[href$="plotly.min.js"]');
    return link ? link.href : fallback;
  }

  function plotly() {
    if (window.Plotly) return Promise.resolve(window.Plotly);
    if (!loading) {
      loading = new Promise(function (resolve, reject) {
        var s = document.createElement("script");
        s.src = plotlySrc();
        s.async = true;
        s.onload = function () { resolve(window.Plotly); };
        s.onerror = function (e) { loading = null; reject(e); };
        document.head.appendChild(s);
      });
    }
    return loading;
  }

  function dark() {
    return document.body.getAttribute("data-md-color-scheme") === "slate";
  }

  /* Under the dark palette every series colour the figure names in layout.meta.dark is swapped for its variant
     (each at 4.5:1 or more against Material's slate background); anything else keeps its colour. */
  function recolor(value, swap) {
    if (typeof value === "string") return swap[value.toUpperCase()] || value;
    if (Array.isArray(value)) return value.map(function (v) { return recolor(v, swap); });
    if (value && typeof value === "object") {
      var out = {};
      Object.keys(value).forEach(function (k) { out[k] = /color$/i.test(k) || typeof value[k] === "object" ? recolor(value[k], swap) : value[k]; });
      return out;
    }
    return value;
  }

  function traces(data, layout) {
    var swap = dark() && layout.meta && layout.meta.dark;
    if (!swap) return data;
    return data.map(function (t) { return recolor(t, swap); });
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
          gridcolor: grid, zerolinecolor: line, linecolor: line, tickcolor: line, color: text, automargin: true
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
        var narrow = target.clientWidth < 600;  /* a phone: no toolbar over the data; it still zooms and hovers */
        Plotly.react(target, traces(figure.data, layout), themed(layout, target.clientWidth, figure.data.length),
          { responsive: true, displaylogo: false, displayModeBar: narrow ? false : "hover" });
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

  function start() {
    /* Material's bundle defines document$ (a replay subject: a late subscriber draws the current page at once);
       any other host gets one draw per page load */
    if (typeof document$ !== "undefined") document$.subscribe(draw);
    else draw();
    new MutationObserver(draw).observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });
  }

  window.measureCharts = { draw: draw };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
