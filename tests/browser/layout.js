// A page's layout as it is now, read in one script run (a pushed update may replace a part
// between two reads): tests/browser/test_look.py.
// {boxes, first, blankPx}: the selector of the boxes whose elements must each stay inside
// the nearest of them around it (the header, <main>, the cards), the selectors of the
// headline by name, and the most blank space a card may leave above or below what it
// holds (null: not checked).
({boxes, first, blankPx}) => {
  window.scrollTo(0, 0);
  const box = (r) => [r.left, r.top, r.right, r.bottom].map(Math.round);
  const clips = (e) => getComputedStyle(e).overflowX !== "visible";
  const scrolls = (e) => ["auto", "scroll"].includes(getComputedStyle(e).overflowX);
  const said = (e) => e.id ? `#${e.id}` : e.tagName.toLowerCase() +
    (typeof e.className === "string" && e.className
      ? "." + e.className.trim().split(/\s+/).join(".") : "");
  // A region a keyboard can reach and a screen reader names (aria-label or aria-labelledby).
  const labelled = (e) => e.getAttribute("role") === "region" && e.tabIndex === 0 &&
    Boolean(e.getAttribute("aria-label") || e.getAttribute("aria-labelledby"));
  const found = {width: innerWidth, page: document.documentElement.scrollWidth,
                 outside: [], blank: [], scrolled: [], unlabelled: [], screen: {}};
  for (const card of document.querySelectorAll(boxes)) {
    const c = card.getBoundingClientRect();
    if (!c.width) continue;
    for (const e of card.querySelectorAll("*")) {
      if (e.parentElement.closest(boxes) !== card) continue;  // its own box's, not this one's
      const r = e.getBoundingClientRect();
      if (!r.width && !r.height) continue;
      if (getComputedStyle(e).position === "fixed") continue;  // over the page, not in it
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
        found.outside.push(`${said(card)}: ${said(e)} ${box({left, top, right, bottom})} out of ${box(c)}`);
      } else if (e instanceof HTMLElement && !inScroller && !clips(e) && e.clientWidth
                 && getComputedStyle(e).display !== "inline" && e.scrollWidth > e.clientWidth + 1) {
        found.outside.push(`${said(card)}: ${said(e)} holds ${e.scrollWidth}px in ${e.clientWidth}px`);
      }
      if (e instanceof HTMLElement && scrolls(e) && e.scrollWidth > e.clientWidth + 1) {
        found.scrolled.push(`${said(card)}: ${said(e)}`);
        if (!labelled(e)) found.unlabelled.push(`${said(card)}: ${said(e)}`);
      }
    }
    if (blankPx === null || !card.classList.contains("card")) continue;
    const style = getComputedStyle(card);
    const held = document.createRange();  // what it holds, its text too (a card may be a <p>)
    held.selectNodeContents(card);
    const k = held.getBoundingClientRect();
    if (k.width || k.height) {
      const above = k.top - c.top - parseFloat(style.paddingTop);
      const below = c.bottom - k.bottom - parseFloat(style.paddingBottom);
      if (above > blankPx || below > blankPx) {
        found.blank.push(`${said(card)}: ${Math.round(above)}px blank above, ${Math.round(below)}px below`);
      }
    }
  }
  for (const [name, selector] of Object.entries(first)) {
    const e = document.querySelector(selector);
    found.screen[name] = e ? box(e.getBoundingClientRect()) : null;
  }
  return found;
}
