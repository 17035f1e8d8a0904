package capture

// FreezeScript runs in every new document before the page's own scripts. It
// adopts a constructed style sheet that ends animations and transitions at
// once (their resting state is what a user sees) and stops caret blinking
// and smooth scrolling. A constructed sheet is not a node in the document,
// so checks that walk the DOM or document.styleSheets never see it; it is
// marked with data so a check can recognise it in document.adoptedStyleSheets.
// It is exported so tests that drive a browser of their own load pages the
// way a capture does.
//
// The rule skips <area>: Chromium drops an image map's area links from the
// accessibility tree when an author rule styles them, and an area is never
// animated. :where keeps the rule's specificity at zero, as * has.
const FreezeScript = `(() => {
  try {
    const s = new CSSStyleSheet();
    s.replaceSync("/* bastion-capture-freeze */ :where(:not(area)), :where(:not(area))::before, :where(:not(area))::after { animation-duration: 0s !important; animation-delay: 0s !important; animation-iteration-count: 1 !important; transition-duration: 0s !important; transition-delay: 0s !important; caret-color: transparent !important; scroll-behavior: auto !important; }");
    Object.defineProperty(s, "bastionCapture", { value: true });
    document.adoptedStyleSheets = [...document.adoptedStyleSheets, s];
  } catch (e) {}
})();`

// fontsReadyScript resolves when document.fonts.ready does, or after capMs.
const fontsReadyScript = `(capMs) => Promise.race([
  document.fonts.ready.then(() => true),
  new Promise(r => setTimeout(() => r(false), capMs)),
])`

// observeScript runs in every new document before the page's own scripts
// and counts the IntersectionObservers the page creates, so settle scrolls
// only a page that something below the fold can react to. The subclass
// keeps the constructor's name and behaviour; the count is kept under a
// registered symbol, out of the page's string-keyed globals.
const observeScript = `(() => {
  const IO = window.IntersectionObserver;
  if (!IO) return;
  let n = 0;
  const Counted = class IntersectionObserver extends IO { constructor(...a) { super(...a); n++; } };
  window.IntersectionObserver = Counted;
  Object.defineProperty(window, Symbol.for("bastion.capture.observers"), { get: () => n });
})();`

// scrollScript scrolls through the page one viewport at a time to trigger
// lazy loading (loading=lazy images and frames, IntersectionObserver
// reveals), at most maxPx deep and maxSteps steps, then returns to the top.
// It waits two animation frames per step so observers fire. A page with
// nothing lazy, or no taller than the viewport, is not scrolled.
const scrollScript = `async (maxPx, maxSteps) => {
  const observers = window[Symbol.for("bastion.capture.observers")] || 0;
  const lazy = document.querySelector("img[loading=lazy], iframe[loading=lazy]") !== null;
  if (!observers && !lazy) return 0;
  const frame = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const step = Math.max(200, Math.floor(window.innerHeight * 0.9));
  let y = 0, n = 0;
  const height = () => Math.min(maxPx, document.documentElement.scrollHeight);
  while (y + window.innerHeight < height() && n < maxSteps) {
    y += step; n++;
    window.scrollTo(0, y);
    await frame();
  }
  if (n > 0) { window.scrollTo(0, 0); await frame(); }
  return n;
}`

// imagesSettledScript resolves true once every <img> in the document is
// complete (loaded or failed), or false after capMs. It waits on each
// pending image's load and error events, not on a timer.
const imagesSettledScript = `(capMs) => {
  const pending = [...document.images].filter(i => !i.complete);
  if (pending.length === 0) return true;
  const done = Promise.all(pending.map(i => new Promise(r => {
    if (i.complete) { r(); return; }
    i.addEventListener("load", r, { once: true });
    i.addEventListener("error", r, { once: true });
  }))).then(() => true);
  return Promise.race([done, new Promise(r => setTimeout(() => r(false), capMs))]);
}`

// stableScript resolves true once the layout is unchanged for two
// consecutive animation frames (the document's and body's scroll sizes,
// the element count, and no layout shift in between), or false when capMs
// passes first. A static page settles in about three frames.
const stableScript = `(capMs) => new Promise(resolve => {
  let shifts = 0;
  let po = null;
  try {
    po = new PerformanceObserver(l => { shifts += l.getEntries().length; });
    po.observe({ type: "layout-shift" });
  } catch (e) {}
  const sig = () => {
    const d = document.documentElement, b = document.body;
    return [d.scrollWidth, d.scrollHeight, b ? b.scrollWidth : 0, b ? b.scrollHeight : 0,
      document.getElementsByTagName("*").length, shifts].join(",");
  };
  const t0 = performance.now();
  let last = sig(), same = 0;
  const finish = ok => { if (po) po.disconnect(); resolve(ok); };
  const tick = () => {
    const s = sig();
    same = s === last ? same + 1 : 0;
    last = s;
    if (same >= 2) { finish(true); return; }
    if (performance.now() - t0 >= capMs) { finish(false); return; }
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
  setTimeout(() => finish(false), capMs); // a tab that gets no frames
})`

// fontsFailedScript lists the families of @font-face faces that failed to
// load, sorted and deduplicated.
const fontsFailedScript = `(() => {
  const out = new Set();
  for (const f of document.fonts) { if (f.status === "error") out.add(f.family.replace(/^["']|["']$/g, "")); }
  return [...out].sort();
})()`
