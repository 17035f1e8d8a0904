// The in-page collector of package checks. It measures the loaded page and
// returns a JSON string that decodes into checks.Snapshot. It judges nothing:
// every threshold lives in Go, so a saved snapshot can be re-judged.
//
// It reads layout and computed styles, hit-tests points (scrolling the
// window to bring each point into view and restoring the scroll position
// afterwards) and compares computed styles with those of fresh elements in an
// unstyled reference document, so Go can tell values the page's own CSS set
// from browser defaults. Work is capped (MAX_ELEMENTS and friends) so huge
// pages stay bounded.
(() => {
  'use strict';
  const MAX_ELEMENTS = 4000, MAX_LINES = 24, MAX_CLIP_TEXT = 300, MAX_PROBES = 80, MAX_DEPTH = 256;
  // Hit tests: every kept text and control is tested (each is at most one
  // kept element, so MAX_ELEMENTS bounds them); overlap pairs, which grow
  // with the square of the lines, have a cap of their own.
  const MAX_BG_TESTS = MAX_ELEMENTS, MAX_HIT_TESTS = MAX_ELEMENTS, MAX_PAIR_TESTS = MAX_ELEMENTS;
  const de = document.documentElement, body = document.body || de;
  const vw = de.clientWidth || window.innerWidth, vh = de.clientHeight || window.innerHeight;
  const sx0 = window.scrollX, sy0 = window.scrollY;
  const docW = Math.max(de.scrollWidth, body.scrollWidth), docH = Math.max(de.scrollHeight, body.scrollHeight);
  const out = {
    width: vw, height: vh, doc_width: docW, doc_height: docH,
    elements: [], overlaps: [], token_uses: [], themes: [], fonts_failed: [], fonts_loaded: [], truncated: false,
    origin: location.origin === 'null' ? '' : location.origin,
  };
  let nodesOut = [];
  const r1 = (v) => Math.round(v * 10) / 10;
  const rect = (r) => ({ x: r1(r.left + sx0), y: r1(r.top + sy0), w: r1(r.width), h: r1(r.height) });

  // --- selectors: #id, then [data-testid], then tag.class, then a child path
  // from a unique anchor; unique by construction and verified.
  const idCount = new Map(), tidCount = new Map(), tcCount = new Map(), tagCount = new Map();
  const all = document.getElementsByTagName('*');
  for (let i = 0; i < all.length && i < 50000; i++) {
    const e = all[i];
    if (e.id) idCount.set(e.id, (idCount.get(e.id) || 0) + 1);
    tagCount.set(e.localName, (tagCount.get(e.localName) || 0) + 1);
    const tid = e.getAttribute('data-testid');
    if (tid) tidCount.set(tid, (tidCount.get(tid) || 0) + 1);
    if (e.classList) for (const c of e.classList) {
      const k = e.localName + '.' + c;
      tcCount.set(k, (tcCount.get(k) || 0) + 1);
    }
  }
  const selMemo = new Map();
  const selector = (e) => {
    if (selMemo.has(e)) return selMemo.get(e);
    if (e.getRootNode() !== document) { const sh = shadowSelector(e); selMemo.set(e, sh); return sh; }
    let s;
    const tag = e.localName;
    if (e === de) s = 'html';
    else if (e === document.body) s = 'body';
    else if (e.id && idCount.get(e.id) === 1) s = '#' + CSS.escape(e.id);
    else if (e.getAttribute('data-testid') && tidCount.get(e.getAttribute('data-testid')) === 1) s = '[data-testid="' + CSS.escape(e.getAttribute('data-testid')) + '"]';
    else {
      // The last classes are usually the specific ones ("btn btn-promo").
      for (const c of [...(e.classList || [])].reverse()) if (tcCount.get(tag + '.' + c) === 1) { s = tag + '.' + CSS.escape(c); break; }
      if (!s && tagCount.get(tag) === 1) s = CSS.escape(tag);
      if (!s) {
        const p = e.parentElement;
        let seg = CSS.escape(tag);
        if (e.classList && e.classList.length) seg += '.' + CSS.escape(e.classList[0]);
        if (p) {
          const [k, n] = nthOfType(p, e);
          if (n > 1) seg += ':nth-of-type(' + k + ')';
          const ps = selector(p);
          s = ps ? ps + ' > ' + seg : '';
        } else s = seg;
      }
    }
    // Unique by construction (counted ids, classes and tags; child paths
    // from a unique anchor); quirks mode matches ids and classes without
    // case, so there the selector is verified.
    if (s && quirks) { try { if (document.querySelector(s) !== e) s = ''; } catch (_) { s = ''; } }
    selMemo.set(e, s);
    return s;
  };
  const quirks = document.compatMode !== 'CSS1Compat';
  // --- shadow trees: the walk follows the composed (rendered) tree, into
  // open shadow roots and through slots to what they render.
  const composedChildren = (e) => {
    if (e.shadowRoot) return e.shadowRoot.children;
    if (e.localName === 'slot') {
      const a = e.assignedElements({ flatten: true });
      return a.length || e.assignedNodes().length ? a : e.children;
    }
    return e.children;
  };
  const inShadow = (e) => e.getRootNode() !== document;
  // shadowSelector names an element of a shadow tree as its host's
  // selector, " >>> ", and a path unique within the shadow root.
  const shadowSelector = (e) => {
    const root = e.getRootNode();
    const host = root.host;
    const hs = inShadow(host) ? shadowSelector(host) : selector(host);
    if (!hs) return '';
    const local = (x) => {
      if (x.id && root.querySelectorAll('#' + CSS.escape(x.id)).length === 1) return '#' + CSS.escape(x.id);
      const p = x.parentElement;
      let seg = CSS.escape(x.localName);
      if (!p) return seg;
      const [k, n] = nthOfType(p, x);
      if (n > 1) seg += ':nth-of-type(' + k + ')';
      return local(p) + ' > ' + seg;
    };
    return hs + ' >>> ' + local(e);
  };
  // hitRoot is where hit tests for e run: its shadow root, so the answer
  // is not retargeted to the host.
  const hitRoot = (e) => { const r = e.getRootNode(); return r.elementsFromPoint ? r : document; };
  // composedParent steps up the rendered tree, out of shadow roots.
  const composedParent = (a) => a.assignedSlot || a.parentElement || (a.parentNode && a.parentNode.host) || null;
  // nthOfType returns e's 1-based index among its parent's children of the
  // same tag and their count, indexing each parent's children once.
  const nthMemo = new Map();
  const nthOfType = (p, e) => {
    let m = nthMemo.get(p);
    if (!m) {
      m = new Map();
      const counts = new Map();
      for (const c of p.children) {
        const n = (counts.get(c.localName) || 0) + 1;
        counts.set(c.localName, n);
        m.set(c, n);
      }
      m.counts = counts;
      nthMemo.set(p, m);
    }
    return [m.get(e) || 0, m.counts.get(e.localName) || 0];
  };

  // --- the unstyled reference document.
  const frame = document.createElement('iframe');
  frame.setAttribute('aria-hidden', 'true');
  frame.tabIndex = -1;
  frame.style.cssText = 'position:absolute!important;left:-99999px!important;top:0!important;width:800px!important;height:600px!important;border:0!important;visibility:hidden!important;pointer-events:none!important';
  de.appendChild(frame);
  const refDoc = frame.contentDocument;
  // Standards mode, like the pages we judge; a Trusted Types policy may
  // forbid write(), and then the quirks-mode blank document has to do.
  try { refDoc.open(); refDoc.write('<!DOCTYPE html><html><head></head><body></body></html>'); refDoc.close(); } catch (_) { /* keep about:blank */ }
  const SPACING = ['margin-top', 'margin-right', 'margin-bottom', 'margin-left', 'padding-top', 'padding-right', 'padding-bottom', 'padding-left', 'row-gap', 'column-gap'];
  // The box properties that size a native control: equal to the unstyled
  // element's, the browser alone sized it.
  const UA_BOX = ['border-top-width', 'border-right-width', 'border-bottom-width', 'border-left-width', 'line-height',
    'padding-top', 'padding-right', 'padding-bottom', 'padding-left'];
  const REF_PROPS = ['color', 'background-color', 'font-family', 'font-size', 'width', 'height',
    'border-top-color', 'border-right-color', 'border-bottom-color', 'border-left-color'].concat(SPACING, UA_BOX);
  const refCache = new Map();
  const refStyle = (e) => {
    const tag = e.localName;
    const type = tag === 'input' || tag === 'button' ? (e.getAttribute('type') || '').toLowerCase() : '';
    const link = (tag === 'a' || tag === 'area') && e.hasAttribute('href');
    const key = tag + '|' + type + '|' + link;
    if (refCache.has(key)) return refCache.get(key);
    let r = null;
    try {
      if (!refDoc || !refDoc.body) throw new Error('no reference document');
      const x = refDoc.createElement(tag);
      if (type) x.setAttribute('type', type);
      if (link) x.setAttribute('href', '#ref');
      if (tag === 'html' || tag === 'body') {
        r = {};
        const cs = refDoc.defaultView.getComputedStyle(tag === 'html' ? refDoc.documentElement : refDoc.body);
        for (const p of REF_PROPS) r[p] = cs.getPropertyValue(p);
      } else {
        refDoc.body.appendChild(x);
        const cs = refDoc.defaultView.getComputedStyle(x);
        r = {};
        for (const p of REF_PROPS) r[p] = cs.getPropertyValue(p);
        x.remove();
      }
    } catch (_) { r = null; }
    refCache.set(key, r);
    return r;
  };

  // --- design tokens by use: the custom properties the page's own rules use
  // directly (a whole value, or var() not wrapped in calc(), rgb() or another
  // function), filed by the property that uses them, among those defined in
  // a theme scope (:root, html, body, or a class or attribute on them:
  // .dark, [data-theme=x]). Values are read from the root and body as
  // computed, so they are the theme the page shows; the other themes' scopes
  // are listed, never mixed in. Colour-valued properties no rule uses are
  // reported too, with no role (a palette).
  const TOKEN_ROLES = [
    [/^color$|^-webkit-text-fill-color$/, 'text'],
    [/^background(-color)?$/, 'background'],
    [/^(border|outline)(-(top|right|bottom|left|block|inline)(-(start|end))?)?(-color)?$/, 'border'],
    [/^(fill|stroke)$/, 'icon'],
    [/^(margin|padding)(-(top|right|bottom|left|block|inline)(-(start|end))?)?$|^(row-|column-|grid-)?gap$/, 'spacing'],
    [/^font-size$/, 'font-size'],
    [/^font-family$/, 'font-family'],
    [/radius$/, 'radius'],
  ];
  const collectTokenUses = () => {
    const uses = new Map(), defined = new Set(), scopes = new Map();
    const themeScope = (sel) => sel.split(',').every((p) => /^\s*(:root|html|body)?((\.[-\w]+)|(\[[^\]]+\]))*\s*$/.test(p) && p.trim() !== '');
    // directVars lists the var() names of a value that are not inside
    // another function.
    const directVars = (v) => {
      const names = [];
      const stack = [];
      const re = /([-\w]*)\(|\)|--[-\w]+/g;
      let m;
      while ((m = re.exec(v))) {
        if (m[0] === ')') { stack.pop(); continue; }
        if (m[0].endsWith('(')) { stack.push(m[1].toLowerCase()); continue; }
        if (stack.length && stack[stack.length - 1] === 'var' && stack.every((f) => f === 'var') && v[m.index - 1] === '(') names.push(m[0]);
      }
      return names;
    };
    const scan = (rules, media, depth) => {
      if (!rules || depth > 8) return;
      for (const rule of rules) {
        if (rule.media && rule.cssRules) { scan(rule.cssRules, rule.media.mediaText || media, depth + 1); continue; }
        if (rule.styleSheet) { try { scan(rule.styleSheet.cssRules, media, depth + 1); } catch (_) { /* cross-origin */ } continue; }
        if (rule.style && rule.selectorText) {
          const st = rule.style;
          let defines = false;
          for (let i = 0; i < st.length; i++) {
            const prop = st[i];
            if (prop.startsWith('--')) { defines = true; if (themeScope(rule.selectorText)) defined.add(prop); }
          }
          if (defines && themeScope(rule.selectorText) && scopes.size < 24) {
            const key = rule.selectorText.trim() + (media ? ' @media ' + media : '');
            if (!scopes.has(key)) {
              let active = false;
              try { active = (de.matches(rule.selectorText) || body.matches(rule.selectorText)) && (!media || matchMedia(media).matches); } catch (_) { active = false; }
              scopes.set(key, active);
            }
          }
          for (const decl of st.cssText.split(';')) {
            const k = decl.indexOf(':');
            if (k < 0 || !decl.includes('var(')) continue;
            const prop = decl.slice(0, k).trim().toLowerCase();
            if (prop.startsWith('--')) continue;
            const role = TOKEN_ROLES.find(([re]) => re.test(prop));
            if (!role) continue;
            for (const n of directVars(decl.slice(k + 1))) {
              if (!uses.has(n)) uses.set(n, new Set());
              uses.get(n).add(role[1]);
            }
          }
        }
        if (rule.cssRules) scan(rule.cssRules, media, depth + 1);
      }
    };
    for (const sheet of document.styleSheets) { try { scan(sheet.cssRules, '', 0); } catch (_) { /* cross-origin */ } }
    const rootCS = getComputedStyle(de), bodyCS = getComputedStyle(body);
    // A theme-scope property no rule uses is kept only when its value is a
    // colour (a palette entry: its value, not its name, says what it is).
    for (const n of [...defined].sort()) {
      if (out.token_uses.length >= 500) break;
      const v = (bodyCS.getPropertyValue(n) || rootCS.getPropertyValue(n)).trim();
      if (!v || v.length > 300) continue;
      if (uses.has(n)) out.token_uses.push({ name: n, value: v, roles: [...uses.get(n)].sort() });
      else if (CSS.supports('color', v)) out.token_uses.push({ name: n, value: v, roles: [] });
    }
    for (const [scope, active] of scopes) out.themes.push({ scope, active });
    out.root_font_size = parseFloat(rootCS.fontSize) || 16;
  };

  try {
    collectTokenUses();

    // --- fonts: families with a face that failed and none that loaded.
    const failed = new Set(), loaded = new Set();
    for (const f of document.fonts) {
      const fam = f.family.replace(/^["']|["']$/g, '');
      if (f.status === 'error') failed.add(fam);
      if (f.status === 'loaded') loaded.add(fam);
    }
    out.fonts_failed = [...failed].filter((f) => !loaded.has(f)).sort();
    out.fonts_loaded = [...loaded].sort();

    const animated = new Set();
    try { for (const a of document.getAnimations()) if (a.playState === 'running' && a.effect && a.effect.target) animated.add(a.effect.target); } catch (_) { /* old engine */ }

    // --- the walk.
    const els = out.elements;
    const nodeOf = [];
    const fixedRootOf = []; // the outermost fixed or sticky ancestor-or-self, -1 for none
    nodesOut = nodeOf;
    const indexOf = new Map();
    // csOf[i] is nodeOf[i]'s live computed style, so a child reads its
    // parent's without asking for it again.
    const csOf = [];
    const INTERACTIVE_ROLES = /^(button|link|checkbox|radio|switch|tab|menuitem|menuitemcheckbox|menuitemradio|option|combobox|textbox|searchbox|slider|spinbutton)$/;
    const SKIP = new Set(['script', 'style', 'link', 'meta', 'head', 'title', 'noscript', 'template', 'br', 'wbr', 'base', 'iframe']);
    const MEDIA = new Set(['img', 'video', 'canvas', 'svg', 'picture', 'object', 'embed', 'iframe']);
    const isClip = (v) => v === 'hidden' || v === 'clip';
    const isScroll = (v) => v === 'auto' || v === 'scroll';
    const controlRole = (e) => {
      const tag = e.localName, role = (e.getAttribute('role') || '').trim();
      if (tag === 'a' && e.hasAttribute('href')) return 'link';
      if (tag === 'button') return 'button';
      if (tag === 'input') {
        const t = (e.getAttribute('type') || 'text').toLowerCase();
        if (t === 'hidden') return '';
        return t === 'checkbox' || t === 'radio' ? t : (t === 'submit' || t === 'button' || t === 'reset' || t === 'image' ? 'button' : 'input');
      }
      if (tag === 'select' || tag === 'textarea') return tag;
      if (tag === 'summary') return 'button';
      if (INTERACTIVE_ROLES.test(role)) return role;
      return '';
    };
    const ownText = (e) => {
      let rects = [], chars = 0;
      for (const n of e.childNodes) {
        if (n.nodeType !== 3 || !/\S/.test(n.data)) continue;
        chars += n.data.trim().length;
        const range = document.createRange();
        range.selectNodeContents(n);
        for (const r of range.getClientRects()) {
          if (r.width < 0.5 || r.height < 0.5) continue;
          if (rects.length < MAX_LINES) rects.push(rect(r));
        }
      }
      return chars ? { rects, chars } : null;
    };
    // --- what the contrast exceptions need to know about a text.
    // inactiveText: the text is part of, or names, an inactive control:
    // inside a disabled or aria-disabled element, a label of a disabled
    // control, the aria-labelledby target of one, or a control a framework
    // marks inactive with a "disabled" class.
    const labelsOfInactive = new Set();
    for (const c of document.querySelectorAll('[aria-labelledby]')) {
      if (!c.matches(':disabled, [aria-disabled="true"]')) continue;
      for (const id of (c.getAttribute('aria-labelledby') || '').split(/\s+/)) {
        const l = id && document.getElementById(id);
        if (l) labelsOfInactive.add(l);
      }
    }
    const inactiveText = (e) => {
      if (e.closest(':disabled, [aria-disabled="true"]')) return true;
      for (let a = e; a; a = a.parentElement) {
        if (labelsOfInactive.has(a)) return true;
        if (a.localName === 'label' && a.control && a.control.disabled) return true;
        if (a.classList && a.classList.contains('disabled') && controlRole(a)) return true;
      }
      return false;
    };
    // glyphText says when a text is not language: "symbols" when it has no
    // letter or digit (icon-font glyphs, ×, →), "single" when it is one
    // lone non-digit character such as a close button's X.
    const glyphText = (e) => {
      let t = '';
      for (const n of e.childNodes) if (n.nodeType === 3) t += n.data;
      t = t.trim();
      if (!t) return '';
      if (!/[\p{L}\p{N}]/u.test(t.replace(/[\u{E000}-\u{F8FF}]/gu, ''))) return 'symbols';
      if ([...t].length === 1 && !/\p{N}/u.test(t)) return 'single';
      return '';
    };
    // logoText: the text is part of a logotype (a logo or brand element).
    const LOGO = /^(logo|brand|logotype|wordmark|navbar-brand|site-logo|site-brand)$|[-_](logo|brand)$/i;
    const logoText = (e) => {
      for (let a = e, k = 0; a && k < 6; a = a.parentElement, k++) {
        if (a.id && LOGO.test(a.id)) return true;
        if (a.classList) for (const c of a.classList) if (LOGO.test(c)) return true;
      }
      return false;
    };
    // lineBox trims a text rect (its font's content area) to the line box
    // its line-height gives, which is what a box sized to the line-height
    // holds on purpose; lineBoxHeight is NaN for line-height: normal.
    const lineBoxHeight = (el) => parseFloat(getComputedStyle(el).lineHeight);
    const lineBox = (r, lh) => {
      if (!(lh > 0) || lh >= r.height) return r;
      const mid = (r.top + r.bottom) / 2;
      return { left: r.left, right: r.right, width: r.width, top: mid - lh / 2, bottom: mid + lh / 2, height: lh };
    };
    const inlineInText = (e) => {
      let blk = e.parentElement;
      while (blk && blk !== body && getComputedStyle(blk).display.startsWith('inline')) blk = blk.parentElement;
      if (!blk) return false;
      const w = document.createTreeWalker(blk, NodeFilter.SHOW_TEXT);
      let n, k = 0;
      while ((n = w.nextNode()) && k++ < 400) {
        if (!/\S/.test(n.data)) continue;
        const p = n.parentElement;
        if (p && !p.closest('a,button') && !/^[\s·•|,\-–—/]+$/.test(n.data)) return true;
      }
      return false;
    };
    const fontRoots = [];
    // outOfTokenScope says why an element's colours, spacing and sizes are
    // not the design system's to judge: code (syntax highlighting included)
    // or content the user edits.
    const CODE = new Set(['pre', 'code', 'kbd', 'samp', 'tt', 'var']);
    const outOfTokenScope = (e, tag) => CODE.has(tag) ? 'code' : (e.isContentEditable || tag === 'textarea' ? 'editable' : '');
    // inactive: disabled natively, by ARIA, or by a framework's .disabled
    // class (on it or on an ancestor such as a pagination item).
    const inactive = (e) => e.matches(':disabled') || !!e.closest('[aria-disabled="true"], .disabled, fieldset:disabled');
    // hiddenByClipper: the point lies outside a clipping or scrolling
    // ancestor's box, so what is there is scrolled out of view, not covered.
    const hiddenByClipper = (e, x, y) => {
      for (let a = e.parentElement; a && a !== body && a !== de; a = a.parentElement) {
        const acs = getComputedStyle(a);
        if (acs.overflowX === 'visible' && acs.overflowY === 'visible') continue;
        const ar = a.getBoundingClientRect();
        if (x < ar.left || x >= ar.right || y < ar.top || y >= ar.bottom) return true;
      }
      return false;
    };
    // emBox narrows a line box to its em box: a tall display font's content
    // area reaches far past its glyphs, so neighbouring lines' boxes meet
    // where the ink does not.
    const emBox = (b, fs) => (fs && b.h > fs ? { x: b.x, y: b.y + (b.h - fs) / 2, w: b.w, h: fs } : b);
    // inkBox narrows a line box to where its glyphs reach (the text's
    // ascenders and descenders, measured in its font): lines set tight on
    // purpose keep their ink apart, lines pulled into each other do not.
    // It falls back to the em box when the font cannot be measured.
    const inkCanvas = document.createElement('canvas').getContext('2d');
    let inkFont = '';
    const inkMetrics = (el) => {
      if (!inkCanvas) return null;
      let t = '';
      for (const n of el.childNodes) if (n.nodeType === 3) t += n.data;
      t = t.trim().slice(0, 200);
      const cs = getComputedStyle(el);
      const font = cs.font || (cs.fontStyle + ' ' + cs.fontWeight + ' ' + cs.fontSize + ' ' + cs.fontFamily);
      if (font !== inkFont) { inkCanvas.font = font; inkFont = font; } // parsing a font is the costly part
      const m = inkCanvas.measureText(t);
      const fa = m.fontBoundingBoxAscent, fd = m.fontBoundingBoxDescent;
      if (!t || !(fa + fd > 0) || !isFinite(m.actualBoundingBoxAscent) || !isFinite(m.actualBoundingBoxDescent)) return null;
      return { fa, fd, a: m.actualBoundingBoxAscent, d: m.actualBoundingBoxDescent };
    };
    const inkBox = (b, m, fs) => {
      if (!m) return emBox(b, fs);
      const base = b.y + m.fa * b.h / (m.fa + m.fd);
      return { x: b.x, y: base - m.a, w: b.w, h: m.a + m.d };
    };
    // uaSizedControl: a native button or select whose size the browser
    // alone determines (WCAG 2.5.8's user-agent exception): native
    // appearance, and the page set none of its font size, padding, borders,
    // line height, width, height or their minimums.
    const UA_SIZE_KEYS = ['width', 'height', 'min-width', 'min-height', 'inline-size', 'block-size', 'min-inline-size', 'min-block-size'];
    const uaSizedControl = (e, cs, ref) => {
      const tag = e.localName, type = (e.getAttribute('type') || '').toLowerCase();
      const native = tag === 'select' || (tag === 'button' && !e.hasAttribute('role')) ||
        (tag === 'input' && (type === 'button' || type === 'submit' || type === 'reset'));
      if (!native || !ref || cs.appearance === 'none' || Math.abs(parseFloat(cs.fontSize) - parseFloat(ref['font-size'])) > 0.05) return false;
      for (const p of UA_BOX) if (cs.getPropertyValue(p) !== ref[p]) return false;
      let map = null;
      try { map = e.computedStyleMap(); } catch (_) { return false; }
      for (const p of UA_SIZE_KEYS) {
        const v = map.get(p);
        if (!(v instanceof CSSKeywordValue && v.value === 'auto') && !(p.startsWith('min-') && v instanceof CSSUnitValue && v.value === 0)) return false;
      }
      return true;
    };

    const visit = (e, parent, ctx, depth) => {
      if (els.length >= MAX_ELEMENTS) { out.truncated = true; return; }
      if (depth > MAX_DEPTH) return;
      const tag = e.localName;
      if (SKIP.has(tag) || e === frame) return;
      if (e.getAttribute('aria-hidden') === 'true' || e.inert) return;
      if (e.checkVisibility && !e.checkVisibility()) return; // display:none, closed <details>, content-visibility
      const cs = getComputedStyle(e);
      if (cs.display === 'none') return;
      const pcs = parent >= 0 ? csOf[parent] : null;
      if (cs.display === 'contents') {
        for (const c of composedChildren(e)) visit(c, parent, ctx, depth + 1);
        return;
      }
      const br = e.getBoundingClientRect();
      const box = rect(br);
      const clipped1 = (br.width <= 1.5 || br.height <= 1.5) && (isClip(cs.overflowX) || isClip(cs.overflowY));
      const clipRect = cs.clip && cs.clip !== 'auto' && /rect\(\s*0/.test(cs.clip);
      const clipPath = /inset\(\s*(50|100)%/.test(cs.clipPath || '');
      if (clipped1 || clipRect || clipPath) return; // screen-reader-only
      const opacity = ctx.opacity * parseFloat(cs.opacity || '1');
      if (opacity < 0.05) return;
      if (br.width > 0 && br.height > 0 && (box.x + box.w <= 0 || box.x >= docW || box.y + box.h <= 0)) return; // off-canvas
      const i = els.length;
      const rec = { i, parent, tag, box, display: cs.display, position: cs.position };
      if (e.classList && e.classList.length) rec.cls = [...e.classList].sort().join(' ').slice(0, 120);
      els.push(rec); nodeOf.push(e); csOf.push(cs); indexOf.set(e, i);
      if (cs.visibility !== 'visible') rec.invisible = true;
      if (ctx.fixed || cs.position === 'fixed' || cs.position === 'sticky') rec.fixed = true;
      const fixedRoot = ctx.fixedRoot >= 0 ? ctx.fixedRoot : (cs.position === 'fixed' || cs.position === 'sticky' ? i : -1);
      fixedRootOf[i] = fixedRoot;
      if (ctx.scroller) rec.in_scroller = true;
      if (ctx.clipX) rec.clip_x = true;
      if (ctx.clipY) rec.clip_y = true;
      if (ctx.transformed) rec.transformed = true;
      if (ctx.control >= 0) rec.in_control = ctx.control;
      const oos = ctx.oos || outOfTokenScope(e, tag);
      if (oos) rec.oos = oos;
      const anim = ctx.animated || animated.has(e);
      if (anim) rec.animated = true;
      if (opacity < 0.999) rec.opacity = r1(opacity * 1000) / 1000;
      if (cs.transform !== 'none') rec.transform = true;
      if (cs.position === 'relative' && ((cs.top !== 'auto' && cs.top !== '0px') || (cs.left !== 'auto' && cs.left !== '0px'))) rec.offset = true;
      if (cs.float !== 'none') rec.float = true;
      if (cs.overflowX !== 'visible') rec.own_clip_x = true;

      // Values the page's CSS set (differs from the parent for inherited
      // properties and from an unstyled element of the same kind).
      const ref = refStyle(e);
      const set = {};
      const fs = parseFloat(cs.fontSize), rfs = ref ? parseFloat(ref['font-size']) : 16;
      if (ref) {
        if ((!pcs || cs.color !== pcs.color) && cs.color !== ref.color) set.color = cs.color;
        if (cs.backgroundColor !== ref['background-color'] && !/^rgba\(0, 0, 0, 0\)$|transparent/.test(cs.backgroundColor)) set['background-color'] = cs.backgroundColor;
        for (const side of ['top', 'right', 'bottom', 'left']) {
          const wv = parseFloat(cs.getPropertyValue('border-' + side + '-width'));
          const st = cs.getPropertyValue('border-' + side + '-style');
          const c = cs.getPropertyValue('border-' + side + '-color');
          if (wv > 0 && st !== 'none' && st !== 'hidden' && c !== cs.color && c !== ref['border-' + side + '-color'] && !set['border-color']) set['border-color'] = c;
        }
        if ((!pcs || cs.fontFamily !== pcs.fontFamily) && cs.fontFamily !== ref['font-family']) set['font-family'] = cs.fontFamily;
        const pfs = pcs ? parseFloat(pcs.fontSize) : 16;
        if ((!pcs || Math.abs(fs - pfs) > 0.05) && Math.abs(fs - pfs * rfs / 16) > 0.3 && Math.abs(fs - rfs) > 0.3) set['font-size'] = cs.fontSize;
        let map = null;
        try { map = e.computedStyleMap(); } catch (_) { map = null; }
        const flexOrGrid = /flex|grid/.test(cs.display);
        for (const p of SPACING) {
          if ((p === 'row-gap' || p === 'column-gap') && !flexOrGrid) continue;
          if (cs.display === 'inline' && /top|bottom/.test(p)) continue;
          const v = parseFloat(cs.getPropertyValue(p));
          if (!v || !isFinite(v)) continue;
          const rv = parseFloat(ref[p]) || 0;
          if (Math.abs(v - rv) < 0.5) continue;
          if (rv && rfs && Math.abs(v / fs - rv / rfs) < 0.01) continue;
          if (map) {
            const tv = map.get(p);
            if (!(tv instanceof CSSUnitValue) || tv.unit !== 'px') continue;
          }
          set[p] = r1(v);
        }
      }
      if (Object.keys(set).length) rec.set = set;
      if (set['font-family'] && fontRoots.length < MAX_PROBES) fontRoots.push(i);
      rec.font_size = r1(fs);
      if (fs !== rfs) rec.ref_font_size = r1(rfs);
      const surface = (cs.backgroundColor !== 'rgba(0, 0, 0, 0)' && (!pcs || cs.backgroundColor !== pcs.backgroundColor)) ||
        cs.backgroundImage !== 'none' || cs.boxShadow !== 'none';
      // A box drawn by borders alone has only the edges its borders draw
      // (a footer's top rule has no bottom edge to cross).
      const edges = ['top', 'right', 'bottom', 'left'].filter((s) => parseFloat(cs.getPropertyValue('border-' + s + '-width')) > 0 &&
        !['none', 'hidden'].includes(cs.getPropertyValue('border-' + s + '-style'))).map((s) => s[0]).join('');
      if (surface || edges) rec.bounded = true;
      if (!surface && edges && edges !== 'trbl') rec.edges = edges;

      // Own text.
      const t = tag === 'svg' || MEDIA.has(tag) ? null : ownText(e);
      if (t) {
        rec.text = {
          rects: t.rects, chars: t.chars, weight: parseInt(cs.fontWeight, 10) || 400, family: cs.fontFamily, color: cs.color,
        };
        if (cs.textShadow !== 'none') rec.text.shadow = true;
        if (inactiveText(e)) rec.text.disabled = true;
        const glyphs = glyphText(e);
        if (glyphs) rec.text.glyphs = glyphs;
        if (logoText(e)) rec.text.logo = true;
        if (/^h[1-6]$/.test(tag)) rec.heading = parseInt(tag[1], 10);
      } else if (/^h[1-6]$/.test(tag)) rec.heading = parseInt(tag[1], 10);

      // Controls.
      const role = controlRole(e);
      if (role && ctx.control < 0) {
        const c = { role };
        if (inactive(e)) c.disabled = true;
        if (cs.pointerEvents === 'none') c.no_pointer = true;
        if (role === 'link' && cs.display === 'inline' && inlineInText(e)) c.inline = true;
        if ((role === 'checkbox' || role === 'radio') && ref && cs.appearance !== 'none' && cs.width === ref.width && cs.height === ref.height) c.ua_sized = true;
        else if (uaSizedControl(e, cs, ref)) c.ua_sized = true;
        if (e.labels && e.labels.length) {
          const lb = e.labels[0].getBoundingClientRect();
          if (lb.width > 0 && lb.height > 0) c.label_box = rect(lb);
        }
        rec.control = c;
      }
      if (tag === 'img') {
        rec.image = { src: (e.currentSrc || e.getAttribute('src') || '').slice(0, 300), complete: e.complete, natural_width: e.naturalWidth, alt: e.getAttribute('alt') };
      }

      // Clipping: text this element's overflow cuts.
      const clipX = isClip(cs.overflowX), clipY = isClip(cs.overflowY);
      const scrollX = isScroll(cs.overflowX), scrollY = isScroll(cs.overflowY);
      if ((clipX || clipY) && !MEDIA.has(tag) && (e.scrollWidth > e.clientWidth + 1 || e.scrollHeight > e.clientHeight + 1)) {
        const cr = e.getBoundingClientRect();
        const left = cr.left + e.clientLeft, top = cr.top + e.clientTop, right = left + e.clientWidth, bottom = top + e.clientHeight;
        let cutX = 0, cutY = 0, visible = false, k = 0;
        const w = document.createTreeWalker(e, NodeFilter.SHOW_TEXT);
        let n;
        while ((n = w.nextNode()) && k++ < MAX_CLIP_TEXT) {
          if (!/\S/.test(n.data)) continue;
          let nearest = n.parentElement, ok = true;
          while (nearest && nearest !== e) {
            const ncs = getComputedStyle(nearest);
            if (ncs.overflowX !== 'visible' || ncs.overflowY !== 'visible' || ncs.display === 'none' || ncs.position === 'absolute' || ncs.position === 'fixed') { ok = false; break; }
            nearest = nearest.parentElement;
          }
          if (!ok || getComputedStyle(n.parentElement).visibility !== 'visible') continue;
          const range = document.createRange();
          range.selectNodeContents(n);
          const lh = lineBoxHeight(n.parentElement);
          for (const cr0 of range.getClientRects()) {
            const r = lineBox(cr0, lh);
            if (r.width < 1 || r.height < 1) continue;
            const inX = r.right > left + 1 && r.left < right - 1, inY = r.bottom > top + 1 && r.top < bottom - 1;
            if (inX && inY) visible = true;
            if (clipX && inY && inX) cutX = Math.max(cutX, r.right - right, left - r.left);
            if (clipY && inX) cutY = Math.max(cutY, r.bottom - bottom, top - r.top);
          }
        }
        if (visible && (cutX > 0.5 || cutY > 0.5)) {
          rec.clip = { x: r1(Math.max(0, clipX ? cutX : 0)), y: r1(Math.max(0, clipY ? cutY : 0)) };
          if (cs.textOverflow === 'ellipsis') rec.clip.ellipsis = true;
          const clamp = cs.getPropertyValue('-webkit-line-clamp');
          if (clamp && clamp !== 'none') rec.clip.line_clamp = true;
          if ((cs.maskImage && cs.maskImage !== 'none') || (cs.webkitMaskImage && cs.webkitMaskImage !== 'none')) rec.clip.masked = true;
          if (e.id && document.querySelector('[aria-controls~="' + CSS.escape(e.id) + '"][aria-expanded="false"]')) rec.clip.collapsed = true;
        }
      }

      if (MEDIA.has(tag) || tag === 'select' || tag === 'textarea') return; // contents are not page layout
      const child = {
        opacity,
        fixed: ctx.fixed || cs.position === 'fixed' || cs.position === 'sticky',
        fixedRoot,
        scroller: ctx.scroller || ((scrollX || scrollY) && e !== de && e !== body),
        // The root's and body's overflow is the viewport's: what it hides
        // past the phone's edge is cut off, not deliberately clipped.
        clipX: ctx.clipX || (clipX && e !== de && e !== body), clipY: ctx.clipY || (clipY && e !== de && e !== body),
        transformed: ctx.transformed || cs.transform !== 'none',
        animated: anim,
        control: role && ctx.control < 0 ? i : ctx.control,
        oos,
      };
      for (const c of composedChildren(e)) visit(c, i, child, depth + 1);
    };
    visit(de, -1, { opacity: 1, fixed: false, scroller: false, clipX: false, clipY: false, transformed: false, animated: false, control: -1, oos: '', fixedRoot: -1 }, 0);

    // Font probes: for each element that sets a font family, the first text
    // element inside it that renders with that family.
    for (const ri of fontRoots) {
      const fam = els[ri].set['font-family'];
      for (let j = ri; j < els.length; j++) {
        if (j > ri && !nodeOf[ri].contains(nodeOf[j])) break;
        if (els[j].text && els[j].text.family === fam && !els[j].invisible) { els[ri].font_probe = j; break; }
      }
    }

    // Overlap candidates: line boxes of different, unrelated text elements
    // that intersect.
    const lines = [];
    for (const r of els) {
      // Text in a scroll container is a candidate too: the hit test below
      // drops what its scroller hides.
      // Fixed and sticky text moves over the page on purpose; within one
      // fixed or sticky box (a toolbar) its texts are laid out together.
      if (!r.text || r.animated || r.invisible || r.transformed) continue;
      const m = inkMetrics(nodeOf[r.i]);
      for (const b of r.text.rects) lines.push({ i: r.i, fr: fixedRootOf[r.i], b: inkBox(b, m, r.font_size) });
    }
    lines.sort((a, b) => a.b.y - b.b.y || a.i - b.i);
    const pairArea = new Map();
    for (let a = 0; a < lines.length && a < 20000; a++) {
      const A = lines[a];
      for (let b = a + 1; b < lines.length; b++) {
        const B = lines[b];
        if (B.b.y >= A.b.y + A.b.h) break;
        if (A.i === B.i || A.fr !== B.fr) continue;
        const ix = Math.min(A.b.x + A.b.w, B.b.x + B.b.w) - Math.max(A.b.x, B.b.x);
        const iy = Math.min(A.b.y + A.b.h, B.b.y + B.b.h) - Math.max(A.b.y, B.b.y);
        if (ix < 2 || iy < 0.5) continue;
        const ea = nodeOf[A.i], eb = nodeOf[B.i];
        if (ea.contains(eb) || eb.contains(ea)) continue;
        const key = Math.min(A.i, B.i) + ':' + Math.max(A.i, B.i);
        const p = pairArea.get(key) || { a: Math.min(A.i, B.i), b: Math.max(A.i, B.i), area: 0, ix: 0, iy: 0, pt: null };
        p.area += ix * iy;
        if (ix * iy > p.ix * p.iy) {
          p.ix = ix; p.iy = iy;
          p.pt = [Math.max(A.b.x, B.b.x) + ix / 2, Math.max(A.b.y, B.b.y) + iy / 2];
          p.minh = Math.min(A.b.h, B.b.h);
        }
        pairArea.set(key, p);
      }
    }

    // --- hit tests, in page order, scrolling each point to mid-viewport.
    const jobs = [];
    let nbg = 0, nhit = 0, npair = 0;
    for (const r of els) {
      if (r.text && !r.invisible && r.text.rects[0]) {
        const b = r.text.rects[0];
        if (nbg++ < MAX_BG_TESTS) jobs.push({ x: b.x + b.w / 2, y: b.y + b.h / 2, kind: 'bg', r });
      }
      if (r.control && !r.invisible && r.box.w > 0 && r.box.h > 0 && nhit++ < MAX_HIT_TESTS) jobs.push({ x: r.box.x + r.box.w / 2, y: r.box.y + r.box.h / 2, kind: 'hit', r });
    }
    for (const p of pairArea.values()) if (npair++ < MAX_PAIR_TESTS) jobs.push({ x: p.pt[0], y: p.pt[1], kind: 'pair', p });
    if (nbg > MAX_BG_TESTS || nhit > MAX_HIT_TESTS || npair > MAX_PAIR_TESTS) out.truncated = true;
    // Fixed and sticky content moves with the scroll: test it first, before
    // any scrolling, then the rest in page order.
    const fixedJob = (j) => (j.r ? j.r.fixed : els[j.p.a].fixed || els[j.p.b].fixed) ? 0 : 1;
    jobs.sort((a, b) => fixedJob(a) - fixedJob(b) || a.y - b.y || a.x - b.x);
    const colorAlpha = (c) => {
      const m = /rgba?\(([^)]+)\)/.exec(c);
      if (!m) return 1;
      const parts = m[1].split(/[\s,/]+/).filter(Boolean);
      return parts.length > 3 ? parseFloat(parts[3]) : 1;
    };
    const pseudoSurface = (el) => {
      for (const ps of ['::before', '::after']) {
        const p = getComputedStyle(el, ps);
        if (p.content && p.content !== 'none' && p.content !== 'normal' && (p.position === 'absolute' || p.position === 'fixed') &&
          (colorAlpha(p.backgroundColor) > 0 || p.backgroundImage !== 'none')) return true;
      }
      return false;
    };
    // layerInfo caches what one element contributes under text: body and
    // html sit in every stack.
    const layerMemo = new Map();
    const layerInfo = (s) => {
      let v = layerMemo.get(s);
      if (v) return v;
      const cs = getComputedStyle(s);
      v = {
        media: MEDIA.has(s.localName),
        filter: cs.filter !== 'none' || cs.mixBlendMode !== 'normal' || (cs.backdropFilter && cs.backdropFilter !== 'none'),
        pseudo: pseudoSurface(s),
        image: cs.backgroundImage,
        color: cs.backgroundColor,
      };
      layerMemo.set(s, v);
      return v;
    };
    const stackBackground = (r, stack) => {
      const el = nodeOf[r.i];
      let start = stack.indexOf(el);
      const layers = [];
      let seq;
      if (start < 0) {
        seq = [];
        for (let a = el; a; a = composedParent(a)) seq.push(a);
      } else seq = stack.slice(start);
      for (const s of seq) {
        const li = layerInfo(s);
        if (s !== el && li.media) return { unknown: 'media' };
        if (li.filter) return { unknown: 'filter' };
        if (li.pseudo) return { unknown: 'pseudo' };
        if (li.image !== 'none') {
          if (/url\(|image-set|element\(/.test(li.image)) return { unknown: 'image' };
          const stops = li.image.match(/rgba?\([^)]*\)/g) || [];
          layers.push({ gradient: stops.slice(0, 16) });
          if (stops.length && stops.every((c) => colorAlpha(c) >= 0.999)) return { layers };
          return { unknown: 'gradient' };
        }
        const a = colorAlpha(li.color);
        if (a > 0) {
          layers.push({ color: li.color });
          if (a >= 0.999) return { layers };
        }
      }
      return { layers };
    };
    // An open modal dialog makes everything outside it unreachable on
    // purpose.
    let modal = null;
    for (const m of document.querySelectorAll('dialog[open], [aria-modal="true"]')) {
      if (m.localName === 'dialog' && !m.matches(':modal')) continue;
      const mr = m.getBoundingClientRect();
      if (mr.width > 0 && mr.height > 0 && getComputedStyle(m).visibility === 'visible') { modal = m; break; }
    }
    // Hit tests answer over the layout viewport. On a phone page that
    // overflows sideways Chromium widens it to the content and makes it
    // taller than the screen in proportion (innerHeight > vh), and the
    // window then scrolls only to docH - innerHeight: text in the page's
    // last innerHeight px never comes under the screen's top vh px, but it
    // is under the layout viewport, where elementsFromPoint still answers.
    const hitH = Math.max(vh, window.innerHeight);
    let cy = window.scrollY;
    for (const j of jobs) {
      if (j.x < 0 || j.x >= vw || j.y < 0 || j.y >= docH) continue;
      if (fixedJob(j) === 1 && (j.y < cy + vh * 0.2 || j.y > cy + vh * 0.8)) {
        window.scrollTo({ left: sx0, top: Math.max(0, j.y - vh / 2), behavior: 'instant' });
        cy = window.scrollY;
      }
      const px = j.x - window.scrollX, py = j.y - cy;
      if (px < 0 || px >= vw || py < 0 || py >= hitH) continue;
      if (j.kind === 'bg') {
        j.r.text.measured = true;
        const bg = stackBackground(j.r, hitRoot(nodeOf[j.r.i]).elementsFromPoint(px, py));
        j.r.text.bg = bg.layers || [];
        if (bg.unknown) j.r.text.bg_unknown = bg.unknown;
      } else if (j.kind === 'hit') {
        const el = nodeOf[j.r.i];
        const hit = hitRoot(el).elementFromPoint(px, py);
        const c = j.r.control;
        if (hiddenByClipper(el, px, py)) c.hit = 'clipped';
        else if (modal && !modal.contains(el)) c.hit = 'modal';
        else if (!hit) c.hit = 'none';
        else if (hit === el || el.contains(hit)) c.hit = 'self';
        else if (el.labels && [...el.labels].some((l) => l === hit || l.contains(hit))) c.hit = 'label';
        else if (hit.contains(el)) c.hit = 'ancestor';
        else if (hit.closest('dialog[open], [aria-modal="true"], [role="dialog"], [role="alertdialog"]') && !el.closest('dialog[open], [aria-modal="true"], [role="dialog"], [role="alertdialog"]')) c.hit = 'modal';
        else { c.hit = 'other'; c.hit_by = selector(hit); }
      } else {
        const p = j.p;
        const stack = document.elementsFromPoint(px, py);
        const ea = nodeOf[p.a], eb = nodeOf[p.b];
        const ia = stack.indexOf(ea), ib = stack.indexOf(eb);
        if (ia < 0 || ib < 0) continue;
        const top = ia < ib ? p.a : p.b, bottom = ia < ib ? p.b : p.a;
        let surface = false;
        for (let k = Math.min(ia, ib); k < Math.max(ia, ib); k++) {
          const s = stack[k];
          if (s.contains(nodeOf[bottom])) continue;
          const cs = getComputedStyle(s);
          if (colorAlpha(cs.backgroundColor) >= 0.9 || cs.backgroundImage !== 'none' || MEDIA.has(s.localName)) { surface = true; break; }
        }
        out.overlaps.push({ top, bottom, area: r1(p.area), w: r1(p.ix), h: r1(p.iy), line_h: r1(p.minh), surface });
      }
    }
    window.scrollTo({ left: sx0, top: sy0, behavior: 'instant' });

    for (const r of els) r.sel = selector(nodeOf[r.i]);
    out.overlaps.sort((a, b) => a.top - b.top || a.bottom - b.bottom);
  } finally {
    frame.remove();
  }
  // The nodes go back with the data, so the caller can sample the pixels
  // under a text (Snapshot.Elements[i] is nodes[i]).
  return [JSON.stringify(out), nodesOut];
})()
