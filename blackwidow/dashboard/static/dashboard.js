// The dashboard's little script: refresh the live part of a page, and take a sign-in
// link's token from the URL fragment into the form (and out of the address bar at once).
"use strict";

(function signInLink() {
  const field = document.getElementById("token");
  const hash = window.location.hash;
  if (!field || !hash.startsWith("#token=")) return;
  field.value = decodeURIComponent(hash.slice("#token=".length));
  history.replaceState(null, "", window.location.pathname + window.location.search);
  const button = document.getElementById("signin-button");
  if (button) button.focus();
})();

(function liveRefresh() {
  const live = document.getElementById("live");
  const every = live && Number(live.dataset.refresh);
  if (!every) return;
  let busy = false;
  const editing = () => {
    const active = document.activeElement;
    return active && active.form && (active.tagName === "INPUT" || active.tagName === "SELECT");
  };
  setInterval(async () => {
    if (busy || document.hidden || editing()) return;
    busy = true;
    try {
      const answer = await fetch(window.location.href, { credentials: "same-origin" });
      if (!answer.ok || answer.redirected) return;
      const page = new DOMParser().parseFromString(await answer.text(), "text/html");
      const fresh = page.getElementById("live");
      if (fresh) live.innerHTML = fresh.innerHTML;
    } catch (error) {
      // the hub may be restarting: try again next time
    } finally {
      busy = false;
    }
  }, every * 1000);
})();
