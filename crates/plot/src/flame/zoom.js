(function () {
  "use strict";
  // The graph this script belongs to: inline in a page or a file of its own, never another graph of the page.
  var me = document.currentScript;
  var root = document.documentElement;
  var svg = me && me.ownerSVGElement ? me.ownerSVGElement : root && root.localName === "svg" ? root : null;
  if (!svg || !svg.querySelectorAll) return;
  var pad = __PAD__, width = __PLOT_WIDTH__, charWidth = __CHAR__, eps = 0.05;
  var ns = "http://www.w3.org/2000/svg";
  var frames = [];
  var groups = svg.querySelectorAll("g.lg-frame");
  for (var i = 0; i < groups.length; i++) {
    var g = groups[i], r = g.querySelector("rect"), title = g.querySelector("title");
    if (!r) continue;
    var f = {
      g: g, r: r, t: g.querySelector("text"),
      x: parseFloat(r.getAttribute("x")), w: parseFloat(r.getAttribute("width")), y: parseFloat(r.getAttribute("y")),
      name: title ? title.textContent.split("\n")[0] : ""
    };
    if (!isFinite(f.x) || !isFinite(f.w) || !isFinite(f.y)) continue;
    g.style.cursor = "pointer";
    frames.push(f);
  }
  function label(f, x, w) {
    var room = Math.floor((w - 6) / charWidth);
    if (room < 3) {
      if (f.t) f.t.style.display = "none";
      return;
    }
    if (!f.t) {
      f.t = document.createElementNS(ns, "text");
      f.t.setAttribute("font-size", "12");
      f.t.setAttribute("fill", "rgb(0,0,0)");
      f.t.setAttribute("stroke", "none");
      f.t.setAttribute("y", String(f.y + 12));
      f.g.appendChild(f.t);
    }
    var chars = Array.from(f.name);
    f.t.textContent = chars.length <= room ? f.name : chars.slice(0, room - 1).join("") + "\u2026";
    f.t.setAttribute("x", (x + 3).toFixed(2));
    f.t.style.display = "";
  }
  function zoom(z) {
    for (var i = 0; i < frames.length; i++) {
      var f = frames[i], x, w;
      if (f.y > z.y + eps) {
        // A caller: drawn across the whole width when it contains the frame zoomed into.
        if (f.x > z.x + eps || f.x + f.w < z.x + z.w - eps) { f.g.style.display = "none"; continue; }
        x = pad; w = width;
      } else {
        if (f.x < z.x - eps || f.x + f.w > z.x + z.w + eps) { f.g.style.display = "none"; continue; }
        x = pad + (f.x - z.x) * width / z.w; w = f.w * width / z.w;
      }
      f.g.style.display = "";
      f.r.setAttribute("x", x.toFixed(2));
      f.r.setAttribute("width", w.toFixed(2));
      label(f, x, w);
    }
  }
  for (var j = 0; j < frames.length; j++) {
    (function (f) {
      f.g.addEventListener("click", function (e) { e.stopPropagation(); zoom(f); });
    })(frames[j]);
  }
})();
