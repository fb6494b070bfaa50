// The Sizing Assistant widget launcher: <script src="https://HOST/widget.js" defer></script>.
// Adds a round button at the bottom right of the page that opens the chat (HOST/widget/) in a
// panel, and closes it again; Escape closes it too. Nothing else on the page is touched.
(() => {
  const script = document.currentScript;
  if (!script || document.getElementById("sizing-widget-button")) return;
  const origin = new URL(script.src).origin;
  const title = "__TITLE__";
  const button = document.createElement("button");
  button.id = "sizing-widget-button";
  button.type = "button";
  button.setAttribute("aria-expanded", "false");
  button.setAttribute("aria-controls", "sizing-widget-panel");
  button.setAttribute("aria-label", title);
  button.textContent = "?";
  button.style.cssText = "position:fixed;right:20px;bottom:20px;width:56px;height:56px;border-radius:50%;" +
    "border:0;background:__ACCENT__;color:__ON_ACCENT__;font:600 24px system-ui,sans-serif;cursor:pointer;" +
    "box-shadow:0 4px 14px rgba(0,0,0,.25);z-index:2147483646";
  const panel = document.createElement("iframe");
  panel.id = "sizing-widget-panel";
  panel.title = title;
  panel.src = origin + "/widget/";
  panel.hidden = true;
  panel.style.cssText = "position:fixed;right:20px;bottom:88px;width:min(400px,calc(100vw - 40px));" +
    "height:min(640px,calc(100vh - 110px));border:0;border-radius:12px;background:#fff;" +
    "box-shadow:0 8px 30px rgba(0,0,0,.3);z-index:2147483647";
  const toggle = (open) => {
    panel.hidden = !open;
    button.setAttribute("aria-expanded", String(open));
    button.textContent = open ? "×" : "?";
    if (open) panel.focus();
  };
  button.addEventListener("click", () => toggle(panel.hidden));
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && !panel.hidden) { toggle(false); button.focus(); }
  });
  // Escape pressed inside the chat arrives as a message from the widget's own origin.
  window.addEventListener("message", (event) => {
    if (event.origin === origin && event.data && event.data.type === "sizing-widget-close" && !panel.hidden) {
      toggle(false);
      button.focus();
    }
  });
  document.body.append(panel, button);
})();
