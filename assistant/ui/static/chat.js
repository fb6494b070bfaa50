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
  // A step's title is itself the toggle (role=button, keyboard-operable); the arrow icon inside it
  // is a second, unlabelled button that screen readers and the Tab key would stop on twice.
  const quietArrows = () => {
    for (const arrow of document.querySelectorAll('.thought-group .title .arrow button:not([inert])')) {
      arrow.setAttribute('inert', '');
      arrow.setAttribute('aria-hidden', 'true');
      arrow.setAttribute('tabindex', '-1');
    }
  };
  // A wide table scrolls sideways inside its answer; the keyboard must be able to scroll it too.
  const focusableTables = () => {
    for (const table of document.querySelectorAll('.sizing-chat .message-content table:not([tabindex])')) {
      table.setAttribute('tabindex', '0');
    }
  };
  // The example questions are buttons in an element Gradio marks role=list (which may hold only
  // list items); a group is what they are.
  const exampleGroups = () => {
    for (const examples of document.querySelectorAll('.sizing-chat .examples[role="list"]')) {
      examples.setAttribute('role', 'group');
    }
  };
  // The box that edits a sent question has no label of its own.
  const texts = (window.SIZING_TEXTS || {})[(navigator.language || 'en').toLowerCase().startsWith('es') ? 'es' : 'en'] || {};
  const labelEditBoxes = () => {
    for (const box of document.querySelectorAll('.sizing-chat .edit-textarea:not([aria-label])')) {
      box.setAttribute('aria-label', texts.script_edit_label || 'Edit');
    }
  };
  new MutationObserver(() => { place(); quietArrows(); focusableTables(); exampleGroups(); labelEditBoxes(); })
    .observe(document.documentElement, { childList: true, subtree: true });
  // Inside the widget's launcher panel, Escape asks the embedding page to close the panel.
  if (window.parent !== window) {
    document.addEventListener('keydown', (event) => {
      if (event.key === 'Escape') window.parent.postMessage({ type: 'sizing-widget-close' }, '*');
    });
  }
})();
