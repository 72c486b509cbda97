// A session page's layout as it is now, read in one script run (a pushed update may
// replace a part between two reads): tests/browser/test_look.py.
// [first, blankPx]: the selectors of the headline by name, and the most blank space a
// card may leave above or below what it holds.
([first, blankPx]) => {
  window.scrollTo(0, 0);
  const box = (r) => [r.left, r.top, r.right, r.bottom].map(Math.round);
  const clips = (e) => getComputedStyle(e).overflowX !== "visible";
  const scrolls = (e) => ["auto", "scroll"].includes(getComputedStyle(e).overflowX);
  const said = (e) => e.id ? `#${e.id}` : e.tagName.toLowerCase() +
    (typeof e.className === "string" && e.className
      ? "." + e.className.trim().split(/\s+/).join(".") : "");
  const found = {width: innerWidth, page: document.documentElement.scrollWidth,
                 outside: [], blank: [], scrolled: [], unlabelled: [], screen: {}};
  for (const card of document.querySelectorAll(".session-page .card")) {
    const c = card.getBoundingClientRect();
    if (!c.width) continue;
    for (const e of card.querySelectorAll("*")) {
      const r = e.getBoundingClientRect();
      if (!r.width && !r.height) continue;
      // what is seen of it: cut by a box between it and its card that scrolls or clips
      let [left, top, right, bottom] = [r.left, r.top, r.right, r.bottom];
      let inScroller = false;
      for (let a = e.parentElement; a && a !== card; a = a.parentElement) {
        if (!clips(a)) continue;
        const k = a.getBoundingClientRect();
        [left, top, right, bottom] = [Math.max(left, k.left), Math.max(top, k.top),
                                      Math.min(right, k.right), Math.min(bottom, k.bottom)];
        inScroller = true;
      }
      if (right <= left || bottom <= top) continue;
      if (left < c.left - 1 || right > c.right + 1 || top < c.top - 1 || bottom > c.bottom + 1) {
        found.outside.push(`${card.id}: ${said(e)} ${box({left, top, right, bottom})} out of ${box(c)}`);
      } else if (e instanceof HTMLElement && !inScroller && !clips(e) && e.clientWidth
                 && getComputedStyle(e).display !== "inline" && e.scrollWidth > e.clientWidth + 1) {
        found.outside.push(`${card.id}: ${said(e)} holds ${e.scrollWidth}px in ${e.clientWidth}px`);
      }
      if (e instanceof HTMLElement && scrolls(e) && e.scrollWidth > e.clientWidth + 1) {
        found.scrolled.push(`${card.id}: ${said(e)}`);
        if (!(e.getAttribute("role") === "region" && e.getAttribute("aria-label") && e.tabIndex === 0)) {
          found.unlabelled.push(`${card.id}: ${said(e)}`);
        }
      }
    }
    const style = getComputedStyle(card);
    const kids = [...card.children].map((k) => k.getBoundingClientRect()).filter((k) => k.width || k.height);
    if (kids.length) {
      const above = Math.min(...kids.map((k) => k.top)) - c.top - parseFloat(style.paddingTop);
      const below = c.bottom - Math.max(...kids.map((k) => k.bottom)) - parseFloat(style.paddingBottom);
      if (above > blankPx || below > blankPx) {
        found.blank.push(`${card.id}: ${Math.round(above)}px blank above, ${Math.round(below)}px below`);
      }
    }
  }
  for (const [name, selector] of Object.entries(first)) {
    const e = document.querySelector(selector);
    found.screen[name] = e ? box(e.getBoundingClientRect()) : null;
  }
  return found;
}
