/* The page of allocspy-report html: hovering over the heap over time,
 * the flame graphs (zoom, search), sortable tables. Text from the dump is
 * only ever set as text (textContent, attribute values), never as markup. */
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  var data = JSON.parse(document.getElementById("asp-data").textContent);
  document.documentElement.classList.add("js");

  function el(name, attrs, text) {
    var e = document.createElementNS(SVG, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function count(n) { return Math.round(n).toLocaleString("en-US"); }
  function frames(n) { return count(n) + (n === 1 ? " frame" : " frames"); }
  function pct(part, whole) { return whole ? (100 * part / whole).toFixed(1) + "%" : "-"; }

  /* --- the heap over time ------------------------------------------------ */

  function timeline(svg) {
    var part = svg.closest(".tl-chart");
    var tl = data.dumps[+svg.id.replace(/^d(\d+).*$/, "$1")].timeline;
    var info = part.querySelector(".tl-info");
    var guide = el("line", { "class": "guide", y1: svg.dataset.top, y2: svg.dataset.bottom,
      visibility: "hidden" });
    var dot = el("circle", { "class": "dot", r: 3.5, visibility: "hidden" });

    if (!tl) return;
    svg.querySelectorAll(".bands title").forEach(function (t) { t.remove(); });
    svg.appendChild(guide);
    svg.appendChild(dot);
    svg.addEventListener("mouseover", function (ev) {
      var r = ev.target.closest(".bands rect");
      if (!r) return;
      var k = +r.dataset.k, x = r.dataset.x, y = r.dataset.y;
      guide.setAttribute("x1", x);
      guide.setAttribute("x2", x);
      dot.setAttribute("cx", x);
      dot.setAttribute("cy", y);
      guide.setAttribute("visibility", "visible");
      dot.setAttribute("visibility", "visible");
      svg.dataset.hover = k;
      info.textContent = tl.index[k] < 0 ? "the peak: " + tl.peak_text :
        "snapshot " + (tl.index[k] + 1) + " of " + tl.count +
        (k === tl.peak ? " (the peak)" : "") + ": " + tl.t_s[k].toFixed(3) + " s, " +
        count(tl.in_use_bytes[k]) + " bytes in use in " + count(tl.in_use_blocks[k]) +
        " blocks, " + count(tl.bytes_allocated[k]) + " bytes allocated so far";
    });
    svg.addEventListener("mouseleave", function () {
      guide.setAttribute("visibility", "hidden");
      dot.setAttribute("visibility", "hidden");
    });
    part.querySelectorAll(".tl-mode").forEach(function (b) {
      b.addEventListener("click", function () {
        svg.classList.toggle("by-alloc", b.dataset.mode === "alloc");
        part.querySelectorAll(".tl-mode").forEach(function (o) {
          o.classList.toggle("on", o === b);
        });
        guide.setAttribute("visibility", "hidden");
        dot.setAttribute("visibility", "hidden");
      });
    });
  }
  document.querySelectorAll("svg.timeline").forEach(timeline);

  /* --- flame graphs ------------------------------------------------------- */

  var ROW = 17, CHAR_W = 6.7;

  /* A warm colour for a name, the same on every draw. */
  function colour(name) {
    var h = 0;
    for (var i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
    if (name.charAt(0) === "[") return "hsl(220, 12%, 72%)";
    return "hsl(" + (h % 55) + ", " + (62 + (h >> 8) % 25) + "%, " + (58 + (h >> 16) % 12) + "%)";
  }

  function Flame(box, dump) {
    this.box = box;
    this.dump = dump;
    this.holder = box.querySelector(".fg-box");
    this.info = box.querySelector(".fg-info");
    this.match = box.querySelector(".fg-match");
    this.search = box.querySelector(".fg-search");
    this.select = box.querySelector(".fg-weight");
    this.threads = box.querySelector(".fg-threads");
    var self = this;
    this.select.addEventListener("change", function () { self.load(self.select.value); });
    if (this.threads)
      this.threads.addEventListener("change", function () { self.load(self.select.value); });
    this.search.addEventListener("input", function () { self.draw(); });
    box.querySelector(".fg-reset").addEventListener("click", function () { self.zoomTo(0); });
    this.holder.addEventListener("click", function (ev) {
      var g = ev.target.closest(".fr");
      if (g) self.zoomTo(+g.dataset.i);
    });
    this.holder.addEventListener("mouseover", function (ev) {
      var g = ev.target.closest(".fr");
      if (g) self.describe(+g.dataset.i);
    });
    this.load(this.select.value);
  }

  /* Reads graph key (split by thread when asked and there is one):
   * parents, extents in the graph's units, names. */
  Flame.prototype.load = function (key) {
    var of = this.dump.flames.filter(function (f) { return f.key === key; });
    var split = of.filter(function (f) { return f.by_thread; });
    var g = split.length && this.threads && this.threads.checked ? split[0] :
      of.filter(function (f) { return !f.by_thread; })[0];
    if (this.threads) this.threads.disabled = !split.length;
    var n = g.n.length, last = [], i;
    this.g = g;
    this.parent = new Int32Array(n);
    this.start = new Float64Array(n);
    this.end = new Int32Array(n);   /* one past its subtree */
    var next = new Float64Array(n);
    this.names = g.n.map(function (s) { return this.dump.strings[s]; }, this);
    this.locs = g.l.map(function (s) { return s < 0 ? "" : this.dump.strings[s]; }, this);
    for (i = 0; i < n; i++) {
      var d = g.d[i], p = d ? last[d - 1] : -1;
      this.parent[i] = p;
      if (p >= 0) {
        this.start[i] = next[p];
        next[p] += g.v[i];
      }
      next[i] = this.start[i];
      last[d] = i;
      last.length = d + 1;
    }
    for (i = n - 1; i >= 0; i--) {
      var j = i + 1;
      while (j < n && g.d[j] > g.d[i]) j = this.end[j];
      this.end[i] = j;
    }
    var thin = this.box.querySelector(".fg-thin");
    if (thin) thin.textContent = g.merged ? "Here " + frames(g.merged) + (g.merged === 1 ?
      " was" : " were") + " merged into " + count(g.m.filter(function (m) { return m > 0; }).length) +
      ", and the graph has " + frames(g.nodes) + "." : "Here no frame was merged.";
    this.zoom = 0;
    this.draw();
  };

  Flame.prototype.zoomTo = function (i) {
    this.zoom = i === this.zoom && i !== 0 ? Math.max(0, this.parent[i]) : i;
    this.draw();
  };

  Flame.prototype.text = function (i) {
    var g = this.g, name = this.names[i], t = name;
    if (g.m[i]) t = frames(g.m[i]) + " below 0.1% of the total, merged";
    else if (this.locs[i]) t += "  " + this.locs[i];
    return t + "\n" + count(g.v[i]) + " " + g.unit + ", " + pct(g.v[i], g.v[0]) +
      " of all" + (this.zoom ? ", " + pct(g.v[i], g.v[this.zoom]) + " of the zoomed frame" : "");
  };

  Flame.prototype.describe = function (i) { this.info.textContent = this.text(i); };

  Flame.prototype.draw = function () {
    var g = this.g, z = this.zoom, W = Math.max(300, this.holder.clientWidth || 1000);
    var scale = W / g.v[z], x0 = this.start[z], dz = g.d[z];
    var term = this.search.value.trim().toLowerCase(), hits = 0, hitValue = 0, inHit = -1;
    var svg = el("svg", { "class": "fg", width: W, viewBox: "0 0 " + W + " 0",
      "data-key": g.key + (g.by_thread ? "/thread" : ""), "data-zoom": z, "data-total": g.v[0] });
    var rows = 0, i, a;

    function frame(self, i, x, w, depth, cls) {
      var name = self.names[i], label = name, fit = Math.floor((w - 6) / CHAR_W);
      var grp = el("g", { "class": "fr" + cls, "data-i": i, "data-name": name,
        "data-value": g.v[i], "data-depth": depth });
      grp.appendChild(el("rect", { x: x.toFixed(2), y: depth * ROW, width: w.toFixed(2),
        height: ROW - 1, fill: colour(name) }));
      if (fit >= 3) {
        if (label.length > fit) label = label.slice(0, fit - 1) + "\u2026";
        grp.appendChild(el("text", { x: (x + 3).toFixed(2), y: depth * ROW + ROW - 5 }, label));
      }
      grp.appendChild(el("title", {}, self.text(i)));
      svg.appendChild(grp);
      rows = Math.max(rows, depth + 1);
    }
    function matches(self, i) {
      return term && !g.m[i] && (self.names[i].toLowerCase().indexOf(term) >= 0 ||
        self.locs[i].toLowerCase().indexOf(term) >= 0);
    }
    /* The ancestors of the zoomed frame, full width and faded. */
    for (a = this.parent[z]; a >= 0; a = this.parent[a])
      frame(this, a, 0, W, g.d[a], " anc" + (matches(this, a) ? " match" : ""));
    for (i = z; i < this.end[z];) {
      var w = g.v[i] * scale;
      if (w < 0.5) { i = this.end[i]; continue; }
      var hit = matches(this, i);
      if (hit) {
        hits++;
        if (inHit < 0 || i >= this.end[inHit]) { hitValue += g.v[i]; inHit = i; }
      }
      frame(this, i, (this.start[i] - x0) * scale, w, g.d[i], hit ? " match" : "");
      i++;
    }
    /* Frames too narrow to draw count towards the search too. */
    if (term) {
      hits = 0; hitValue = 0; inHit = -1;
      for (i = 0; i < g.n.length; i++) {
        if (!matches(this, i)) continue;
        hits++;
        if (inHit < 0 || i >= this.end[inHit]) { hitValue += g.v[i]; inHit = i; }
      }
    }
    var h = Math.max(rows, 1) * ROW;
    svg.setAttribute("height", h);
    svg.setAttribute("viewBox", "0 0 " + W + " " + h);
    svg.classList.toggle("searching", !!term);
    svg.dataset.depth = dz;
    this.holder.replaceChildren(svg);
    this.match.textContent = term ? (hits ? frames(hits) + (hits === 1 ? " matches, " :
      " match, ") +
      pct(hitValue, g.v[0]) + " of the total" : "no frame matches") : "";
    this.svg = svg;
  };

  var flames = [];
  document.querySelectorAll(".flame").forEach(function (box) {
    flames.push(new Flame(box, data.dumps[+box.dataset.dump]));
  });
  var resizing = 0;
  window.addEventListener("resize", function () {
    clearTimeout(resizing);
    resizing = setTimeout(function () { flames.forEach(function (f) { f.draw(); }); }, 150);
  });

  /* --- tables, heap errors and loss records ---------------------------------- */

  function sortBy(table, col, th) {
    var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
    var asc = th.getAttribute("aria-sort") !== "ascending";
    function key(r) {
      var c = r.cells[col];
      return c && c.dataset.v !== undefined ? +c.dataset.v : (c ? c.textContent : "");
    }
    rows.sort(function (a, b) {
      var x = key(a), y = key(b), o = x < y ? -1 : x > y ? 1 : 0;
      return asc ? o : -o;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", asc ? "ascending" : "descending");
  }
  document.querySelectorAll("table.sortable").forEach(function (t) {
    t.querySelectorAll("thead th").forEach(function (th, col) {
      th.addEventListener("click", function () { sortBy(t, col, th); });
    });
  });
  document.querySelectorAll(".rec-open, .rec-close").forEach(function (b) {
    b.addEventListener("click", function () {
      var open = b.classList.contains("rec-open");
      b.closest("section").querySelectorAll("details.rec, details.err").forEach(function (d) {
        d.open = open;
      });
    });
  });
})();
