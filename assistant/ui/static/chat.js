// Shows each new answer from its beginning: when a visitor message appears in a chat log, the
// log scrolls so that message sits at its top, and then stays put while the answer grows below
// (the Chatbot's own autoscroll, which follows the end of the text, is off).
(() => {
  const counts = new WeakMap();
  const place = () => {
    for (const log of document.querySelectorAll('.sizing-chat [role="log"]')) {
      const questions = log.querySelectorAll('[data-testid="user"]');
      const before = counts.get(log) ?? 0;
      counts.set(log, questions.length);
      if (questions.length > before && questions.length > 0) {
        const last = questions[questions.length - 1];
        const offset = last.getBoundingClientRect().top - log.getBoundingClientRect().top;
        log.scrollTop = Math.max(0, log.scrollTop + offset - 8);
      }
    }
  };
  new MutationObserver(place).observe(document.documentElement, { childList: true, subtree: true });
})();
