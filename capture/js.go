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

// scrollScript scrolls through the page one viewport at a time to trigger
// lazy loading (loading=lazy images, IntersectionObserver reveals), at most
// maxPx deep and maxSteps steps, then returns to the top. It waits two
// animation frames per step so observers fire.
const scrollScript = `async (maxPx, maxSteps) => {
  const frame = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const step = Math.max(200, Math.floor(window.innerHeight * 0.9));
  let y = 0, n = 0;
  const height = () => Math.min(maxPx, document.documentElement.scrollHeight);
  while (y + window.innerHeight < height() && n < maxSteps) {
    y += step; n++;
    window.scrollTo(0, y);
    await frame();
  }
  window.scrollTo(0, 0);
  await frame();
  return n;
}`

// imagesSettledScript waits until every <img> in the document is complete
// (loaded or failed), or capMs passes.
const imagesSettledScript = `(capMs) => new Promise(resolve => {
  const t0 = performance.now();
  const tick = () => {
    const pending = [...document.images].some(i => !i.complete);
    if (!pending || performance.now() - t0 > capMs) { resolve(!pending); return; }
    setTimeout(tick, 50);
  };
  tick();
})`

// stableScript resolves true once the document's size and layout-shift count
// have not changed for quietMs, or false when capMs passes first.
const stableScript = `(quietMs, capMs) => new Promise(resolve => {
  let shifts = 0;
  let po = null;
  try {
    po = new PerformanceObserver(l => { shifts += l.getEntries().length; });
    po.observe({ type: "layout-shift" });
  } catch (e) {}
  const sig = () => {
    const d = document.documentElement, b = document.body;
    return [d.scrollWidth, d.scrollHeight, b ? b.scrollWidth : 0, b ? b.scrollHeight : 0, shifts].join(",");
  };
  const t0 = performance.now();
  let last = sig(), since = t0;
  const tick = () => {
    const now = performance.now(), s = sig();
    if (s !== last) { last = s; since = now; }
    if (now - since >= quietMs || now - t0 >= capMs) {
      if (po) po.disconnect();
      resolve(now - since >= quietMs);
      return;
    }
    setTimeout(tick, 50);
  };
  setTimeout(tick, 50);
})`

// fontsFailedScript lists the families of @font-face faces that failed to
// load, sorted and deduplicated.
const fontsFailedScript = `(() => {
  const out = new Set();
  for (const f of document.fonts) { if (f.status === "error") out.add(f.family.replace(/^["']|["']$/g, "")); }
  return [...out].sort();
})()`
