/* dshweb's one page script: the theme switch, the socket's status, and the sessions
 * list's order and filter. Plain ES2020, no build step; loaded deferred after htmx and
 * its ws extension. Every page works without it: it only adds to server-rendered HTML.
 *
 * The socket contract (dshweb/live): each message is HTML whose top-level elements all
 * carry an id, and the ws extension swaps each one out of band by that id.
 *   /ws/sessions/       rows (`li.session-row#row-…`), one per changed session; on
 *                       connect, every row in one message. A removed session comes as
 *                       `<li id="row-…" hx-swap-oob="delete"></li>`. A new session's row
 *                       has no target yet: htmx reports `htmx:oobErrorNoTarget`, and this
 *                       script puts the row into `#session-rows`.
 *   /ws/sessions/<id>/  the session page's parts (dashboard/_session_live.html), or
 *                       `<div id="live-status" data-state="gone">` once its log is gone.
 * After every message the rows are put in the order dshweb.core.listing.session_tree
 * gives, and the filter (dshweb.core.filters) is applied again.
 */
(() => {
  "use strict";

  // --- Theme: "auto" follows the system; the head's inline script applies a stored choice before paint.

  const THEME_KEY = "dshweb-theme";
  const THEMES = ["auto", "light", "dark"];

  function storedTheme() {
    try {
      const value = localStorage.getItem(THEME_KEY);
      return THEMES.includes(value) ? value : "auto";
    } catch {
      return "auto";
    }
  }

  function applyTheme(choice) {
    const root = document.documentElement;
    if (choice === "auto") {
      delete root.dataset.theme;
    } else {
      root.dataset.theme = choice;
    }
    for (const button of document.querySelectorAll("[data-theme-choice]")) {
      button.setAttribute("aria-pressed", String(button.dataset.themeChoice === choice));
    }
  }

  function setUpTheme() {
    const group = document.getElementById("theme-switch");
    if (!group) return;
    applyTheme(storedTheme());
    group.hidden = false;
    group.addEventListener("click", (event) => {
      const button = event.target.closest("[data-theme-choice]");
      if (!button) return;
      const choice = button.dataset.themeChoice;
      try {
        if (choice === "auto") localStorage.removeItem(THEME_KEY);
        else localStorage.setItem(THEME_KEY, choice);
      } catch {
        // Storage refused (private mode): the choice lasts for this page only.
      }
      applyTheme(choice);
    });
    window.addEventListener("storage", (event) => {
      if (event.key === THEME_KEY) applyTheme(storedTheme());
    });
  }

  // --- The socket's status in #live-status: connecting | open | closed | gone (set by the server).

  // The ws extension reconnects by itself after these close codes (abnormal closure, server
  // error, restart, try again later); after a plain close or "going away" (daphne closes
  // idle sockets with 1000 after its websocket timeout) this script reconnects instead.
  const EXTENSION_RECONNECTS = [1006, 1011, 1012, 1013];
  const APPLICATION_CODES = 4000; // a close code the server chose on purpose: stay closed
  let opened = false;
  let ownRetries = 0;

  function reconnectDelay(retries) {
    // Full jitter like the extension's default, capped at 10 s rather than 64 s: a
    // restarted dshweb is back within seconds.
    return Math.random() * Math.min(10000, 500 * 2 ** retries);
  }

  function liveStatus() {
    return document.getElementById("live-status");
  }

  function setStatus(state, text, { force = false } = {}) {
    const status = liveStatus();
    if (!status || (status.dataset.state === "gone" && !force)) return;
    status.hidden = false;
    status.dataset.state = state;
    status.textContent = text;
  }

  function onConnecting() {
    setStatus("connecting", opened ? "reconnecting…" : "connecting…");
  }

  function onOpen() {
    opened = true;
    setStatus("open", "connected");
    markRowsStale();
  }

  function onClose(event) {
    const { elt, socketWrapper } = event.detail;
    const code = event.detail.event.code;
    if (!document.body.contains(elt)) return; // the page moved on
    if (EXTENSION_RECONNECTS.includes(code)) {
      setStatus("closed", "reconnecting…");
      return;
    }
    if (code >= APPLICATION_CODES || liveStatus()?.dataset.state === "gone") {
      setStatus("closed", "disconnected");
      return;
    }
    setStatus("closed", "reconnecting…");
    window.setTimeout(() => {
      if (document.body.contains(elt)) socketWrapper.reconnect();
    }, reconnectDelay(ownRetries++));
  }

  function onMessage(event) {
    ownRetries = 0;
    const status = liveStatus();
    // A session whose log came back: its parts arrive again without the "gone" status.
    if (status?.dataset.state === "gone" && !event.detail.message.includes('id="live-status"')) {
      setStatus("open", "connected", { force: true });
    }
    sweepStaleRows();
    refreshList();
  }

  // --- The sessions list: order, reconnect sweep, filter, count.

  function rowsList() {
    return document.getElementById("session-rows");
  }

  function rowsOf(list) {
    return Array.from(list.children).filter((child) => child.matches("li[data-session-id]"));
  }

  // A row that arrives before its session has a row: put it in the list (ordered later).
  function onNoTarget(event) {
    const list = rowsList();
    const element = event.detail.content;
    if (!list || !element || element.nodeType !== Node.ELEMENT_NODE) return;
    if (!element.matches("li.session-row[data-session-id]")) return; // e.g. a delete of an unknown row
    list.append(element);
    window.htmx.process(element);
  }

  // On (re)connect the server sends every row in its first message; rows it leaves out
  // were removed while the socket was down.
  let sweepPending = false;

  function markRowsStale() {
    const list = rowsList();
    if (!list) return;
    for (const row of rowsOf(list)) row.dataset.stale = "";
    sweepPending = true;
  }

  function sweepStaleRows() {
    if (!sweepPending) return;
    sweepPending = false;
    const list = rowsList();
    if (!list) return;
    for (const row of rowsOf(list)) if ("stale" in row.dataset) row.remove();
  }

  // Python orders str by code point; JavaScript's < compares UTF-16 units.
  function byCodePoint(a, b) {
    if (a === b) return 0;
    const x = Array.from(a, (ch) => ch.codePointAt(0));
    const y = Array.from(b, (ch) => ch.codePointAt(0));
    for (let i = 0; i < Math.min(x.length, y.length); i++) {
      if (x[i] !== y[i]) return x[i] - y[i];
    }
    return x.length - y.length;
  }

  /* The rows in session_tree's order: newest activity first, a parent placed by the
   * newest activity in its subtree, sub-agents right under their parent one level
   * deeper, a sub-agent whose parent is absent at the top (orphan), a parent loop cut
   * where it repeats. Returns [row, depth, orphan] triples. */
  function sessionTree(rows) {
    const byId = new Map(rows.map((row) => [row.dataset.sessionId, row]));
    const children = new Map();
    const roots = [];
    for (const row of rows) {
      const parent = row.dataset.parent;
      if (parent && byId.has(parent) && parent !== row.dataset.sessionId) {
        if (!children.has(parent)) children.set(parent, []);
        children.get(parent).push(row);
      } else {
        roots.push(row);
      }
    }

    const newest = new Map();
    function subtreeNewest(row, seen) {
      const id = row.dataset.sessionId;
      if (newest.has(id)) return newest.get(id);
      let value = Number(row.dataset.last) || 0;
      for (const child of children.get(id) ?? []) {
        const childId = child.dataset.sessionId;
        if (!seen.has(childId)) {
          value = Math.max(value, subtreeNewest(child, new Set([...seen, childId])));
        }
      }
      newest.set(id, value);
      return value;
    }

    function order(group) {
      const key = (row) => subtreeNewest(row, new Set([row.dataset.sessionId]));
      return group
        .map((row) => [key(row), row])
        .sort(([ka, a], [kb, b]) => kb - ka || byCodePoint(a.dataset.sessionId, b.dataset.sessionId))
        .map(([, row]) => row);
    }

    const placed = new Set();
    const entries = [];
    function place(row, depth) {
      placed.add(row.dataset.sessionId);
      entries.push([row, depth, depth === 0 && Boolean(row.dataset.parent)]);
      for (const child of order(children.get(row.dataset.sessionId) ?? [])) {
        if (!placed.has(child.dataset.sessionId)) place(child, depth + 1);
      }
    }
    for (const root of order(roots)) place(root, 0);
    // Sessions only reachable through a parent loop: show them rather than lose them.
    for (const row of order(rows.filter((r) => !placed.has(r.dataset.sessionId)))) {
      if (!placed.has(row.dataset.sessionId)) place(row, 0);
    }
    return entries;
  }

  function arrange(list) {
    const rows = rowsOf(list);
    const entries = sessionTree(rows);
    for (const [row, depth, orphan] of entries) {
      row.dataset.depth = String(depth);
      row.style.setProperty("--depth", String(depth));
      row.classList.toggle("is-subagent", depth > 0);
      row.classList.toggle("is-orphan", orphan);
    }
    if (entries.some(([row], i) => row !== rows[i])) {
      list.append(...entries.map(([row]) => row)); // moves, in order
    }
  }

  // --- The filter: the same rule as dshweb.core.filters, applied to data-search / data-live.

  function filterForm() {
    return document.getElementById("session-filter");
  }

  function currentFilter(form) {
    const query = form.elements.namedItem("q")?.value ?? "";
    const state = form.querySelector('input[name="state"]:checked')?.value ?? "all";
    return { query: query.trim(), state: ["live", "idle"].includes(state) ? state : "all" };
  }

  function matches(row, terms, state) {
    const live = row.dataset.live === "1";
    if ((state === "live" && !live) || (state === "idle" && live)) return false;
    const text = row.dataset.search ?? "";
    return terms.every((term) => text.includes(term));
  }

  function applyFilter(list) {
    const form = filterForm();
    const rows = rowsOf(list);
    let shown = rows.length;
    if (form) {
      const { query, state } = currentFilter(form);
      const terms = query.toLowerCase().split(/\s+/).filter(Boolean);
      shown = 0;
      for (const row of rows) {
        row.hidden = !matches(row, terms, state);
        if (!row.hidden) shown += 1;
      }
    }
    showCount(shown, rows.length);
  }

  function showCount(shown, total) {
    const count = document.getElementById("session-count");
    if (count) {
      count.dataset.shown = String(shown);
      count.dataset.total = String(total);
      count.querySelector(".count-shown").textContent = String(shown);
      count.querySelector(".count-total").textContent = String(total);
      count.querySelector(".count-noun").textContent = total === 1 ? "session" : "sessions";
    }
    const section = document.getElementById("sessions");
    if (section) section.dataset.count = String(total);
    const empty = document.getElementById("sessions-empty");
    if (empty) empty.hidden = total > 0;
    const noneMatch = document.getElementById("sessions-none-match");
    if (noneMatch) noneMatch.hidden = total === 0 || shown > 0;
  }

  function refreshList() {
    const list = rowsList();
    if (!list) return;
    arrange(list);
    applyFilter(list);
  }

  // Keep ?q=…&state=… in the address, so a reload or a shared link keeps the filter.
  function syncAddress(form) {
    const { query, state } = currentFilter(form);
    const url = new URL(window.location.href);
    if (query) url.searchParams.set("q", query);
    else url.searchParams.delete("q");
    if (state !== "all") url.searchParams.set("state", state);
    else url.searchParams.delete("state");
    if (url.href !== window.location.href) window.history.replaceState(window.history.state, "", url);
  }

  function setUpFilter() {
    const form = filterForm();
    if (!form) return;
    const submit = document.getElementById("filter-submit");
    if (submit) submit.hidden = true;
    const update = () => {
      const list = rowsList();
      if (list) applyFilter(list);
      syncAddress(form);
    };
    form.addEventListener("input", update);
    form.addEventListener("change", update);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      update();
    });
    update();
  }

  // --- Wiring.

  setUpTheme();
  setUpFilter();
  refreshList();
  const status = liveStatus();
  if (status && window.htmx) status.hidden = false;

  if (window.htmx) {
    window.htmx.config.wsReconnectDelay = reconnectDelay;
  }
  document.addEventListener("htmx:wsConnecting", onConnecting);
  document.addEventListener("htmx:wsOpen", onOpen);
  document.addEventListener("htmx:wsClose", onClose);
  document.addEventListener("htmx:wsError", () => setStatus("closed", "reconnecting…"));
  document.addEventListener("htmx:wsAfterMessage", onMessage);
  document.addEventListener("htmx:oobErrorNoTarget", onNoTarget);
})();
