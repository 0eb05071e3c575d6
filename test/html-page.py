#!/usr/bin/env python3
# html-page.py PAGE: reads a page of allocspy-report html with Python's
# HTML parser and prints, as JSON, what the tests check without a browser:
# every start tag, the scripts and style sheets (and whether the page's
# Content-Security-Policy allows exactly them, by their SHA-256), anything
# that would load from elsewhere, the data the script reads, the text a
# reader sees, the timeline's peak marker and bands, the loss records and
# heap errors, and the tables.
import base64, hashlib, html.parser, json, re, sys


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags = {}
        self.stack = []
        self.scripts = []       # [attrs, text]
        self.styles = []
        self.csp = None
        self.external = []
        self.text = []
        self.peaks = []
        self.bands = {"tl-time": 0, "tl-alloc": 0}
        self.band_titles = 0
        self.tables = []
        self.cell = None
        self.records = 0
        self.errors = []        # each heap error's kind
        self.svg_text = []

    def classes(self):
        return [c for _, a in self.stack for c in (a.get("class") or "").split()]

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        for k, v in attrs:
            v = v or ""
            if k in ("src", "srcset", "action", "formaction", "poster", "data", "background") or \
               (k in ("href", "xlink:href") and not v.startswith("#")) or k.startswith("on"):
                self.external.append("%s %s=%s" % (tag, k, v))
            if "url(" in v:
                self.external.append("%s %s=%s" % (tag, k, v))
        if tag == "meta" and (a.get("http-equiv") or "").lower() == "content-security-policy":
            self.csp = a.get("content")
        if tag in ("link", "img", "iframe", "object", "embed", "audio", "video", "source",
                   "image", "use", "base", "form", "frame"):
            self.external.append(tag)
        if tag == "script":
            self.scripts.append([a, ""])
        if tag == "style":
            self.styles.append("")
        if tag == "circle" and "tl-peak" in (a.get("class") or ""):
            self.peaks.append({k: v for k, v in attrs if k.startswith("data-")})
        if tag == "table":
            self.tables.append({"class": a.get("class") or "", "rows": []})
        if tag == "tr" and self.tables:
            self.tables[-1]["rows"].append([])
        if tag in ("td", "th"):
            self.cell = []
        if tag == "details" and "rec" in (a.get("class") or "").split():
            self.records += 1
        if tag == "details" and "err" in (a.get("class") or "").split():
            self.errors.append([c[2:] for c in a["class"].split() if c.startswith("k-")][0])
        if tag == "rect" and "bands" in self.classes():
            for g in self.bands:
                if g in self.classes():
                    self.bands[g] += 1
        if tag == "title" and "bands" in self.classes():
            self.band_titles += 1
        if tag not in ("meta", "br", "input", "rect", "circle", "path", "hr", "img", "link"):
            self.stack.append((tag, a))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if self.stack and self.stack[-1][0] == tag:
            self.stack.pop()

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None and self.tables and self.tables[-1]["rows"]:
            self.tables[-1]["rows"][-1].append("".join(self.cell).strip())
            self.cell = None
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                break

    def handle_data(self, data):
        top = self.stack[-1][0] if self.stack else ""
        if top == "script":
            self.scripts[-1][1] += data
            return
        if top == "style":
            self.styles[-1] += data
            return
        if "svg" in [t for t, _ in self.stack]:
            self.svg_text.append(data)
        else:
            self.text.append(data)
        if self.cell is not None:
            self.cell.append(data)


def sha(s):
    return base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()


src = open(sys.argv[1], encoding="utf-8").read()
p = Page()
p.feed(src)
p.close()
data = None
for a, text in p.scripts:
    if a.get("type") == "application/json":
        data = json.loads(text)
code = [t for a, t in p.scripts if "type" not in a]
csp = p.csp or ""
allowed = {"script": re.findall(r"script-src 'sha256-([^']+)'", csp),
           "style": re.findall(r"style-src 'sha256-([^']+)'", csp)}
print(json.dumps({
    "tags": p.tags,
    "scripts": [[a.get("type"), a.get("id"), len(t)] for a, t in p.scripts],
    "json_script_has_lt": any("<" in t for a, t in p.scripts if a.get("type") == "application/json"),
    "csp": csp,
    "csp_allows_exactly": allowed["script"] == [sha(c) for c in code] and
                          allowed["style"] == [sha(s) for s in p.styles] and
                          csp.startswith("default-src 'none';"),
    "external": p.external,
    "urls": sorted(set(re.findall(r"[a-z]+://[^\s\"'<>)]*", src))),
    "data": data,
    "text": " ".join(" ".join(p.text).split()),
    "svg_text": " ".join(" ".join(p.svg_text).split()),
    "peaks": p.peaks,
    "bands": p.bands,
    "band_titles": p.band_titles,
    "records": p.records,
    "errors": p.errors,
    "tables": p.tables,
}))
