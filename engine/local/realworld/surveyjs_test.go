package realworld_test

// surveyJS is the labeller's own measurement of a loaded page (see
// TestLabelSurvey), written from the checks' documented rules and
// independent of checks/collect.js. It names elements the way bastion's
// findings do (the documented scheme: a unique #id, a unique
// [data-testid], a tag.class unique on the page trying the last class
// first, a unique tag, else the parent's name > tag.firstclass with
// :nth-of-type when the tag repeats), so a label can be compared with a
// finding (a label naming the right element in another form would score
// as a miss, and the protocol allows correcting only that afterwards).
const surveyJS = `(() => {
  const de = document.documentElement, vw = de.clientWidth;
  const count = new Map();
  const bump = (k) => count.set(k, (count.get(k) || 0) + 1);
  for (const e of document.getElementsByTagName('*')) {
    if (e.id) bump('#' + e.id);
    bump(e.localName);
    for (const c of e.classList) bump(e.localName + '.' + c);
  }
  const memo = new Map();
  const sel = (e) => {
    if (memo.has(e)) return memo.get(e);
    let s;
    const tag = e.localName;
    if (e === de) s = 'html';
    else if (e === document.body) s = 'body';
    else if (e.id && count.get('#' + e.id) === 1) s = '#' + CSS.escape(e.id);
    else {
      for (const c of [...e.classList].reverse()) if (count.get(tag + '.' + c) === 1) { s = tag + '.' + CSS.escape(c); break; }
      if (!s && count.get(tag) === 1) s = CSS.escape(tag);
      if (!s) {
        const p = e.parentElement;
        let seg = CSS.escape(tag) + (e.classList.length ? '.' + CSS.escape(e.classList[0]) : '');
        const same = [...p.children].filter((x) => x.localName === tag);
        if (same.length > 1) seg += ':nth-of-type(' + (same.indexOf(e) + 1) + ')';
        s = sel(p) + ' > ' + seg;
      }
    }
    memo.set(e, s);
    return s;
  };
  const rgba = (c) => { const m = c.match(/[\d.]+/g) || []; return m.length < 3 ? null : [+m[0], +m[1], +m[2], m.length > 3 ? +m[3] : 1]; };
  const over = (a, b) => [0, 1, 2].map((i) => a[i] * a[3] + b[i] * (1 - a[3])).concat([1]);
  const lin = (v) => { v /= 255; return v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
  const L = (c) => 0.2126 * lin(c[0]) + 0.7152 * lin(c[1]) + 0.0722 * lin(c[2]);
  const ratio = (a, b) => (Math.max(L(a), L(b)) + 0.05) / (Math.min(L(a), L(b)) + 0.05);
  const hex = (c) => '#' + c.slice(0, 3).map((v) => Math.round(v).toString(16).padStart(2, '0')).join('');
  // The background under e: its own and its ancestors' background colours
  // composited over white; "image" when a background image is in the way.
  const bgOf = (e) => {
    const layers = [];
    for (let p = e; p; p = p.parentElement) {
      const cs = getComputedStyle(p);
      if (cs.backgroundImage !== 'none') return { image: cs.backgroundImage.slice(0, 60) };
      const c = rgba(cs.backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    let bg = [255, 255, 255, 1];
    for (let i = layers.length - 1; i >= 0; i--) bg = over(layers[i], bg);
    return { bg };
  };
  const visible = (e) => {
    for (let p = e; p; p = p.parentElement) {
      const cs = getComputedStyle(p);
      if (cs.display === 'none' || cs.visibility === 'hidden' || +cs.opacity === 0) return false;
      if (p.getAttribute('aria-hidden') === 'true') return false;
    }
    return true;
  };
  const scrolled = (e) => {
    for (let p = e.parentElement; p && p !== document.body && p !== de; p = p.parentElement) {
      const cs = getComputedStyle(p);
      if (/auto|scroll|hidden|clip/.test(cs.overflowX) || cs.position === 'fixed') return true;
    }
    return false;
  };
  const R = (r) => ({ x: Math.round((r.left + scrollX) * 10) / 10, y: Math.round((r.top + scrollY) * 10) / 10, w: Math.round(r.width * 10) / 10, h: Math.round(r.height * 10) / 10 });
  const out = { vw, doc_w: de.scrollWidth, doc_h: de.scrollHeight, viewport_meta: !!document.querySelector('meta[name=viewport]'), contrast: [], small: [], targets: [], overflow: [], clipped: [], unnamed: [], broken: [], headings: [] };
  const groups = new Map();
  // WCAG 2.5.8's inline exception: a link in a sentence, i.e. a block that
  // has text outside links and buttons (separators such as "|" are not).
  const inText = (e) => {
    let b = e.parentElement;
    while (b && b !== document.body && getComputedStyle(b).display.startsWith('inline')) b = b.parentElement;
    const w = document.createTreeWalker(b, NodeFilter.SHOW_TEXT);
    for (let n; (n = w.nextNode());) if (/\S/.test(n.data) && !n.parentElement.closest('a,button') && !/^[\s·•|,\-–—/]+$/.test(n.data)) return true;
    return false;
  };
  const controls = 'a[href], button, input:not([type=hidden]), select, textarea, summary, [role=button], [role=link], [role=checkbox], [role=tab], [tabindex]:not([tabindex="-1"])';
  for (const e of document.body.getElementsByTagName('*')) {
    if (!visible(e)) continue;
    const cs = getComputedStyle(e), box = e.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) continue;
    const texts = [...e.childNodes].filter((n) => n.nodeType === 3 && n.data.trim());
    if (texts.length) {
      const range = document.createRange();
      range.selectNodeContents(texts[0]);
      const rr = range.getBoundingClientRect();
      const size = parseFloat(cs.fontSize), weight = +cs.fontWeight || 400;
      const fg = rgba(cs.color), b = bgOf(e);
      const large = size >= 24 || (size >= 18.66 && weight >= 700);
      const need = large ? 3 : 4.5;
      const snippet = texts.map((n) => n.data.trim()).join(' ').slice(0, 40);
      if (fg && b.bg && rr.width > 0) {
        const f = over(fg, b.bg), r = ratio(f, b.bg);
        if (r < need - 0.005) {
          const key = hex(f) + '|' + hex(b.bg) + '|' + need;
          const g = groups.get(key);
          if (g) { g.count++; if (g.also.length < 5) g.also.push(sel(e)); }
          else { const c = { sel: sel(e), fg: hex(f), bg: hex(b.bg), ratio: Math.round(r * 100) / 100, need, size, weight, text: snippet, rect: R(rr), count: 1, also: [] }; groups.set(key, c); out.contrast.push(c); }
        }
      } else if (b.image) out.contrast.push({ sel: sel(e), image: b.image, fg: hex(fg), size, text: snippet, rect: R(rr) });
      if (size < 12) {
        // Blamed on the outermost ancestor of the same small size whose
        // size differs from its parent's (where the CSS set it).
        let blame = e;
        for (let p = e; p && parseFloat(getComputedStyle(p).fontSize) < 12; p = p.parentElement)
          if (p.parentElement && getComputedStyle(p.parentElement).fontSize !== getComputedStyle(p).fontSize) blame = p;
        out.small.push({ sel: sel(blame), size, text: snippet });
      }
    }
    if (/^h[1-6]$/.test(e.localName)) out.headings.push({ sel: sel(e), level: +e.localName[1], size: parseFloat(cs.fontSize) });
    if (e.matches(controls)) {
      const inline = cs.display === 'inline' && inText(e);
      if (Math.min(box.width, box.height) < 24) out.targets.push({ sel: sel(e), w: Math.round(box.width * 10) / 10, h: Math.round(box.height * 10) / 10, inline, text: e.textContent.trim().slice(0, 30), rect: R(box) });
      const name = (e.getAttribute('aria-label') || e.getAttribute('title') || e.textContent || '').trim() || [...e.querySelectorAll('img[alt]')].map((i) => i.alt).join('').trim() || (e.labels && [...e.labels].map((l) => l.textContent).join('').trim()) || e.getAttribute('placeholder') || e.getAttribute('value') || '';
      if (!name && !e.getAttribute('aria-labelledby')) out.unnamed.push({ sel: sel(e), tag: e.localName, html: e.outerHTML.slice(0, 120) });
    }
    if (box.right > vw + 1 && box.left < vw && !scrolled(e) && cs.position !== 'fixed') out.overflow.push({ sel: sel(e), right: Math.round(box.right), w: Math.round(box.width) });
    if (/hidden|clip/.test(cs.overflowX + cs.overflowY) && (e.scrollWidth > e.clientWidth + 1 || e.scrollHeight > e.clientHeight + 1) && cs.textOverflow !== 'ellipsis')
      out.clipped.push({ sel: sel(e), sw: e.scrollWidth, cw: e.clientWidth, sh: e.scrollHeight, ch: e.clientHeight });
    if (e.localName === 'img' && e.complete && e.naturalWidth === 0 && e.getAttribute('src')) out.broken.push({ sel: sel(e), src: e.getAttribute('src') });
  }
  // WCAG 2.5.8's spacing exception: an undersized target passes when a
  // 24 px circle on its centre meets no other target and no other
  // undersized target's circle.
  const all = [...document.body.querySelectorAll(controls)].filter((e) => visible(e)).map((e) => ({ e, r: e.getBoundingClientRect() })).filter((x) => x.r.width > 0 && x.r.height > 0);
  const small = (r) => Math.min(r.width, r.height) < 24;
  for (const t of out.targets) {
    const me = all.find((x) => sel(x.e) === t.sel);
    if (!me) continue;
    const cx = me.r.left + me.r.width / 2, cy = me.r.top + me.r.height / 2;
    for (const o of all) {
      if (o === me || o.e.contains(me.e) || me.e.contains(o.e)) continue;
      const dx = Math.max(0, o.r.left - cx, cx - o.r.right), dy = Math.max(0, o.r.top - cy, cy - o.r.bottom);
      const ox = o.r.left + o.r.width / 2, oy = o.r.top + o.r.height / 2;
      if (Math.hypot(dx, dy) < 12 || (small(o.r) && Math.hypot(ox - cx, oy - cy) < 24)) { t.crowded = sel(o.e); break; }
    }
  }
  return JSON.stringify(out);
})()`
