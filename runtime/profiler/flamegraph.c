/*
 * runtime/profiler/flamegraph.c: the flame graph, one self-contained SVG file (our own
 * renderer; Debian 12 packages none). Frames are boxes, root at the bottom, each as wide as
 * the CPU time spent in it and below it; siblings sorted by name (so the x axis is not time).
 *
 * The boxes are laid out here, so any SVG renderer draws the whole graph (the docs' picture
 * is one). A small script, run by browsers only, adds the interaction: click a frame to zoom
 * into it (its ancestors stay, greyed, full width), "Reset zoom" or Escape to go back, and
 * "Search" (or Ctrl-F) for a regular expression: matching frames turn purple and the share
 * of the profile they cover is shown. Frames narrower than 0.1 px are left out, as
 * flamegraph.pl does; a frame's tooltip gives its name, weight, CPU time and share.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/profiler/profiler_impl.h"

#define WIDTH 1200.0
#define FRAME_H 16
#define TOP 44
#define BOTTOM 26
#define PAD 10.0
#define CHAR_W 7.0      /* monospace 12 px, as the script assumes too */
#define MIN_PX 0.1

typedef struct node {
  const char *name;        /* points into a line's text (NUL put at each ';') */
  int64_t value;
  struct node **kids;
  size_t nkids, cap;
} node_t;

static node_t *new_node(const char *name) {
  node_t *n = vmt__fault_hit(VMT__FAULT_ALLOC) ? NULL : calloc(1, sizeof(*n));
  if (n) n->name = name;
  return n;
}

static void free_tree(node_t *n) {
  if (!n) return;
  for (size_t i = 0; i < n->nkids; i++) free_tree(n->kids[i]);
  free(n->kids);
  free(n);
}

/* Lines come sorted by text: a parent's children with one name arrive together, so the last
 * child is the only one to compare with. */
static int insert(node_t *root, char *text, int64_t value, size_t *max_depth) {
  node_t *at = root;
  size_t depth = 0;
  root->value += value;
  for (char *frame = text; frame;) {
    char *semi = strchr(frame, ';');
    if (semi) *semi = '\0';
    node_t *kid = at->nkids ? at->kids[at->nkids - 1] : NULL;
    if (kid == NULL || strcmp(kid->name, frame) != 0) {
      if (at->nkids == at->cap) {
        size_t cap = at->cap ? 2 * at->cap : 4;
        node_t **bigger = vmt__fault_hit(VMT__FAULT_ALLOC) ? NULL
                                                           : realloc(at->kids, cap * sizeof(*bigger));
        if (bigger == NULL) return -ENOMEM;
        at->kids = bigger;
        at->cap = cap;
      }
      kid = new_node(frame);
      if (kid == NULL) return -ENOMEM;
      at->kids[at->nkids++] = kid;
    }
    kid->value += value;
    at = kid;
    depth++;
    frame = semi ? semi + 1 : NULL;
  }
  if (depth > *max_depth) *max_depth = depth;
  return 0;
}

/* s as XML character data. An XML parser (a browser's, for an SVG file) stops at the first
 * byte that is not UTF-8, and thread names, titles and a VM's frame names are any bytes: those
 * become U+FFFD, as in the JSON dump (runtime/management/dump_json.c). */
static void xml(FILE *out, const char *str) {
  const unsigned char *end = (const unsigned char *)str + strlen(str);
  for (const unsigned char *s = (const unsigned char *)str; s < end; s++) {
    if (*s >= 0x80) {
      size_t len = vmt__utf8_sequence(s, (size_t)(end - s));
      if (len == 0) {
        fputs("\xef\xbf\xbd", out);
      } else {
        fwrite(s, 1, len, out);
        s += len - 1;
      }
      continue;
    }
    switch (*s) {
      case '&': fputs("&amp;", out); break;
      case '<': fputs("&lt;", out); break;
      case '>': fputs("&gt;", out); break;
      case '"': fputs("&quot;", out); break;
      case '\'': fputs("&#39;", out); break;
      default:
        /* Control characters are not allowed in XML 1.0. */
        if (*s < 0x20) fputc(' ', out);
        else fputc(*s, out);
    }
  }
}

/* flamegraph.pl's "hot" palette, from a hash of the name so a function keeps its colour. */
static void colour(const char *name, bool root_label, char *buf, size_t len) {
  if (root_label) {
    snprintf(buf, len, "rgb(170,190,220)");
    return;
  }
  uint32_t h = 2166136261u;
  for (const char *c = name; *c; c++) h = (h ^ (unsigned char)*c) * 16777619u;
  unsigned r = 205 + (h % 50), g = (h >> 8) % 230, b = (h >> 16) % 55;
  snprintf(buf, len, "rgb(%u,%u,%u)", r, g, b);
}

typedef struct emit {
  FILE *out;
  double total;
  size_t rows;          /* depth of the deepest frame */
  int64_t period_ns;
  bool ns_values;
  size_t root_labels;   /* the first levels are categories / threads */
} emit_t;

static void text_fit(FILE *out, const char *name, double w_px) {
  size_t fit = w_px > 6 ? (size_t)((w_px - 6) / CHAR_W) : 0;
  size_t len = strlen(name);
  if (fit < 3) return;
  if (len <= fit) {
    xml(out, name);
    return;
  }
  /* Cut on a UTF-8 boundary, then "..". */
  size_t cut = fit - 2;
  while (cut > 0 && ((unsigned char)name[cut] & 0xC0) == 0x80) cut--;
  char buf[512];
  if (cut >= sizeof(buf) - 3) cut = sizeof(buf) - 3;
  memcpy(buf, name, cut);
  memcpy(buf + cut, "..", 3);
  xml(out, buf);
}

static void frame(emit_t *e, const node_t *n, size_t depth, double x) {
  double w = (double)n->value / e->total * (WIDTH - 2 * PAD);
  if (w < MIN_PX) return;
  double px = PAD + x / e->total * (WIDTH - 2 * PAD);
  double y = TOP + (double)(e->rows - depth) * FRAME_H;
  char fill[32];
  colour(n->name, depth <= e->root_labels, fill, sizeof(fill));
  double pct = 100.0 * (double)n->value / e->total;
  fprintf(e->out, "<g class=\"f\" data-x=\"%.6f\" data-w=\"%.6f\" data-d=\"%zu\"><title>",
          x / e->total, (double)n->value / e->total, depth);
  xml(e->out, n->name);
  if (e->ns_values)
    fprintf(e->out, " (%.3f ms, %.2f%%)", (double)n->value / 1e6, pct);
  else
    fprintf(e->out, " (%" PRId64 " samples, %.3f ms, %.2f%%)", n->value,
            (double)n->value * (double)e->period_ns / 1e6, pct);
  fprintf(e->out,
          "</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"%s\" rx=\"2\"/>"
          "<text x=\"%.2f\" y=\"%.1f\">",
          px, y, w, FRAME_H - 1, fill, px + 3, y + FRAME_H - 4.5);
  text_fit(e->out, n->name, w);
  fputs("</text></g>\n", e->out);
  double kx = x;
  for (size_t i = 0; i < n->nkids; i++) {
    frame(e, n->kids[i], depth + 1, kx);
    kx += (double)n->kids[i]->value;
  }
}

/* The script: zoom, reset, search. Boxes keep their laid-out geometry in data-x / data-w
 * (fractions of the whole) and data-d (depth), from which a zoom recomputes x and width. */
static const char script[] =
    "<script type=\"text/ecmascript\"><![CDATA[\n"
    "'use strict';\n"
    "var W=" "1200" ",PAD=10,CW=7,svg=document.documentElement;\n"
    "var frames=[].slice.call(document.querySelectorAll('g.f'));\n"
    "var matchedText=document.getElementById('matched'),resetText=document.getElementById('reset');\n"
    "function label(g,wpx){var t=g.querySelector('text'),n=g.querySelector('title').textContent;"
    "n=n.replace(/ \\([^(]*\\)$/,'');var fit=Math.floor((wpx-6)/CW);"
    "t.textContent=fit<3?'':(n.length<=fit?n:n.substring(0,fit-2)+'..');}\n"
    "function place(g,x,w,grey){var r=g.querySelector('rect'),t=g.querySelector('text');"
    "var px=PAD+x*(W-2*PAD),wpx=w*(W-2*PAD);r.setAttribute('x',px.toFixed(2));"
    "r.setAttribute('width',wpx.toFixed(2));t.setAttribute('x',(px+3).toFixed(2));"
    "g.style.display='';g.style.opacity=grey?'0.5':'';label(g,wpx);}\n"
    "function zoom(g){var X=+g.dataset.x,Wd=+g.dataset.w,D=+g.dataset.d;"
    "frames.forEach(function(f){var x=+f.dataset.x,w=+f.dataset.w,d=+f.dataset.d;"
    "if(d<D){if(x<=X+1e-9&&x+w>=X+Wd-1e-9)place(f,0,1,true);else f.style.display='none';}"
    "else if(x>=X-1e-9&&x+w<=X+Wd+1e-9)place(f,(x-X)/Wd,w/Wd,false);else f.style.display='none';});"
    "resetText.style.opacity='1';}\n"
    "function reset(){frames.forEach(function(f){place(f,+f.dataset.x,+f.dataset.w,false);});"
    "resetText.style.opacity='0.2';}\n"
    "function search(re){var spans=[];frames.forEach(function(f){var r=f.querySelector('rect'),"
    "n=f.querySelector('title').textContent.replace(/ \\([^(]*\\)$/,'');"
    "if(!r.dataset.fill)r.dataset.fill=r.getAttribute('fill');"
    "if(re&&re.test(n)){r.setAttribute('fill','rgb(230,0,230)');spans.push([+f.dataset.x,+f.dataset.x+(+f.dataset.w)]);}"
    "else r.setAttribute('fill',r.dataset.fill);});"
    "spans.sort(function(a,b){return a[0]-b[0];});var cover=0,end=-1;"
    "spans.forEach(function(s){if(s[0]>=end){cover+=s[1]-s[0];end=s[1];}else if(s[1]>end){cover+=s[1]-end;end=s[1];}});"
    "matchedText.textContent=re?('Matched: '+(100*cover).toFixed(2)+'%'):'';}\n"
    "function ask(){var t=prompt('Search frames (regular expression):','');"
    "if(t===null)return;if(t==='')return search(null);try{search(new RegExp(t));}catch(e){alert(e);}}\n"
    "frames.forEach(function(f){f.addEventListener('click',function(){zoom(f);});});\n"
    "resetText.addEventListener('click',reset);\n"
    "document.getElementById('search').addEventListener('click',ask);\n"
    "window.addEventListener('keydown',function(e){if(e.key==='Escape')reset();"
    "if((e.ctrlKey||e.metaKey)&&e.key==='f'){e.preventDefault();ask();}});\n"
    "]]></script>\n";

static int write_svg(FILE *out, vmt__prof_profile_t *p, const char *title, uint32_t flags) {
  vmt__prof_line_t *lines;
  size_t n;
  int rc = vmt__prof_lines(p, flags, &lines, &n);
  if (rc) return rc;
  node_t *root = new_node("all");
  size_t max_depth = 0;
  for (size_t i = 0; i < n && rc == 0 && root; i++)
    rc = insert(root, lines[i].text, lines[i].value, &max_depth);
  if (root == NULL) rc = -ENOMEM;
  if (rc == 0) {
    emit_t e = {.out = out, .total = root->value > 0 ? (double)root->value : 1.0,
                .rows = max_depth, .period_ns = p->cfg.period_ns,
                .ns_values = (flags & VMT_PROF_OUT_NS) != 0,
                .root_labels = (size_t)((flags & VMT_PROF_OUT_CATEGORIES) != 0) +
                               (size_t)((flags & VMT_PROF_OUT_THREADS) != 0)};
    int height = TOP + (int)(max_depth + 1) * FRAME_H + BOTTOM;
    fprintf(out,
            "<?xml version=\"1.0\" standalone=\"no\"?>\n"
            "<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
            "xmlns=\"http://www.w3.org/2000/svg\">\n"
            "<style>text{font-family:monospace;font-size:12px;fill:#000}"
            "g.f:hover rect{stroke:#000;stroke-width:0.5;cursor:pointer}"
            "#reset,#search{cursor:pointer}</style>\n"
            "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"rgb(248,248,240)\"/>\n"
            "<text x=\"%.0f\" y=\"20\" text-anchor=\"middle\" style=\"font-size:16px\">",
            (int)WIDTH, height, (int)WIDTH, height, WIDTH / 2);
    xml(out, title ? title : "vmthread CPU profile");
    fprintf(out,
            "</text>\n<text x=\"%.0f\" y=\"36\" text-anchor=\"middle\" style=\"fill:#555\">"
            "%" PRId64 " samples, weight %" PRId64 " x %.3f ms = %.3f s of CPU; unwinder %s; "
            "click a frame to zoom</text>\n"
            "<text id=\"reset\" x=\"%.0f\" y=\"20\" style=\"opacity:0.2\">Reset zoom</text>\n"
            "<text id=\"search\" x=\"%.0f\" y=\"20\" text-anchor=\"end\">Search</text>\n"
            "<text id=\"matched\" x=\"%.0f\" y=\"%d\" text-anchor=\"end\"></text>\n",
            WIDTH / 2, p->samples, p->weight, (double)p->cfg.period_ns / 1e6,
            (double)(p->weight * p->cfg.period_ns) / 1e9, p->unwinder, PAD, WIDTH - PAD,
            WIDTH - PAD, height - 8);
    /* The root ("all") is the bottom row; its children start one row up. */
    frame(&e, root, 0, 0.0);
    fputs(script, out);
    fputs("</svg>\n", out);
  }
  free_tree(root);
  vmt__prof_lines_free(lines, n);
  return rc;
}

int vmt_prof_write_flamegraph(FILE *out, const char *title, uint32_t flags) {
  if (out == NULL || (flags & ~(uint32_t)VMT__PROF_OUT_ALL)) return -EINVAL;
  vmt__prof_profile_t *p;
  int rc = vmt__prof_output_begin(&p);
  if (rc) return rc;
  rc = write_svg(out, p, title, flags);
  vmt__prof_output_end(p);
  if (rc == 0 && (fflush(out) != 0 || ferror(out))) rc = -EIO;
  return rc;
}
