/* dshweb's one page script: the theme switch and the socket's status. Plain ES2020, no
 * build step; loaded deferred after htmx and its ws extension. Every page works without
 * it: it only adds to server-rendered HTML. What to show (the sessions list's filter,
 * order, tree, counts and pages) is the server's alone; this script never re-does it.
 *
 * The socket contract (dshweb/sessions/consumers.py): each message is HTML whose
 * top-level elements all carry an id, and the ws extension swaps each one out of band by
 * that id. No message is over 256 KB, whatever the home's size.
 *   /ws/sessions/?<query>  the list page that query asks for (the list view's own
 *                       parameters: q, home, state, band, sort, page, per_page). On connect,
 *                       and whenever the page's rows or their order change: the whole
 *                       page (#session-counts, ol#session-rows, #sessions-empty,
 *                       #sessions-none-match, #session-pager). Otherwise only the rows
 *                       that changed on it (li.session-row#row-…), and #session-counts
 *                       when the counts moved. A page too big for one message comes as
 *                       the page without rows, then its rows in
 *                       `<ol id="session-rows" hx-swap-oob="beforeend">` messages.
 *   /ws/homes/<home>/sessions/<id>/  the session page's parts
 *                       (dashboard/_session_live.html), or
 *                       `<div id="live-status" data-state="gone">` once its log is gone.
 *   either socket, when one of the user's alert rules fires: `<div id="alert-toasts"
 *                       hx-swap-oob="afterbegin">` with the alert's notice.
 * A socket that fails is opened again after a growing, jittered delay; the delay starts
 * over only once a socket has delivered a message (a socket that opens and then fails at
 * once is still failing). A socket closed with 4401 (its sign-in ended: the server closes
 * every socket of a sign-in within seconds of its end) is opened once more; closed so
 * again before any message, it stays closed and the status says the browser is signed out.
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
  const STORE_UNAVAILABLE = 4503; // but this one passes (the database is down): try again later
  const SIGNED_OUT = 4401; // and this one is tried once more: the browser may be signed in again
  const FIRST_DELAY_MS = 500;
  const MAX_DELAY_MS = 15000;
  let opened = false;
  // Sockets that closed or failed since one last delivered a message. The extension's own
  // count starts over whenever a socket opens, so a socket that opens and fails at once
  // would be retried in a tight loop: both reconnect paths use this count instead.
  let failures = 0;

  function reconnectDelay() {
    // Full jitter, capped: a restarted dshweb is back within seconds, and a socket that
    // keeps failing is tried about every few seconds, never in a loop.
    const delay = Math.random() * Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** failures);
    failures = Math.min(failures + 1, 30);
    return delay;
  }

  function liveStatus() {
    return document.getElementById("live-status");
  }

  // `word` names the status's text, which the page gives in its language as a data-*
  // attribute of #live-status (dashboard/_live_status.html): data-connected="…".
  function setStatus(state, word, { force = false } = {}) {
    const status = liveStatus();
    if (!status || (status.dataset.state === "gone" && !force)) return;
    status.hidden = false;
    status.dataset.state = state;
    status.textContent = status.dataset[word] || word;
  }

  function onConnecting() {
    setStatus("connecting", opened ? "reconnecting" : "connecting");
  }

  function onOpen() {
    opened = true;
    setStatus("open", "connected");
  }

  function onClose(event) {
    const { elt, socketWrapper } = event.detail;
    const code = event.detail.event.code;
    if (!document.body.contains(elt)) return; // the page moved on (or htmx replaced the list)
    if (EXTENSION_RECONNECTS.includes(code)) {
      setStatus("closed", "reconnecting");
      return;
    }
    if (code === SIGNED_OUT) {
      // The sign-in the socket opened with ended (signed out, made inactive, a new password,
      // a renewed session): one more try, which the browser's sign-in now answers; a socket
      // closed so before it delivered anything stays closed, saying why.
      if (failures > 0) {
        setStatus("closed", "signedOut", { force: true });
        return;
      }
      setStatus("closed", "reconnecting");
      window.setTimeout(() => {
        if (document.body.contains(elt)) socketWrapper.reconnect();
      }, reconnectDelay());
      return;
    }
    if (code === STORE_UNAVAILABLE) {
      setStatus("closed", "unavailable");
      window.setTimeout(() => {
        if (document.body.contains(elt)) socketWrapper.reconnect();
      }, reconnectDelay());
      return;
    }
    if (code >= APPLICATION_CODES || liveStatus()?.dataset.state === "gone") {
      setStatus("closed", "disconnected");
      return;
    }
    setStatus("closed", "reconnecting");
    window.setTimeout(() => {
      if (document.body.contains(elt)) socketWrapper.reconnect();
    }, reconnectDelay());
  }

  function onMessage(event) {
    failures = 0;
    const status = liveStatus();
    // A session whose log came back: its parts arrive again without the "gone" status.
    if (status?.dataset.state === "gone" && !event.detail.message.includes('id="live-status"')) {
      setStatus("open", "connected", { force: true });
    }
  }

  // --- Alerts: each notice a socket puts in #alert-toasts (consumers.py, alert.fired) is
  // also a system notification once the user allowed them; its tag is the alert's, so two
  // tabs of the same user show it once.

  const MAX_NOTICES = 5; // the newest; the alerts page lists them all

  function notify(toast) {
    if (!("Notification" in window) || Notification.permission !== "granted") return;
    const shown = new Notification(toast.dataset.headline, {
      body: toast.dataset.summary,
      tag: `dshweb-alert-${toast.dataset.alertId}`,
    });
    shown.addEventListener("click", () => {
      window.focus();
      window.location.assign(toast.dataset.url);
    });
  }

  function setUpAlerts() {
    const box = document.getElementById("alert-toasts");
    if (!box) return;
    const ask = document.getElementById("notify-permission");
    if (ask && "Notification" in window && Notification.permission === "default") {
      ask.hidden = false;
      ask.addEventListener("click", async () => {
        await Notification.requestPermission();
        ask.hidden = Notification.permission !== "default";
      });
    }
    box.addEventListener("click", (event) => {
      event.target.closest("[data-dismiss-alert]")?.closest(".alert-toast")?.remove();
    });
    new MutationObserver((records) => {
      for (const record of records) {
        for (const node of record.addedNodes) {
          if (node.nodeType === Node.ELEMENT_NODE && node.matches(".alert-toast")) notify(node);
        }
      }
      while (box.children.length > MAX_NOTICES) box.lastElementChild.remove();
    }).observe(box, { childList: true });
  }

  // --- Wiring.

  setUpTheme();
  setUpAlerts();
  const status = liveStatus();
  if (status && window.htmx) status.hidden = false;

  if (window.htmx) {
    window.htmx.config.wsReconnectDelay = reconnectDelay;
  }
  document.addEventListener("htmx:wsConnecting", onConnecting);
  document.addEventListener("htmx:wsOpen", onOpen);
  document.addEventListener("htmx:wsClose", onClose);
  document.addEventListener("htmx:wsError", () => setStatus("closed", "reconnecting"));
  document.addEventListener("htmx:wsAfterMessage", onMessage);
})();
