// Shows each new answer from its beginning: when a visitor message appears in a chat log, the
// log scrolls so that message sits at its top, and then stays put while the answer grows below
// (the Chatbot's own autoscroll, which follows the end of the text, is off). Also patches a few
// accessibility gaps of Gradio's own markup (see each part).
(() => {
  // Per chat log: how many visitor messages it had, and whether the visitor has scrolled since.
  const seen = new WeakMap();
  const place = () => {
    for (const log of document.querySelectorAll('.sizing-chat [role="log"]')) {
      let state = seen.get(log);
      if (!state) {
        state = { questions: 0, free: true };
        // Once the visitor scrolls, the log is theirs until the next question.
        for (const kind of ['wheel', 'touchmove', 'keydown']) {
          log.addEventListener(kind, () => { state.free = true; }, { passive: true });
        }
        seen.set(log, state);
      }
      const questions = log.querySelectorAll('[data-testid="user"]');
      if (questions.length > state.questions) {
        state.free = false;
        // On a phone the log is as tall as the screen (CSS): bring its top to the screen's top so the
        // whole log and the question box under it are in view. Only this page scrolls, never an
        // embedding page around the widget.
        if (window.parent === window && window.matchMedia('(max-width: 480px)').matches) {
          const chat = log.closest('.sizing-chat') || log;
          window.scrollBy(0, chat.getBoundingClientRect().top);
        }
      }
      state.questions = questions.length;
      const question = questions[questions.length - 1];
      if (state.free || !question) continue;
      // The question goes to the top; if the steps under it would push the answer's first line
      // out of view, that line goes near the top instead. Only ever downwards, so the view
      // stays put while the answer grows.
      const top = log.getBoundingClientRect().top;
      let target = question.getBoundingClientRect().top - top - 8;
      const answers = [...log.querySelectorAll('[data-testid="bot"] .message-content')]
        .filter((content) => !content.closest('.thought-group'))  // the steps are not the answer
        .filter((content) => question.compareDocumentPosition(content) & Node.DOCUMENT_POSITION_FOLLOWING);
      const answer = answers[0];
      if (answer) {
        const answerTop = answer.getBoundingClientRect().top - top;
        if (answerTop - target > log.clientHeight - 120) target = answerTop - 48;
      }
      if (target > 1) log.scrollTop += target;
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
    for (const table of document.querySelectorAll('.sizing-chat .message-content table:not([tabindex]), :is(#sales-draft-preview, #calc-verdict, #calc-details) table:not([tabindex])')) {
      table.setAttribute('tabindex', '0');
    }
    // Cells of three words or more may wrap between words (CSS .sizing-wrap); figures stay whole.
    for (const cell of document.querySelectorAll('.sizing-chat .message-content td')) {
      cell.classList.toggle('sizing-wrap', cell.textContent.trim().split(/\s+/).length >= 3);
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
