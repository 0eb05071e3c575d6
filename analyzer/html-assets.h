/* html-assets - the page's style sheet and script, analyzer/html.css and
 * analyzer/html.js, which the Makefile embeds as C strings (in
 * html-assets.c, under the build directory), each with its SHA-256 in
 * base64 for the page's Content-Security-Policy. */
#ifndef ASP_HTML_ASSETS_H
#define ASP_HTML_ASSETS_H

extern const char asp__html_css[];
extern const char asp__html_css_sha256[];
extern const char asp__html_js[];
extern const char asp__html_js_sha256[];

#endif
