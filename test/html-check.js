// html-check.js PAGE OUT.json [SCREENSHOT.png [SEARCH [ZOOM]]]: opens the
// page of allocspy-report html in Debian's headless chromium, through
// playwright-core (NODE_PATH=build/node_modules), with JavaScript on and
// then off, each in a fresh profile (playwright's own --user-data-dir),
// and writes what it saw to OUT.json: every request, console message,
// page error and dialog; the timeline's peak marker and hover text; each
// flame graph's total, and the first split by thread; a zoom into the
// frame named ZOOM (or the widest
// below the root's child) and back; a search for SEARCH; the loss records
// and heap errors "open all" opens; the static parts without JavaScript;
// and a 1200x800 screenshot from the heap over time down.
"use strict";
const path = require("path");
const fs = require("fs");
const { chromium } = require("playwright-core");

const [page_path, out_path, shot, search, zoom_name] = process.argv.slice(2);
const url = "file://" + path.resolve(page_path);
const W = 1200, H = 800;

async function watch(page, seen) {
  page.on("request", (r) => seen.requests.push(r.url()));
  page.on("console", (m) => seen.console.push(m.type() + ": " + m.text()));
  page.on("pageerror", (e) => seen.errors.push(String(e.message || e)));
  page.on("dialog", (d) => { seen.dialogs.push(d.type() + ": " + d.message()); d.dismiss(); });
}

async function with_js(browser, seen) {
  const ctx = await browser.newContext({ viewport: { width: W, height: H }, deviceScaleFactor: 1 });
  const page = await ctx.newPage();
  await watch(page, seen);
  await page.goto(url, { waitUntil: "load" });
  const r = { js: true };

  // The heap over time: the peak marker's figures, hover, the other axis.
  const tl = await page.$("svg.timeline");
  if (tl) {
    r.peak = await page.$eval("svg.timeline .tl-time .tl-peak", (c) => ({ ...c.dataset }));
    r.bands = await page.$$eval("svg.timeline .tl-time .bands rect", (v) => v.length);
    const k = await page.evaluate(() => JSON.parse(
      document.getElementById("asp-data").textContent).dumps[0].timeline.peak);
    await page.hover(`svg.timeline .tl-time .bands rect[data-k="${k}"]`);
    r.hover = await page.$eval(".tl-info", (e) => e.textContent);
    await page.click(".tl-mode[data-mode=alloc]");
    r.alloc_axis = await page.$eval("svg.timeline", (s) => ({
      time: getComputedStyle(s.querySelector(".tl-time")).display,
      alloc: getComputedStyle(s.querySelector(".tl-alloc")).display,
      peak_cx: s.querySelector(".tl-alloc .tl-peak").getAttribute("cx"),
      last_tick: [...s.querySelectorAll(".tl-alloc .tick")].map((t) => t.textContent).pop() }));
    await page.click(".tl-mode[data-mode=time]");
  }

  // The flame graphs: each one's total, then zoom and search in the first.
  if (await page.$(".flame")) {
    const keys = await page.$$eval(".flame .fg-weight option", (v) => v.map((o) => o.value));
    r.flames = {};
    for (const key of keys) {
      await page.selectOption(".flame .fg-weight", key);
      r.flames[key] = await page.$eval(".flame svg.fg", (s) => ({
        key: s.dataset.key, total: s.dataset.total,
        root: s.querySelector('.fr[data-i="0"]').dataset.value,
        frames: [...s.querySelectorAll(".fr")].map((g) => [g.dataset.name,
          +g.dataset.value, +g.dataset.depth, +g.querySelector("rect").getAttribute("width")]) }));
    }
    await page.selectOption(".flame .fg-weight", keys[0]);
    if (await page.$(".flame .fg-threads")) {
      await page.check(".flame .fg-threads");
      r.by_thread = await page.$eval(".flame svg.fg", (s) => ({ key: s.dataset.key,
        threads: [...s.querySelectorAll('.fr[data-depth="1"]')].map((g) =>
          [g.dataset.name, +g.dataset.value]) }));
      await page.uncheck(".flame .fg-threads");
    }
    const frame = await page.evaluate((name) => {
      const v = [...document.querySelectorAll(".flame svg.fg .fr")];
      const g = name ? v.find((x) => x.dataset.name === name) :
        v.filter((x) => x.dataset.depth === "2").sort((a, b) => b.dataset.value - a.dataset.value)[0];
      return g ? { i: g.dataset.i, name: g.dataset.name,
        width: +g.querySelector("rect").getAttribute("width") } : null;
    }, zoom_name || "");
    if (frame) {
      const full = await page.$eval(".flame svg.fg", (s) => +s.getAttribute("width"));
      await page.click(`.flame svg.fg .fr[data-i="${frame.i}"] rect`);
      const after = await page.$eval(".flame svg.fg", (s, i) => ({
        zoom: s.dataset.zoom,
        width: +s.querySelector(`.fr[data-i="${i}"] rect`).getAttribute("width"),
        x: +s.querySelector(`.fr[data-i="${i}"] rect`).getAttribute("x") }), frame.i);
      await page.click('.flame svg.fg .fr[data-i="0"] rect');
      const back = await page.$eval(".flame svg.fg", (s, i) => ({
        zoom: s.dataset.zoom,
        width: +s.querySelector(`.fr[data-i="${i}"] rect`).getAttribute("width") }), frame.i);
      r.zoom = { frame, full, after, back };
    }
    if (search) {
      await page.fill(".flame .fg-search", search);
      r.search = await page.$eval(".flame", (f) => ({
        text: f.querySelector(".fg-match").textContent,
        matched: [...f.querySelectorAll("svg.fg .fr.match")].map((g) => g.dataset.name),
        searching: f.querySelector("svg.fg").classList.contains("searching") }));
      await page.fill(".flame .fg-search", "");
    }
    r.titles = await page.$$eval("svg.fg .fr title", (v) => v.map((t) => t.textContent));
    r.hover_info = await page.evaluate(() => {
      const g = document.querySelector('.flame svg.fg .fr[data-i="1"]');
      if (!g) return null;
      g.dispatchEvent(new MouseEvent("mouseover", { bubbles: true }));
      return document.querySelector(".flame .fg-info").textContent;
    });
  }
  r.flame_svgs = await page.$$eval("svg.fg", (v) => v.length);
  // Sorting a table by a column of numbers.
  r.sorted = await page.evaluate(() => {
    const t = document.querySelector("table.sortable");
    if (!t) return null;
    const th = t.querySelectorAll("thead th")[1];
    th.click();
    th.click();
    return { order: th.getAttribute("aria-sort"),
      values: [...t.tBodies[0].rows].map((row) => +row.cells[1].dataset.v) };
  });
  // "open all" shows every loss record's and heap error's stacks, and so
  // their text.
  for (const b of await page.$$(".rec-open")) await b.click();
  r.records_open = await page.$$eval("details.rec", (v) => [v.filter((d) => d.open).length, v.length]);
  r.errors_open = await page.$$eval("details.err", (v) => [v.filter((d) => d.open).length, v.length]);
  r.text = await page.evaluate(() => document.body.innerText);
  for (const b of await page.$$(".rec-close")) await b.click();
  if (shot) {
    // The heap over time and the flame graphs, below the summary.
    await page.evaluate(() => {
      const t = document.querySelector("section[id$=-timeline]");
      window.scrollTo(0, t ? t.getBoundingClientRect().top + window.scrollY - 8 : 0);
    });
    await page.screenshot({ path: shot });
    const png = fs.readFileSync(shot);
    r.screenshot = { bytes: png.length, signature: png.subarray(1, 4).toString(),
      width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
  }
  await ctx.close();
  return r;
}

async function without_js(browser, seen) {
  const ctx = await browser.newContext({ viewport: { width: W, height: H },
    javaScriptEnabled: false });
  const page = await ctx.newPage();
  await watch(page, seen);
  await page.goto(url, { waitUntil: "load" });
  const r = await page.evaluate(() => {
    const shown = (e) => !!e && getComputedStyle(e).display !== "none";
    const tl = document.querySelector("svg.timeline");
    return {
      js: document.documentElement.classList.contains("js"),
      tables: document.querySelectorAll("table").length,
      records: document.querySelectorAll("details.rec").length,
      errors: document.querySelectorAll("details.err").length,
      timeline: tl ? { time: shown(tl.querySelector(".tl-time")),
        alloc: shown(tl.querySelector(".tl-alloc")),
        area: !!tl.querySelector(".tl-time path.area"),
        peak: { ...tl.querySelector(".tl-time .tl-peak").dataset },
        titles: tl.querySelectorAll(".tl-time .bands title").length } : null,
      controls: [...document.querySelectorAll(".js-only")].filter(shown).length,
      flame_svgs: document.querySelectorAll("svg.fg").length,
      text: document.body.innerText,
    };
  });
  await ctx.close();
  return r;
}

(async () => {
  const dir = fs.mkdtempSync(path.join(require("os").tmpdir(), "html-check-"));
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
      "--disk-cache-dir=" + dir],
  });
  const seen = { requests: [], console: [], errors: [], dialogs: [] };
  const on = await with_js(browser, seen);
  const off = await without_js(browser, seen);
  await browser.close();
  fs.rmSync(dir, { recursive: true, force: true });
  fs.writeFileSync(out_path, JSON.stringify({ url, ...seen, on, off }, null, 1));
})().catch((e) => {
  console.error("html-check.js: " + (e && e.stack || e));
  process.exit(1);
});
